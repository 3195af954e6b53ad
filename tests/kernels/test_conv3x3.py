"""The fused residual-block convolution (`conv3x3_norm`) and its norm hand-off (`norm_scale_shift`).

CPU (CI): the weight packing rule, the twins against float64 compositions (prologue, reflection-
padded convolution, InstanceNorm as scale/shift), named argument errors, the registrations
(opcheck), and the engine's fused residual plan against its cuDNN plan through the twins.
GPU (Hopper for the convolution): the CUDA ops against float64 under conftest's low-precision
rule (≤ 2× the error of cuDNN's own same-dtype convolution) on odd sizes, batches, the 512² and
1080p planes, every prologue variant and both dtypes; statistics with a large mean; CUDA graphs.
"""
from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    assert_graph_replays_like_fresh_calls,
    assert_matches_reference,
    capture_in_graph,
    random_net,
    rel_error,
    requires_hopper,
)

from styleforge import kernels
from styleforge.kernels.reference import conv3x3 as ref

kernels.register_ops()   # these tests call torch.ops.styleforge.* directly (kernels/library.py)

C = 128
LOW = (torch.bfloat16, torch.float16)
# name: (Cin, Cout, upsample, stride)
CONFIGS = {"res128": (128, 128, 1, 1), "dec128to64": (128, 64, 2, 1), "dec64to32": (64, 32, 2, 1),
           "enc32to64s2": (32, 64, 1, 2), "enc64to128s2": (64, 128, 1, 2)}


def make_inputs(n, h, w, dtype=torch.bfloat16, device="cpu", seed=0, affine=True, residual=False, config="res128"):
    """A raw conv output x (mean ≠ 0), a weight, the previous norm as (scale, shift), a residual, the next norm."""
    cin, cout = CONFIGS[config][:2]
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(n, cin, h, w, generator=g) * 2 + 0.5).to(device, dtype).contiguous(
        memory_format=torch.channels_last)
    weight = torch.randn(cout, cin, 3, 3, generator=g) / (cin * 9) ** 0.5
    scale = (torch.rand(n, cin, generator=g) + 0.5).to(device) if affine else None
    shift = torch.randn(n, cin, generator=g).to(device) if affine else None
    res = (torch.randn(n, cin, h, w, generator=g).to(device, dtype).contiguous(memory_format=torch.channels_last)
           if residual else None)
    norm_w, norm_b = (torch.rand(cout, generator=g) + 0.5).to(device), torch.randn(cout, generator=g).to(device)
    return x, weight.to(device, dtype), scale, shift, res, norm_w, norm_b


def upsampled(a, up):
    return a if up == 1 else a.repeat_interleave(up, dim=2).repeat_interleave(up, dim=3)


def conv_of(a, weight, up, stride):
    """The op's convolution of an already-formed prologue output a, in a's dtype."""
    return F.conv2d(F.pad(upsampled(a, up), (1, 1, 1, 1), mode="reflect"), weight, stride=stride)


def prologue64(x, scale, shift, res, relu):
    a = x.double()
    if scale is not None:
        a = a * scale.double()[:, :, None, None] + shift.double()[:, :, None, None]
    if res is not None:
        a = a + res.double()
    return a.clamp_min(0) if relu else a


def scale_shift64(out, norm_w, norm_b, eps=1e-5):
    o = out.double()
    var, mean = torch.var_mean(o, dim=(2, 3), unbiased=False)
    s = norm_w.double() / torch.sqrt(var + eps)
    return s, norm_b.double() - mean * s


# ---- CPU ------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", list(CONFIGS))
def test_pack_weight_rule_and_inverse(config):
    cin, cout = CONFIGS[config][:2]
    w = torch.randn(cout, cin, 3, 3)
    p = ref.pack_weight(w)
    assert p.shape == ref.packed_shape(cin, cout) and p.is_contiguous()
    phase = (cin, cout) in ref.PHASE_SPLIT
    if cin == 32:   # packed as 64 input channels, the upper 32 zero
        w = F.pad(w, (0, 0, 0, 0, 0, 32))
        cin = 64
    by_tap = ref.phase_weight(w) if phase else w.reshape(cout, cin, 9)
    assert torch.equal(ref.unpack_weight(p), by_tap if phase else w)
    # Packed position → tap: ring entry v = 4·j + tap holds warpgroup 0's phase j, then warpgroup 1's
    # phase 2 + j (Cout 64 and 32).
    order = [4 * (2 * wg + v // 4) + v % 4 for v in range(8) for wg in range(2)] if phase else list(range(9))
    assert sorted(order) == list(range(len(order)))
    rng = random.Random(0)
    for _ in range(500):   # element (pos, kb, n, 8·slot + e) is tap order[pos] of W[n, 64·kb + 8·(slot ^ n % 8) + e]
        pos, kb, n = rng.randrange(p.shape[0]), rng.randrange(cin // 64), rng.randrange(cout)
        slot, e = rng.randrange(8), rng.randrange(8)
        assert p[pos, kb, n, 8 * slot + e] == by_tap[n, 64 * kb + 8 * (slot ^ (n % 8)) + e, order[pos]]


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1, 1), (1, 2), (3, 5), (7, 4), (2, 9)])
@pytest.mark.parametrize("channels", [(64, 32), (128, 64)], ids=str)
def test_phase_split_is_the_upsampled_reflected_convolution_exactly(size, channels):
    """With integer data every sum is exact in bf16: the twin's four 2×2 convolutions of the
    replicate-padded input (summed taps) equal the ×2 upsample + reflection pad + 3×3 convolution
    bit for bit, borders included."""
    cin, cout = channels
    g = torch.Generator().manual_seed(size[0] * 10 + size[1])
    x = torch.randint(-3, 4, (2, cin, *size), generator=g).to(torch.bfloat16)
    w = torch.randint(-2, 3, (cout, cin, 3, 3), generator=g).to(torch.bfloat16)
    out = ref.conv3x3_norm(x, ref.pack_weight(w), upsample=2, stats=False)[0]
    want = F.conv2d(F.pad(upsampled(x.double(), 2), (1, 1, 1, 1), mode="reflect"), w.double())
    assert torch.equal(out, want.to(torch.bfloat16).contiguous(memory_format=torch.channels_last))


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("variant", ["plain", "affine_relu", "affine_residual"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_reference_matches_float64(dtype, variant, config):
    affine, residual, relu = {"plain": (False, False, False), "affine_relu": (True, False, True),
                              "affine_residual": (True, True, False)}[variant]
    up, stride = CONFIGS[config][2:]
    x, w, s, t, res, nw, nb = make_inputs(2, 9, 13, dtype, affine=affine, residual=residual, config=config)
    out, os_, ot, _ = ref.conv3x3_norm(x, ref.pack_weight(w), s, t, res, relu, up, False, nw, nb, 1e-5, True, stride)
    if up == 1 and stride == 1:
        kept = ref.conv3x3_norm(x, ref.pack_weight(w), s, t, res, relu, up, True, nw, nb, 1e-5)[3]
    else:
        kept = (prologue64(x, s, t, res, relu)).to(dtype)
    a64 = prologue64(x, s, t, res, relu)
    assert rel_error(kept, a64) <= 1e-2
    conv64 = conv_of(kept.double(), w.double(), up, stride)
    assert_matches_reference(out, conv64)
    s64, t64 = scale_shift64(out, nw, nb)
    assert rel_error(os_, s64) <= 1e-5 and rel_error(ot, t64) <= 1e-5
    normed = out.double() * os_.double()[:, :, None, None] + ot.double()[:, :, None, None]
    assert rel_error(normed, F.instance_norm(out.double(), weight=nw.double(), bias=nb.double())) <= 1e-5
    assert out.is_contiguous(memory_format=torch.channels_last) and os_.dtype == torch.float32


def moments_input(n, c, h, w, dtype=torch.bfloat16, device="cpu", seed=1, mean=40.0):
    """An NHWC x with a mean `mean`× its spread (the tiles' merge must not cancel the variance away)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, h, w, generator=g) + mean
    return x.to(device, dtype).contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("c", ref.SCALE_SHIFT_CHANNELS)
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_reference_norm_scale_shift_matches_instance_norm(c, dtype):
    x = (torch.randn(2, c, 7, 11) * 3 + 5).to(dtype)
    w, b = torch.rand(c) + 0.5, torch.randn(c)
    s, t = ref.norm_scale_shift(x, w, b)
    assert s.shape == t.shape == (2, c) and s.dtype == t.dtype == torch.float32
    applied = x.double() * s.double()[:, :, None, None] + t.double()[:, :, None, None]
    assert rel_error(applied, F.instance_norm(x.double(), weight=w.double(), bias=b.double())) <= 1e-5
    s64, t64 = scale_shift64(x, w, b)
    assert rel_error(s, s64) <= 1e-5 and rel_error(t, t64) <= 1e-5


@pytest.mark.parametrize("c", ref.SCALE_SHIFT_CHANNELS)
def test_reference_norm_scale_shift_without_affine(c):
    x = moments_input(2, c, 19, 37, mean=3.0)
    s, t = ref.norm_scale_shift(x, None, None)
    s64, t64 = scale_shift64(x, torch.ones(c), torch.zeros(c))
    assert rel_error(s, s64) <= 1e-5 and rel_error(t, t64) <= 1e-5


@pytest.mark.parametrize("case, match", [
    ("channels_16", "32, 64 or 128 channels"), ("channels_96", "32, 64 or 128 channels"),
    ("channels_3", "32, 64 or 128 channels"), ("weight_size", r"weight must be a floating \(32,\)"),
    ("bias_size", r"bias must be a floating \(64,\)"), ("weight_int", "weight must be a floating"),
    ("3d", "4-D"), ("tiny", ">= 2"), ("fp32", "unsupported"), ("eps", "eps must be > 0"),
])
def test_norm_scale_shift_named_argument_errors(case, match):
    c = 64 if case == "bias_size" else 32
    x = moments_input(1, c, 4, 4)
    w, b, eps = torch.rand(c) + 0.5, torch.randn(c), 1e-5
    if case.startswith("channels_"):
        x = moments_input(1, int(case.split("_")[1]), 4, 4)
    elif case == "weight_size":
        w = torch.rand(64)
    elif case == "bias_size":
        b = torch.randn(32)
    elif case == "weight_int":
        w = torch.ones(c, dtype=torch.int32)
    elif case == "3d":
        x = x[0]
    elif case == "tiny":
        x = x[..., :1]
    elif case == "fp32":
        x = x.float()
    elif case == "eps":
        eps = 0.0
    with pytest.raises(ValueError, match=match):
        ref.norm_scale_shift(x, w, b, eps)
    with pytest.raises(ValueError, match=match):   # the op's CPU impl and its fake check the same rules
        torch.ops.styleforge.norm_scale_shift(x, w, b, eps)


@pytest.mark.parametrize("case, match", [
    ("channels", "128 channels"), ("weight", "packed"), ("half_affine", "both or neither"),
    ("scale_dtype", "float32"), ("residual", "residual must match"), ("tiny", ">= 2"), ("fp32", "unsupported"),
])
def test_named_argument_errors(case, match):
    x, w, s, t, res, nw, nb = make_inputs(1, 4, 4, residual=True)
    p = ref.pack_weight(w)
    args = dict(x=x, weight=p, scale=s, shift=t, residual=res)
    if case == "channels":
        args["x"] = x[:, :64]
    elif case == "weight":
        args["weight"] = w
    elif case == "half_affine":
        args["shift"] = None
    elif case == "scale_dtype":
        args["scale"] = s.double()
    elif case == "residual":
        args["residual"] = res[..., :3]
    elif case == "tiny":
        args["x"], args["residual"] = x[..., :1], None
    elif case == "fp32":
        args["x"] = x.float()
    with pytest.raises(ValueError, match=match):
        ref.conv3x3_norm(args["x"], args["weight"], args["scale"], args["shift"], args["residual"], False, 1, False,
                         nw, nb, 1e-5)


def test_unsupported_config_and_keep_with_upsample_are_refused():
    x, w, s, t, _, nw, nb = make_inputs(1, 4, 4, config="dec128to64")
    with pytest.raises(ValueError, match="unsupported"):
        ref.conv3x3_norm(x, ref.pack_weight(w), s, t, None, False, 1, False, nw, nb, 1e-5)
    with pytest.raises(ValueError, match="keep_input"):
        ref.conv3x3_norm(x, ref.pack_weight(w), s, t, None, False, 2, True, nw, nb, 1e-5)
    with pytest.raises(ValueError, match="unsupported"):   # stride 2 exists for 64 → 128 only
        ref.conv3x3_norm(x, ref.pack_weight(w), s, t, None, False, 1, False, nw, nb, 1e-5, True, 2)
    x, w, s, t, _, nw, nb = make_inputs(1, 4, 4, config="enc64to128s2")
    with pytest.raises(ValueError, match="keep_input"):
        ref.conv3x3_norm(x, ref.pack_weight(w), s, t, None, False, 1, True, nw, nb, 1e-5, True, 2)


@pytest.mark.slow
def test_opcheck_on_cpu():
    x, w, s, t, res, nw, nb = make_inputs(1, 5, 6, residual=True)
    torch.library.opcheck(torch.ops.styleforge.conv3x3_norm.default,
                          (x, ref.pack_weight(w), s, t, res, False, 1, True, nw, nb, 1e-5, True),
                          test_utils=("test_schema", "test_faketensor"))
    torch.library.opcheck(torch.ops.styleforge.norm_scale_shift.default, (x, nw, nb, 1e-5),
                          test_utils=("test_schema", "test_faketensor"))
    for c in (32, 64):
        torch.library.opcheck(torch.ops.styleforge.norm_scale_shift.default,
                              (moments_input(2, c, 5, 6), torch.rand(c) + 0.5, torch.randn(c), 1e-5),
                              test_utils=("test_schema", "test_faketensor"))
        torch.library.opcheck(torch.ops.styleforge.norm_scale_shift.default,
                              (moments_input(1, c, 3, 7), None, None, 1e-5),
                              test_utils=("test_schema", "test_faketensor"))
    x, w, s, t, _, nw, nb = make_inputs(1, 5, 6, config="dec64to32")
    torch.library.opcheck(torch.ops.styleforge.conv3x3_norm.default,
                          (x, ref.pack_weight(w), s, t, None, True, 2, False, nw, nb, 1e-5, True),
                          test_utils=("test_schema", "test_faketensor"))
    x, w, s, t, res, nw, nb = make_inputs(2, 5, 8, config="enc64to128s2", residual=True)
    out = torch.ops.styleforge.conv3x3_norm(x, ref.pack_weight(w), s, t, res, True, 1, False, nw, nb, 1e-5, True, 2)
    assert out[0].shape == (2, 128, 3, 4)   # ⌈5/2⌉ × ⌈8/2⌉
    torch.library.opcheck(torch.ops.styleforge.conv3x3_norm.default,
                          (x, ref.pack_weight(w), s, t, res, True, 1, False, nw, nb, 1e-5, True, 2),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.slow
def test_engine_fused_plan_equals_cudnn_plan_on_cpu():
    from styleforge.engine.runner import FusedRunner
    model = random_net(1)
    x = torch.rand(1, 3, 40, 56) * 255
    runner = FusedRunner(model, torch.device("cpu"), torch.bfloat16)
    fused, plain = runner.forward(x, "conv3x3"), runner.forward(x, "cudnn")
    with torch.no_grad():
        want = model(x.double().float())
    assert rel_error(fused, want) <= 2 * max(rel_error(plain, want), 1e-3)
    assert torch.equal(runner.forward(x, "conv3x3_links"), fused)   # the same twins, one call or ten
    assert runner.default_plan() == "cudnn"   # no Hopper GPU on the CPU


# ---- the residual chain ------------------------------------------------------------------------

def chain_inputs(n, h, w, dtype=torch.bfloat16, device="cpu", links=4, seed=3, offset=0.0):
    """conv3's raw output and IN3, `links` residual convolutions (unpacked and packed) with their norms.
    offset: added to the last weight, so the last output's mean is large against its spread."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(n, C, h, w, generator=g) * 2 + 0.5).to(device, dtype).contiguous(
        memory_format=torch.channels_last)
    scale, shift = (torch.rand(n, C, generator=g) + 0.5).to(device), torch.randn(n, C, generator=g).to(device)
    raw = [torch.randn(C, C, 3, 3, generator=g) / (C * 9) ** 0.5 for _ in range(links)]
    raw[-1] = raw[-1] + offset
    weights = [w.to(device, dtype) for w in raw]
    nws = [(torch.rand(C, generator=g) + 0.5).to(device) for _ in range(links)]
    nbs = [(torch.randn(C, generator=g) * 0.5).to(device) for _ in range(links)]
    return x, scale, shift, weights, nws, nbs


def chain64(x, scale, shift, weights, nws, nbs, eps=1e-5):
    """The residual blocks in float64, nothing rounded: (h, scale, shift, block_in)."""
    h, s, t, block_in, relu = x.double(), scale.double(), shift.double(), None, True
    for b in range(0, len(weights), 2):
        a = prologue64(h, s, t, block_in, relu)
        h = conv_of(a, weights[b].double(), 1, 1)
        s1, t1 = scale_shift64(h, nws[b], nbs[b], eps)
        h = conv_of(prologue64(h, s1, t1, None, True), weights[b + 1].double(), 1, 1)
        s, t = scale_shift64(h, nws[b + 1], nbs[b + 1], eps)
        block_in, relu = a, False
    return h, s, t, block_in


@pytest.mark.slow
def test_reference_chain_matches_float64_and_the_op_on_cpu():
    x, s, t, ws, nws, nbs = chain_inputs(2, 7, 10)
    packed = [ref.pack_weight(w) for w in ws]
    got = kernels.conv3x3_residual_chain(x, s, t, packed, nws, nbs)
    op = torch.ops.styleforge.conv3x3_residual_chain(x, s, t, packed, nws, nbs, 1e-5, kernels.chain_state(2, 4, "cpu"))
    want = chain64(x, s, t, ws, nws, nbs)
    for a, b in zip(got, op):
        assert torch.equal(a, b)
    assert got[0].shape == (2, C, 7, 10) and got[1].shape == (2, C) and got[3].shape == (2, C, 7, 10)
    assert rel_error(got[0], want[0]) <= 2e-2 and rel_error(got[3], want[3]) <= 2e-2
    assert rel_error(got[1], want[1]) <= 2e-2 and rel_error(got[2], want[2]) <= 2e-2
    torch.library.opcheck(torch.ops.styleforge.conv3x3_residual_chain.default,
                          (x, s, t, packed, nws, nbs, 1e-5, kernels.chain_state(2, 4, "cpu")),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("case, match", [
    ("odd", "even number"), ("norms", "one \\(128,\\) tensor per convolution"), ("weight", "weight"),
    ("scale", "scale must be a float32")])
def test_chain_named_argument_errors(case, match):
    x, s, t, ws, nws, nbs = chain_inputs(1, 4, 4)
    packed = [ref.pack_weight(w) for w in ws]
    if case == "odd":
        packed = packed[:3]
    elif case == "norms":
        nws = nws[:2]
    elif case == "weight":
        packed[1] = ws[1]   # unpacked
    else:
        s = s[:, :64]
    with pytest.raises(ValueError, match=match):
        kernels.conv3x3_residual_chain(x, s, t, packed, nws, nbs)


def test_chain_state_size():
    assert ref.chain_state_bytes(1, 10) == 256 + 10 * 8 * 2 * 128 * 8
    state = kernels.chain_state(3, 4, "cpu")
    assert state.dtype == torch.uint8 and state.numel() == ref.chain_state_bytes(3, 4) and not state.any()


# ---- GPU ------------------------------------------------------------------------------------

hopper = requires_hopper   # conftest: skips without an sm_90a GPU; `loaded` is conftest's fixture


SHAPES = {"odd": (2, 9, 13), "min": (1, 2, 2), "edge_tiles": (1, 37, 50), "512_plane": (1, 128, 128),
          "batch3": (3, 24, 40), "1080p_plane": (1, 270, 480)}
# The decoder convolutions at their 512² sizes (input 128² / 256²), odd sizes, a batch, a 1×1 input.
DECODER_SHAPES = {"odd": (2, 9, 13), "min": (1, 1, 1), "edge_tiles": (1, 19, 26), "batch3": (3, 12, 20)}


def _check_cuda_against_float64(config, dtype, n, h, w, affine, residual, relu):
    up, stride = CONFIGS[config][2:]
    x, wt, s, t, res, nw, nb = make_inputs(n, h, w, dtype, "cuda", seed=h * w, affine=affine, residual=residual,
                                           config=config)
    packed = ref.pack_weight(wt)
    keep = up == 1 and stride == 1
    out, os_, ot, kept = torch.ops.styleforge.conv3x3_norm(x, packed, s, t, res, relu, up, keep, nw, nb, 1e-5, True,
                                                           stride)
    torch.cuda.synchronize()
    want_a = prologue64(x, s, t, res, relu).to(dtype)
    if keep:   # the prologue: fp32 math rounded once; an FMA may round differently from mul + add
        assert rel_error(kept, want_a) <= 2e-3
    else:
        assert kept.numel() == 0
    a = kept if keep else want_a
    conv64 = conv_of(a.double(), wt.double(), up, stride)
    cudnn = conv_of(a, wt, up, stride)
    assert_matches_reference(out, conv64, cudnn)
    s64, t64 = scale_shift64(out, nw, nb)
    assert rel_error(os_, s64) <= 1e-4 and rel_error(ot, t64) <= 1e-4
    assert out.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("shape", list(DECODER_SHAPES), ids=str)
@pytest.mark.parametrize("config", ["dec128to64", "dec64to32"])
@pytest.mark.parametrize("variant", ["affine_relu", "affine_residual"])
def test_cuda_decoder_conv3x3_norm_matches_float64(loaded, dtype, shape, config, variant):
    affine, residual, relu = {"affine_relu": (True, False, True), "affine_residual": (True, True, False)}[variant]
    _check_cuda_against_float64(config, dtype, *DECODER_SHAPES[shape], affine, residual, relu)


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("config", ["dec128to64", "dec64to32"])
def test_cuda_decoder_conv3x3_norm_at_512(loaded, config):
    h = 128 if config == "dec128to64" else 256
    _check_cuda_against_float64(config, torch.bfloat16, 1, h, h, True, False, True)


# The activations' L2 hints (cache_hints.cuh) change where lines live, never a value: each
# configuration gives the same bits with them (the default at these sizes: they fit L2) and without
# (STYLEFORGE_L2_HINT_BYTES=0: the plain loads and stores that 1080p and 4K take). Sizes with more
# tiles than resident CTAs where the grid is persistent (conv2, deconv2).
L2_HINT_SHAPES = {"enc32to64s2": (2, 300, 300), "dec64to32": (2, 150, 170)}


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("config", list(CONFIGS))
def test_cuda_l2_hints_change_no_value(loaded, monkeypatch, config):
    up, stride = CONFIGS[config][2:]
    n, h, w = L2_HINT_SHAPES.get(config, (2, 37, 50))
    x, wt, s, t, res, nw, nb = make_inputs(n, h, w, torch.bfloat16, "cuda", seed=11, residual=True, config=config)
    packed = ref.pack_weight(wt)
    keep = up == 1 and stride == 1
    run = lambda: torch.ops.styleforge.conv3x3_norm(x, packed, s, t, res, False, up, keep, nw, nb, 1e-5, True, stride)
    monkeypatch.delenv("STYLEFORGE_L2_HINT_BYTES", raising=False)
    hinted = run()
    monkeypatch.setenv("STYLEFORGE_L2_HINT_BYTES", "0")
    plain = run()
    for a, b in zip(hinted, plain):
        assert torch.equal(a, b)
    monkeypatch.setenv("STYLEFORGE_L2_HINT_BYTES", "lots")
    with pytest.raises(RuntimeError, match="STYLEFORGE_L2_HINT_BYTES must be a byte count"):
        run()


# conv3 (stride 2) at its input sizes: odd (an odd side has no reflection partner at the bottom),
# the smallest (2×2 → 1×1), tiles past the edge, a batch, the 512² frame's 256² and 1080p's 540×960.
STRIDED_SHAPES = {"odd": (2, 9, 13), "min": (1, 2, 2), "edge_tiles": (1, 37, 50), "batch3": (3, 24, 40),
                  "512_frame": (1, 256, 256), "1080p_frame": (1, 540, 960)}


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("shape", list(STRIDED_SHAPES), ids=str)
@pytest.mark.parametrize("config", ["enc32to64s2", "enc64to128s2"])
@pytest.mark.parametrize("variant", ["plain", "affine_relu", "affine_residual"])
def test_cuda_strided_conv3x3_norm_matches_float64(loaded, dtype, shape, config, variant):
    affine, residual, relu = {"plain": (False, False, False), "affine_relu": (True, False, True),
                              "affine_residual": (True, True, False)}[variant]
    n, h, w = STRIDED_SHAPES[shape]
    if config == "enc32to64s2" and shape.endswith("frame"):   # conv2's input is twice conv3's
        h, w = 2 * h, 2 * w
    _check_cuda_against_float64(config, dtype, n, h, w, affine, residual, relu)


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("shape", list(SHAPES), ids=str)
@pytest.mark.parametrize("variant", ["plain", "affine_relu", "affine_residual"])
def test_cuda_conv3x3_norm_matches_float64(loaded, dtype, shape, variant):
    affine, residual, relu = {"plain": (False, False, False), "affine_relu": (True, False, True),
                              "affine_residual": (True, True, False)}[variant]
    _check_cuda_against_float64("res128", dtype, *SHAPES[shape], affine, residual, relu)


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_cuda_conv3x3_norm_large_mean_statistics(loaded, dtype, config):
    # Outputs with a mean 25–80× their spread (a positive input through weights with a positive offset),
    # on a plane with clipped edge tiles: the epilogue's moments (per tile the sum, the mean, then
    # Σ(v − mean)²; merged over tiles) must keep the variance, not cancel it away.
    up, stride = CONFIGS[config][2:]
    x, wt, s, t, _, nw, nb = make_inputs(2, 37, 50, dtype, "cuda", seed=5, affine=False, config=config)
    x = (x.float().abs() * 0.5 + 2.0).to(dtype).contiguous(memory_format=torch.channels_last)
    wt = (wt.float() + 0.02).to(dtype)
    out, os_, ot, _ = torch.ops.styleforge.conv3x3_norm(x, ref.pack_weight(wt), None, None, None, False, up, False,
                                                        nw, nb, 1e-5, True, stride)
    var, mean = torch.var_mean(out.double(), dim=(2, 3), unbiased=False)
    assert float((mean.abs() / var.sqrt()).median()) > 20
    s64, t64 = scale_shift64(out, nw, nb)
    assert rel_error(os_, s64) <= 1e-4 and rel_error(ot, t64) <= 1e-4


@pytest.mark.gpu
@hopper
def test_cuda_conv3x3_norm_without_keep_and_norm_affine(loaded):
    x, wt, s, t, _, _, _ = make_inputs(1, 20, 33, seed=3, device="cuda")
    out, os_, ot, kept = torch.ops.styleforge.conv3x3_norm(x, ref.pack_weight(wt), s, t, None, True, 1, False,
                                                           None, None, 1e-5, True)
    assert kept.numel() == 0
    s64, t64 = scale_shift64(out, torch.ones(C, device="cuda"), torch.zeros(C, device="cuda"))
    assert rel_error(os_, s64) <= 1e-4 and rel_error(ot, t64) <= 1e-4


# (C, N, H, W): tails in both directions (the tile is 16 columns × 8·128/C rows: 8, 16, 32),
# batches, the 512² and 1080p planes for C = 32 (deconv2's output), a plane under one tile.
MOMENTS_SHAPES = [(128, 1, 128, 128), (128, 2, 9, 13), (128, 1, 270, 480),
                  (64, 2, 9, 13), (64, 2, 37, 50), (64, 1, 256, 256), (64, 1, 17, 17),
                  (32, 2, 9, 13), (32, 2, 45, 70), (32, 1, 33, 17), (32, 1, 2, 2), (32, 2, 512, 512),
                  (32, 1, 1080, 1920)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("shape", MOMENTS_SHAPES, ids=lambda s: "C{}_{}x{}x{}".format(*s))
def test_cuda_norm_scale_shift_matches_float64(loaded, dtype, shape):
    c, n, h, w = shape
    # A mean 40× the spread: the tiles' (sum, M2) merge must not cancel the variance away.
    x = moments_input(n, c, h, w, dtype, "cuda")
    nw, nb = torch.rand(c, device="cuda") + 0.5, torch.randn(c, device="cuda")
    s, t = torch.ops.styleforge.norm_scale_shift(x, nw, nb, 1e-5)
    assert s.shape == t.shape == (n, c) and s.dtype == t.dtype == torch.float32
    s64, t64 = scale_shift64(x, nw, nb)
    assert rel_error(s, s64) <= 1e-4 and rel_error(t, t64) <= 1e-4


@pytest.mark.gpu
@pytest.mark.parametrize("c", ref.SCALE_SHIFT_CHANNELS)
def test_cuda_norm_scale_shift_without_affine_and_nchw_input(loaded, c):
    # No weight/bias (= 1, 0), and an NCHW x that the binding makes channels_last first.
    x = moments_input(2, c, 23, 41, torch.float16, "cuda", seed=4, mean=3.0).contiguous()
    s, t = torch.ops.styleforge.norm_scale_shift(x, None, None, 1e-5)
    s64, t64 = scale_shift64(x, torch.ones(c, device="cuda"), torch.zeros(c, device="cuda"))
    assert rel_error(s, s64) <= 1e-4 and rel_error(t, t64) <= 1e-4


@pytest.mark.gpu
@pytest.mark.parametrize("c", ref.SCALE_SHIFT_CHANNELS)
def test_cuda_norm_scale_shift_refuses_bad_arguments(loaded, c):
    # Through the Python entry, which checks before the op: on the device machine a TORCH_CHECK
    # with an integer in its message segfaults in any cpp_extension (dev/diag/torch_check_probe.py).
    x = moments_input(1, c, 4, 4, device="cuda")
    with pytest.raises(ValueError, match="32, 64 or 128 channels"):
        kernels.norm_scale_shift(x[:, : c // 2 + 8], None, None, 1e-5)
    with pytest.raises(ValueError, match="weight"):
        kernels.norm_scale_shift(x, torch.ones(c + 1, device="cuda"), None, 1e-5)
    s, t = torch.ops.styleforge.norm_scale_shift(x[:0], None, None, 1e-5)
    assert s.shape == t.shape == (0, c)


@pytest.mark.gpu
@pytest.mark.parametrize("c", ref.SCALE_SHIFT_CHANNELS)
def test_opcheck_norm_scale_shift_on_cuda(loaded, c):
    x = moments_input(2, c, 11, 19, device="cuda")
    torch.library.opcheck(torch.ops.styleforge.norm_scale_shift.default,
                          (x, torch.rand(c, device="cuda") + 0.5, torch.randn(c, device="cuda"), 1e-5),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.gpu
@hopper
def test_cuda_conv3x3_norm_in_a_cuda_graph(loaded):
    x, wt, s, t, res, nw, nb = make_inputs(1, 64, 64, seed=5, device="cuda", residual=True)
    packed = ref.pack_weight(wt)
    eager = torch.ops.styleforge.conv3x3_norm(x, packed, s, t, res, False, 1, True, nw, nb, 1e-5, True)
    graph, captured = capture_in_graph(
        lambda: torch.ops.styleforge.conv3x3_norm(x, packed, s, t, res, False, 1, True, nw, nb, 1e-5, True))
    x.mul_(0.5)
    graph.replay()
    fresh = torch.ops.styleforge.conv3x3_norm(x, packed, s, t, res, False, 1, True, nw, nb, 1e-5, True)
    for got, want in zip(captured, fresh):
        assert torch.equal(got, want)
    assert not torch.equal(captured[0], eager[0])


@pytest.mark.gpu
@hopper
def test_opcheck_on_cuda(loaded):
    x, wt, s, t, res, nw, nb = make_inputs(1, 12, 20, device="cuda", residual=True)
    torch.library.opcheck(torch.ops.styleforge.conv3x3_norm.default,
                          (x, ref.pack_weight(wt), s, t, res, True, 1, True, nw, nb, 1e-5, True),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_engine_picks_a_plan_and_both_agree(loaded, dtype):
    from styleforge.engine.runner import FusedRunner
    model = random_net(2).cuda()
    x = torch.rand(1, 3, 128, 192, device="cuda") * 255
    runner = FusedRunner(model, torch.device("cuda"), dtype)
    assert runner.default_plan() == "conv3x3"
    runner(x)          # a shape's first call runs eagerly; the plan is chosen when it repeats
    out = runner(x)
    choice = runner.layer_choices[("residual", (1, 3, 128, 192))]
    assert choice.provider in ("conv3x3", "conv3x3_links", "hybrid", "cudnn") and choice.reason in ("faster", "slower")
    assert set(choice.plans) == {"cudnn", "conv3x3", "conv3x3_links", "hybrid"}
    assert choice.op_ms == min(choice.plans.values())
    with torch.no_grad():
        want = model(x)
        eager = model.to(dtype)(x.to(dtype)).float()
    limit = max(2 * rel_error(eager, want), 1e-3)
    assert rel_error(out, want) <= limit
    assert rel_error(runner.forward(x, "conv3x3"), want) <= limit
    assert rel_error(runner.forward(x, "conv3x3_links"), want) <= limit
    assert rel_error(runner.forward(x, "hybrid"), want) <= limit


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("config", list(CONFIGS))
def test_cuda_without_statistics_same_output_and_repeatable(loaded, config):
    # stats=False skips the moments and the hand-off; the output must not change. Twenty launches
    # must agree bit for bit (a race between the weight ring, the halo and the staged output would not).
    cin, cout, up, stride = CONFIGS[config]
    h = 128 if up == 1 or cin == 128 else 256
    h = (512 if cin == 32 else 256) if stride == 2 else h
    x, wt, s, t, _, nw, nb = make_inputs(1, h, h, device="cuda", seed=11, config=config)
    packed = ref.pack_weight(wt)
    full = torch.ops.styleforge.conv3x3_norm(x, packed, s, t, None, True, up, False, nw, nb, 1e-5, True, stride)
    bare = torch.ops.styleforge.conv3x3_norm(x, packed, s, t, None, True, up, False, nw, nb, 1e-5, False, stride)
    assert torch.equal(full[0], bare[0])
    assert bare[1].shape == (0, cout) and bare[2].shape == (0, cout)
    for _ in range(20):
        again = torch.ops.styleforge.conv3x3_norm(x, packed, s, t, None, True, up, False, nw, nb, 1e-5, True,
                                                  stride)
        assert torch.equal(again[0], full[0]) and torch.equal(again[1], full[1]) and torch.equal(again[2], full[2])


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("shape", ["odd", "batch3", "frame"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_cuda_in_kernel_handoff_matches_the_handoff_kernel(loaded, config, shape):
    # With a norm_state the convolution's last block writes (scale, shift) from fp64 sums: the output
    # is the same tensor, the affine the same to fp32 rounding (the sums' order varies), the state is
    # left zero, and a graph of the call replays it with the same state.
    cin, cout, up, stride = CONFIGS[config]
    if shape == "frame":   # the layer's input in the 512² frame
        n, h = 1, {"res128": 128, "dec128to64": 128, "dec64to32": 256, "enc32to64s2": 512, "enc64to128s2": 256}[config]
        w = h
    else:
        n, h, w = {"odd": (2, 9, 13), "batch3": (3, 24, 40)}[shape]
    x, wt, s, t, res, nw, nb = make_inputs(n, h, w, device="cuda", seed=h + w, residual=cin == cout,
                                           config=config)
    x.add_(3.0)   # a mean well away from 0: the sums' Σx² − n·mean² must not cancel the variance
    packed = ref.pack_weight(wt)
    state = kernels.norm_state(n, cout, "cuda")
    args = (x, packed, s, t, res, True, up, False, nw, nb, 1e-5, True, stride)
    want = torch.ops.styleforge.conv3x3_norm(*args)
    got = torch.ops.styleforge.conv3x3_norm(*args, state)
    torch.cuda.synchronize()
    assert not state.any()
    assert torch.equal(got[0], want[0])
    s64, t64 = scale_shift64(got[0], nw, nb)
    assert rel_error(got[1], s64) <= 1e-5 and rel_error(got[2], t64) <= 1e-5
    assert rel_error(got[1], want[1]) <= 1e-5 and rel_error(got[2], want[2]) <= 1e-5
    for _ in range(5):
        again = torch.ops.styleforge.conv3x3_norm(*args, state)
        assert torch.equal(again[0], got[0])
        assert rel_error(again[1], got[1]) <= 1e-6 and rel_error(again[2], got[2]) <= 1e-6
    graph, captured = capture_in_graph(lambda: torch.ops.styleforge.conv3x3_norm(*args, state))
    x.mul_(0.5)
    for _ in range(3):
        graph.replay()
    fresh = torch.ops.styleforge.conv3x3_norm(*args)
    torch.cuda.synchronize()
    assert not state.any()
    assert torch.equal(captured[0], fresh[0])
    assert rel_error(captured[1], fresh[1]) <= 1e-5 and rel_error(captured[2], fresh[2]) <= 1e-5


@pytest.mark.gpu
@hopper
def test_cuda_in_kernel_handoff_refuses_a_wrong_state(loaded):
    x, wt, s, t, _, nw, nb = make_inputs(2, 9, 13, device="cuda")
    packed = ref.pack_weight(wt)
    for bad in (kernels.norm_state(1, C, "cuda"), kernels.norm_state(2, C, "cuda").float(),
                kernels.norm_state(2, C, "cpu")):
        with pytest.raises(ValueError, match="state must be"):
            kernels.conv3x3_norm(x, packed, s, t, norm_weight=nw, norm_bias=nb, state=bad)


def test_norm_state_size():
    assert ref.norm_state_bytes(1, 32) == 256 + 8 * 2 * 32 * 8
    state = kernels.norm_state(3, 64, "cpu")
    assert state.dtype == torch.uint8 and state.numel() == ref.norm_state_bytes(3, 64) and not state.any()


def test_reference_without_statistics():
    x, w, s, t, _, nw, nb = make_inputs(1, 6, 7, config="dec64to32")
    out, os_, ot, _ = ref.conv3x3_norm(x, ref.pack_weight(w), s, t, None, True, 2, False, nw, nb, 1e-5, False)
    assert out.shape == (1, 32, 12, 14) and os_.shape == (0, 32) and ot.shape == (0, 32)


# The chain's shapes: the 512² plane and smaller run as one persistent kernel (every tile resident),
# the 1080p plane does not fit and runs the separate kernels.
CHAIN_SHAPES = {"512_plane": (1, 128, 128), "odd": (2, 9, 13), "batch3": (3, 24, 40), "min": (1, 2, 2),
                "1080p_plane": (1, 270, 480)}


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("shape", list(CHAIN_SHAPES), ids=str)
def test_cuda_residual_chain_matches_float64_like_the_separate_links(loaded, dtype, shape):
    n, h, w = CHAIN_SHAPES[shape]
    links = 10 if shape in ("512_plane", "1080p_plane") else 4
    x, s, t, ws, nws, nbs = chain_inputs(n, h, w, dtype, "cuda", links=links, seed=h * w)
    packed = [ref.pack_weight(wt) for wt in ws]
    state = kernels.chain_state(n, links, "cuda")
    got = torch.ops.styleforge.conv3x3_residual_chain(x, s, t, packed, nws, nbs, 1e-5, state)
    separate = ref.residual_chain(x, s, t, packed, nws, nbs, 1e-5, conv=torch.ops.styleforge.conv3x3_norm)
    torch.cuda.synchronize()
    assert not state.any(), "the chain must leave its state zero"
    fits = shape != "1080p_plane"
    if not fits:   # the same kernels one after another: the same bits
        for a, b in zip(got, separate):
            assert torch.equal(a, b)
        return
    want = chain64(x, s, t, ws, nws, nbs)
    for a, b, w64 in zip(got, separate, want):
        # Each output within the separate links' own distance from float64 (their statistics merge
        # in fp32, the chain's in fp64, so the rounding of the activations may differ by an ulp).
        assert rel_error(a, w64) <= max(1.5 * rel_error(b, w64), 2e-3)
        assert a.shape == b.shape and a.dtype == b.dtype
    # The last norm against float64 statistics of the chain's own last output.
    s64, t64 = scale_shift64(got[0], nws[-1], nbs[-1])
    assert rel_error(got[1], s64) <= 1e-4 and rel_error(got[2], t64) <= 1e-4
    assert got[0].is_contiguous(memory_format=torch.channels_last)


@pytest.mark.gpu
@hopper
def test_cuda_residual_chain_large_mean_statistics(loaded):
    # The last link's output has a mean ~10× its spread: Σx²/n − mean² in fp64 must keep the variance.
    x, s, t, ws, nws, nbs = chain_inputs(1, 64, 64, torch.bfloat16, "cuda", links=2, offset=0.05)
    packed = [ref.pack_weight(wt) for wt in ws]
    h, scale, shift, _ = kernels.conv3x3_residual_chain(x, s, t, packed, nws, nbs)
    var, mean = torch.var_mean(h.double(), dim=(2, 3), unbiased=False)
    assert float((mean.abs() / var.sqrt()).median()) > 5
    s64, t64 = scale_shift64(h, nws[-1], nbs[-1])
    assert rel_error(scale, s64) <= 1e-4 and rel_error(shift, t64) <= 1e-4


@pytest.mark.gpu
@hopper
def test_cuda_residual_chain_repeatable_and_in_a_cuda_graph(loaded):
    x, s, t, ws, nws, nbs = chain_inputs(1, 128, 128, torch.bfloat16, "cuda", links=10, seed=7)
    packed = [ref.pack_weight(wt) for wt in ws]
    state = kernels.chain_state(1, 10, "cuda")
    run = lambda: torch.ops.styleforge.conv3x3_residual_chain(x, s, t, packed, nws, nbs, 1e-5, state)
    assert_graph_replays_like_fresh_calls(run, run(), x, state, repeats=10, changed=0)


@pytest.mark.gpu
@hopper
def test_opcheck_chain_on_cuda(loaded):
    x, s, t, ws, nws, nbs = chain_inputs(1, 12, 20, torch.bfloat16, "cuda", links=2)
    torch.library.opcheck(torch.ops.styleforge.conv3x3_residual_chain.default,
                          (x, s, t, [ref.pack_weight(w) for w in ws], nws, nbs, 1e-5,
                           kernels.chain_state(1, 2, "cuda")),
                          test_utils=("test_schema", "test_faketensor"))
