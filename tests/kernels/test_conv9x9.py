"""The tensor-core 9×9 convolution op (conv1: 3→32, deconv3: 32→3) against float64 F.conv2d.

Two ways in: a pre-padded fp16/bf16 x (pad=0), or the fused one the engine uses (pad=4: the
reflection pad in the kernel's addressing; conv1 then reads the fp32 image through its strides,
deconv3 applies the InstanceNorm before it, relu(x·scale + shift), on load).

CPU (CI): the twin against float64, the op's registrations (opcheck, fake, switch), named
argument errors, a pure-Python model of the kernels' per-lane fragment index math for single
mma.m16n8k16 steps, and the real conv9x9.cu run through the warp emulator
(tests/emulators/conv9x9: mma/ldmatrix modelled from the PTX ISA) on tails, batches and
persistent-grid loops. GPU: the CUDA op against float64 under conftest's low-precision rule
(≤ 2× the error of cuDNN's own same-dtype convolution), edge and 1080p/4K shapes, poisoned
output memory, misaligned and NCHW inputs, fp32 output, CUDA graph capture, opcheck.

conv9x9_norm (conv1 plus IN1's statistics through the in-kernel hand-off): its twin is conv9x9
then norm_scale_shift, checked on the CPU with its registrations and named errors; the emulator and
the GPU check that y is conv9x9's bit for bit, (scale, shift) match the twin's statistics of that
y, the state is left zero and repeated calls (and CUDA graph replays) give the same bits.
"""
from __future__ import annotations

import importlib.util
import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import (
    assert_graph_replays_like_fresh_calls,
    assert_matches_reference,
    cuda_kernel_names,
    rel_error,
    requires_hopper,
)
from mma_model import mma_from_fragments
from op_recorder import OpRecorder

from styleforge import kernels
from styleforge.kernels.reference import conv3x3 as reference_conv3x3
from styleforge.kernels.reference import conv9x9 as reference_conv

kernels.register_ops()   # these tests call torch.ops.styleforge.* directly (kernels/library.py)

OP = torch.ops.styleforge.conv9x9.default
NORM_OP = torch.ops.styleforge.conv9x9_norm.default
LOW = (torch.bfloat16, torch.float16)
LAYERS = {"conv1": (3, 32), "deconv3": (32, 3)}
EMULATOR = Path(__file__).resolve().parents[1] / "emulators" / "conv9x9"


def make_inputs(layer, n, h, w, dtype=torch.bfloat16, device="cpu", bias=True, seed=0):
    """A pre-padded x for an (h, w) output with the layer's realistic value range, weight, bias.
    Drawn on `device` by a generator there, so that a GPU test's 4K planes are not drawn on the
    CPU and copied over."""
    cin, cout = LAYERS[layer]
    g = torch.Generator(device).manual_seed(seed)
    draw = (lambda f, *size, dt=torch.float64: f(*size, generator=g, dtype=dt, device=device))
    if layer == "conv1":    # the image in 0–255
        x = draw(torch.rand, n, cin, h + 8, w + 8) * 255
    else:                   # a ReLU'd InstanceNorm output: non-negative, mean ≈ 0.4
        x = torch.relu(draw(torch.randn, n, cin, h + 8, w + 8))
    weight = draw(torch.randn, cout, cin, 9, 9) / (cin * 81) ** 0.5
    b = draw(torch.randn, cout, dt=torch.float32) if bias else None
    x = x.to(dtype).contiguous(memory_format=torch.channels_last)
    return x, weight.to(dtype), b


def ref64(x, weight, bias):
    return F.conv2d(x.double(), weight.double(), None if bias is None else bias.double())


def make_fused_inputs(layer, n, h, w, dtype=torch.bfloat16, device="cpu", seed=0, channels_last=False):
    """Unpadded inputs for an (h, w) output with pad=4: conv1 gets the fp32 0–255 image (NCHW, or
    channels_last), deconv3 a raw deconv2-like output with its InstanceNorm's (scale, shift). Drawn
    on `device`, as make_inputs."""
    cin, cout = LAYERS[layer]
    g = torch.Generator(device).manual_seed(seed)
    draw = (lambda f, *size, dt=torch.float32: f(*size, generator=g, dtype=dt, device=device))
    weight = (draw(torch.randn, cout, cin, 9, 9, dt=torch.float64) / (cin * 81) ** 0.5).to(dtype)
    bias = draw(torch.randn, cout)
    if layer == "conv1":
        x = draw(torch.rand, n, cin, h, w) * 255
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x, weight, bias, None, None
    x = (draw(torch.randn, n, cin, h, w) * 3 + 5).to(dtype).contiguous(memory_format=torch.channels_last)
    var, mean = torch.var_mean(x.float(), dim=(2, 3), unbiased=False)
    gamma, beta = draw(torch.rand, cin) + 0.5, draw(torch.randn, cin) * 0.2
    scale = gamma / torch.sqrt(var + 1e-5)
    return x, weight, bias, scale, beta - mean * scale


def fused_operand(x, weight, scale, shift):
    """The padded, normalised, rounded tensor the fused op convolves (what the engine's norm op
    and pad wrote before): F.conv2d of it is the float64 oracle."""
    a = x.float()
    if scale is not None:
        a = torch.relu(a * scale[:, :, None, None] + shift[:, :, None, None])
    return F.pad(a.to(weight.dtype).float(), (4, 4, 4, 4), mode="reflect").to(weight.dtype)


def torch_same_dtype(x, weight, bias):
    return F.conv2d(x, weight, None if bias is None else bias.to(x.dtype))


# ---- the twin and the op's registrations (CPU, CI) ------------------------------------------

@pytest.mark.parametrize("layer", list(LAYERS))
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_reference_matches_float64(layer, dtype):
    for bias in (True, False):
        x, w, b = make_inputs(layer, 2, 5, 7, dtype, bias=bias)
        out = reference_conv.conv9x9(x, w, b)
        assert out.dtype == dtype and out.is_contiguous(memory_format=torch.channels_last)
        assert_matches_reference(out, ref64(x, w, b), torch_same_dtype(x, w, b))
    x, w, b = make_inputs("deconv3", 1, 4, 6, dtype)
    out = reference_conv.conv9x9(x, w, b, out_float32=True)
    assert out.dtype == torch.float32 and rel_error(out, ref64(x, w, b)) <= 1e-5


def _bad(**overrides):
    x, w, b = make_inputs("deconv3", 1, 2, 2)
    args = dict(x=x, weight=w, bias=b, out_float32=False)
    args.update(overrides)
    return args


def _bad_fused(**overrides):
    x, w, b, scale, shift = make_fused_inputs("deconv3", 1, 6, 6)
    args = {"x": x, "weight": w, "bias": b, "out_float32": True, "scale": scale, "shift": shift, "pad": 4}
    args.update(overrides)
    return args


BAD_ARGS = {
    "x not 4-D": (dict(x=torch.zeros(32, 10, 10, dtype=torch.bfloat16)), "4-D"),
    "fp32 x": (dict(x=torch.zeros(1, 32, 10, 10)), "float32 for Cin=3"),
    "fp32 weight": (dict(x=torch.zeros(1, 32, 10, 10), weight=torch.zeros(3, 32, 9, 9)), "weight dtype"),
    "weight dtype": (dict(weight=torch.zeros(3, 32, 9, 9, dtype=torch.float16)), "weight dtype"),
    "weight 3x3": (dict(weight=torch.zeros(3, 32, 3, 3, dtype=torch.bfloat16)), r"\(Cout, Cin, 9, 9\)"),
    "channels mismatch": (dict(weight=torch.zeros(3, 16, 9, 9, dtype=torch.bfloat16)), "Cin=16"),
    "unsupported channels": (dict(x=torch.zeros(1, 64, 10, 10, dtype=torch.bfloat16),
                                  weight=torch.zeros(3, 64, 9, 9, dtype=torch.bfloat16)), "unsupported"),
    "input smaller than 9": (dict(x=torch.zeros(1, 32, 8, 12, dtype=torch.bfloat16)), "at least 9x9"),
    "bias shape": (dict(bias=torch.zeros(4)), "bias"),
    "integer bias": (dict(bias=torch.zeros(3, dtype=torch.int32)), "floating"),
    "fp32 out for conv1": (dict(x=torch.zeros(1, 3, 10, 10, dtype=torch.bfloat16),
                                weight=torch.zeros(32, 3, 9, 9, dtype=torch.bfloat16), bias=None,
                                out_float32=True), "out_float32"),
}


BAD_FUSED_ARGS = {
    "pad 2": ({"pad": 2}, "pad must be 0 or 4"),
    "scale without shift": ({"shift": None}, "both or neither"),
    "norm on conv1": ({"x": torch.rand(1, 3, 6, 6), "weight": torch.zeros(32, 3, 9, 9, dtype=torch.bfloat16),
                       "bias": None, "out_float32": False, "scale": torch.ones(1, 3), "shift": torch.zeros(1, 3)},
                      "only supported for Cin=32"),
    "scale shape": ({"scale": torch.ones(2, 32)}, r"scale must be a float32 \(1, 32\)"),
    "fp16 shift": ({"shift": torch.zeros(1, 32, dtype=torch.float16)}, "shift must be a float32"),
    "plane not larger than the pad": ({"x": torch.zeros(1, 32, 4, 9, dtype=torch.bfloat16), "scale": torch.ones(1, 32),
                                       "shift": torch.zeros(1, 32)}, "needs H, W > 4"),
    "unpadded plane too small": ({"pad": 0}, "at least 9x9"),
}


@pytest.mark.parametrize("label", list(BAD_ARGS) + list(BAD_FUSED_ARGS))
def test_bad_arguments_are_named(label):
    overrides, needle = BAD_ARGS.get(label) or BAD_FUSED_ARGS[label]
    args = (_bad if label in BAD_ARGS else _bad_fused)(**overrides)
    with pytest.raises(ValueError, match=needle):
        OP(*args.values())
    assert not kernels.conv9x9_supported(*args.values())


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_reference_fused_matches_norm_pad_then_convolve(dtype):
    """pad=4 (+ the norm) equals the network's explicit ops: InstanceNorm + ReLU + reflection pad
    written in the dtype, then the VALID convolution; conv1's fp32 image equals its cast."""
    for layer in LAYERS:
        for channels_last in (False, True):
            x, w, b, scale, shift = make_fused_inputs(layer, 2, 5, 7, dtype, channels_last=channels_last)
            got = reference_conv.conv9x9(x, w, b, layer == "deconv3", scale, shift, pad=4)
            want = reference_conv.conv9x9(fused_operand(x, w, scale, shift), w, b, layer == "deconv3")
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    # The norm is the network's: InstanceNorm2d(affine) then ReLU, rounded to the dtype.
    x, w, b, scale, shift = make_fused_inputs("deconv3", 1, 6, 5, dtype)
    var, mean = torch.var_mean(x.float(), dim=(2, 3), unbiased=False)
    gamma, beta = (scale * torch.sqrt(var + 1e-5))[0], (shift + mean * scale)[0]
    explicit = torch.relu(F.instance_norm(x.float(), weight=gamma, bias=beta, eps=1e-5))
    operand = fused_operand(x, w, scale, shift)[..., 4:-4, 4:-4].float()
    assert rel_error(operand, explicit) <= 1e-2


def _opcheck_samples():
    x1, w1, _ = make_inputs("conv1", 2, 3, 5, torch.bfloat16)
    x3, w3, b3 = make_inputs("deconv3", 1, 4, 3, torch.float16)
    xg, wg, bg = make_inputs("deconv3", 1, 2, 2, torch.bfloat16)
    xi, wi, _, _, _ = make_fused_inputs("conv1", 1, 5, 6)
    xh, wh, bh, sh, th = make_fused_inputs("deconv3", 2, 6, 5, torch.float16)
    xn, wn, bn, sn, tn = make_fused_inputs("deconv3", 1, 5, 5)
    return [(x1, w1, None, False), (x3, w3, b3, True), (x3, w3, b3.half(), False),
            (xg.requires_grad_(), wg.requires_grad_(), bg.requires_grad_(), False),
            (xi, wi, None, False, None, None, 4), (xh, wh, bh, True, sh, th, 4),
            (xn, wn.requires_grad_(), bn, True, sn.requires_grad_(), tn.requires_grad_(), 4)]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(7))
def test_opcheck(index):
    torch.library.opcheck(OP, _opcheck_samples()[index])


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_fake_impl_matches_real_shape_and_strides():
    from torch._subclasses.fake_tensor import FakeTensorMode
    for layer, out_float32 in (("conv1", False), ("deconv3", True)):
        x, w, b = make_inputs(layer, 2, 3, 4)
        real = OP(x, w, b, out_float32)
        with FakeTensorMode() as mode:
            fake = OP(mode.from_tensor(x), mode.from_tensor(w), mode.from_tensor(b), out_float32)
        assert fake.shape == real.shape and fake.stride() == real.stride() and fake.dtype == real.dtype
        x, w, b, scale, shift = make_fused_inputs(layer, 2, 5, 6)
        real = OP(x, w, b, out_float32, scale, shift, 4)
        with FakeTensorMode() as mode:
            fake = OP(*(None if t is None else mode.from_tensor(t) for t in (x, w, b)), out_float32,
                      *(None if t is None else mode.from_tensor(t) for t in (scale, shift)), 4)
        assert fake.shape == real.shape == (2, w.shape[0], 5, 6)
        assert fake.stride() == real.stride() and fake.dtype == real.dtype


def test_switch_routes_between_op_and_twin():
    x, w, b = make_inputs("deconv3", 1, 2, 3)
    with OpRecorder() as rec:
        via_op = kernels.conv9x9(x, w, b, out_float32=True)
    assert rec.ops == ["styleforge.conv9x9.default"]
    with kernels.using("reference"), OpRecorder() as rec:
        via_twin = kernels.conv9x9(x, w, b, out_float32=True)
    assert "styleforge.conv9x9.default" not in rec.ops
    torch.testing.assert_close(via_op, via_twin, rtol=0, atol=0)


# ---- conv9x9_norm: the twin and its registrations (CPU) ----------------------------------------

def make_norm_inputs(n, h, w, dtype=torch.bfloat16, device="cpu", seed=0, image=True, affine=True):
    """conv1's inputs for an (h, w) output: the fp32 0–255 image with pad=4 (image), or a pre-padded
    x in the dtype with pad=0; the weight, IN1's (weight, bias) or None, and the pad."""
    if image:
        x, weight, _, _, _ = make_fused_inputs("conv1", n, h, w, dtype, device, seed, channels_last=seed % 2 == 1)
        pad = 4
    else:
        x, weight, _ = make_inputs("conv1", n, h, w, dtype, device, bias=False, seed=seed)
        pad = 0
    g = torch.Generator(device).manual_seed(seed + 1)
    nw, nb = torch.rand(32, generator=g, device=device) + 0.5, torch.randn(32, generator=g, device=device)
    return x, weight, (nw, nb) if affine else (None, None), pad


def scale_shift64(y, nw, nb, eps=1e-5):
    """InstanceNorm(y) as (scale, shift) from float64 statistics of y."""
    var, mean = torch.var_mean(y.double(), dim=(2, 3), unbiased=False)
    scale = torch.rsqrt(var + eps) * (1.0 if nw is None else nw.double())
    return scale, (0.0 if nb is None else nb.double()) - mean * scale


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("image", [True, False], ids=["fp32 image pad 4", "pre-padded pad 0"])
def test_reference_norm_is_conv9x9_then_norm_scale_shift(dtype, image):
    for affine in (True, False):
        x, w, (nw, nb), pad = make_norm_inputs(2, 5, 7, dtype, image=image, affine=affine)
        y, scale, shift = reference_conv.conv9x9_norm(x, w, pad, nw, nb, 1e-5)
        want_y = reference_conv.conv9x9(x, w, None, False, None, None, pad)
        want = reference_conv3x3.norm_scale_shift(want_y, nw, nb, 1e-5)
        torch.testing.assert_close(y, want_y, rtol=0, atol=0)
        torch.testing.assert_close((scale, shift), want, rtol=0, atol=0)
        assert scale.dtype == shift.dtype == torch.float32 and scale.shape == shift.shape == (2, 32)
        # The affine is the network's InstanceNorm of y, to fp32 statistics' precision.
        s64, t64 = scale_shift64(y, nw, nb)
        assert rel_error(scale, s64) <= 1e-5 and rel_error(shift, t64) <= 1e-5
        # The op (its CPU impl is the twin) and the Python entry agree bit for bit.
        state = kernels.norm_state(2, 32, "cpu")
        for got in (NORM_OP(x, w, pad, nw, nb, 1e-5, state), kernels.conv9x9_norm(x, w, pad=pad, norm_weight=nw,
                                                                                   norm_bias=nb)):
            for a, b in zip(got, (y, scale, shift)):
                assert torch.equal(a, b)
        assert not state.any()


def _bad_norm(**overrides):
    x, w, (nw, nb), pad = make_norm_inputs(1, 5, 6)
    args = {"x": x, "weight": w, "pad": pad, "norm_weight": nw, "norm_bias": nb, "eps": 1e-5,
            "state": kernels.norm_state(1, 32, "cpu")}
    args.update(overrides)
    return args


BAD_NORM_ARGS = {
    "deconv3 weight": ({"x": torch.zeros(1, 32, 6, 6, dtype=torch.bfloat16),
                        "weight": torch.zeros(3, 32, 9, 9, dtype=torch.bfloat16)}, r"only conv1"),
    "pad 2": ({"pad": 2}, "conv9x9_norm: pad must be 0 or 4"),
    "fp32 weight": ({"weight": torch.zeros(32, 3, 9, 9)}, "conv9x9_norm: weight dtype"),
    "1x1 output": ({"x": torch.zeros(1, 3, 9, 10, dtype=torch.bfloat16), "pad": 0}, "at least 2x2"),
    "norm_weight shape": ({"norm_weight": torch.ones(3)}, r"norm_weight must be a floating \(32,\)"),
    "integer norm_bias": ({"norm_bias": torch.zeros(32, dtype=torch.int32)}, "norm_bias must be a floating"),
    "eps 0": ({"eps": 0.0}, "eps must be > 0"),
    "state too small": ({"state": torch.zeros(100, dtype=torch.uint8)}, r"norm_state_bytes\(N, 32\)"),
    "state dtype": ({"state": torch.zeros(reference_conv3x3.norm_state_bytes(1, 32))}, "state must be"),
    "state of another batch": ({"state": kernels.norm_state(0, 32, "cpu")}, "state must be"),
}


@pytest.mark.parametrize("label", list(BAD_NORM_ARGS))
def test_norm_bad_arguments_are_named(label):
    overrides, needle = BAD_NORM_ARGS[label]
    args = _bad_norm(**overrides)
    with pytest.raises(ValueError, match=needle):
        NORM_OP(*args.values())
    state = args.pop("state")
    x, weight = args.pop("x"), args.pop("weight")
    with pytest.raises(ValueError, match=needle):
        kernels.conv9x9_norm(x, weight, state=state, **args)


def test_pack_conv1_weight_places_each_element_as_the_kernel_reads_it():
    # conv9x9_sm90.cu's B: W[n][c][ky][kx] at k = 32·(ky % 2) + 3·kx + c of block ky // 2, row n,
    # 16-byte chunk k // 8 at slot (k // 8) ^ (n % 8); everything else zero.
    g = torch.Generator().manual_seed(3)
    weight = torch.randn(32, 3, 9, 9, generator=g).to(torch.bfloat16)
    packed = kernels.pack_conv1_weight(weight)
    assert packed.shape == (5 * 32 * 64,) and packed.dtype == torch.bfloat16
    want = torch.zeros(5, 32, 8, 8, dtype=torch.bfloat16)   # [block][row n][slot][element]
    for n in range(32):
        for c in range(3):
            for ky in range(9):
                for kx in range(9):
                    k = 32 * (ky % 2) + 3 * kx + c
                    want[ky // 2, n, (k // 8) ^ (n % 8), k % 8] = weight[n, c, ky, kx]
    assert torch.equal(packed, want.reshape(-1))
    with pytest.raises(ValueError, match="pack_conv1_weight: weight must be conv1's"):
        kernels.pack_conv1_weight(weight[:16])
    x, w, (nw, nb), pad = make_norm_inputs(1, 12, 12, torch.bfloat16)
    with pytest.raises(ValueError, match="packed_weight must be pack_conv1_weight"):
        kernels.conv9x9_norm(x, w, pad=pad, norm_weight=nw, norm_bias=nb, packed_weight=packed[:100])
    y, *_ = kernels.conv9x9_norm(x, w, pad=pad, norm_weight=nw, norm_bias=nb,
                                 packed_weight=kernels.pack_conv1_weight(w))
    assert torch.equal(y, kernels.conv9x9_norm(x, w, pad=pad, norm_weight=nw, norm_bias=nb)[0])


def test_pack_head_weight_places_each_fragment_as_the_kernel_reads_it():
    # conv9x9.cu's head B fragments: slot (ky pair G, kx, k step ks), lane (n = lane // 4 = 2·co + j):
    # W[co][16·ks + 2·(lane % 4) + (0, 1, 8, 9)][2G + j][kx]; zero for n ≥ 6 or 2G + j = 9.
    g = torch.Generator().manual_seed(4)
    weight = torch.randn(3, 32, 9, 9, generator=g).to(torch.float16)
    packed = kernels.pack_head_weight(weight)
    assert packed.shape == (5 * 9 * 2 * 32 * 4,) and packed.dtype == torch.float16
    want = torch.zeros(5, 9, 2, 32, 4, dtype=torch.float16)
    for pair in range(5):
        for kx in range(9):
            for ks in range(2):
                for lane in range(32):
                    n = lane // 4
                    co, ky = n // 2, 2 * pair + n % 2
                    if n < 6 and ky < 9:
                        for e, dc in enumerate((0, 1, 8, 9)):
                            want[pair, kx, ks, lane, e] = weight[co, 16 * ks + 2 * (lane % 4) + dc, ky, kx]
    assert torch.equal(packed, want.reshape(-1))
    with pytest.raises(ValueError, match="pack_head_weight: weight must be the head's"):
        kernels.pack_head_weight(weight.float())


def test_norm_state_is_the_header_layout():
    # norm_state.h: a 256-byte header (the CTA counter), then 8 copies of fp64 [Σx | Σx²][N][C].
    assert reference_conv3x3.norm_state_bytes(3, 32) == 256 + 8 * 2 * 3 * 32 * 8
    state = kernels.norm_state(3, 32, "cpu")
    assert state.dtype == torch.uint8 and state.numel() == reference_conv3x3.norm_state_bytes(3, 32)
    assert not state.any()


def test_norm_opcheck_and_fake_impl():
    from torch._subclasses.fake_tensor import FakeTensorMode
    for dtype, image in ((torch.bfloat16, True), (torch.float16, False)):
        x, w, (nw, nb), pad = make_norm_inputs(2, 5, 6, dtype, image=image)
        args = (x, w, pad, nw, nb, 1e-5, kernels.norm_state(2, 32, "cpu"))
        torch.library.opcheck(NORM_OP, args, test_utils=("test_schema", "test_faketensor"))
        real = NORM_OP(*args)
        with FakeTensorMode() as mode:
            fake = NORM_OP(*(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args))
        for f, r in zip(fake, real):
            assert f.shape == r.shape and f.stride() == r.stride() and f.dtype == r.dtype


def test_norm_entry_runs_the_twin_on_cpu_and_in_reference_mode():
    x, w, (nw, nb), pad = make_norm_inputs(1, 6, 5)
    with OpRecorder() as rec:
        got = kernels.conv9x9_norm(x, w, pad=pad, norm_weight=nw, norm_bias=nb)
    assert "styleforge.conv9x9_norm.default" not in rec.ops
    with kernels.using("reference"):
        again = kernels.conv9x9_norm(x, w, pad=pad, norm_weight=nw, norm_bias=nb)
    for a, b in zip(got, again):
        assert torch.equal(a, b)


# ---- the kernels' fragment index math, modelled per lane (CPU) ------------------------------
# mma_from_fragments (tests/mma_model.py) rebuilds one mma from per-lane fragments.

def test_fragment_model_rgb_kernel():
    """conv1: A from the two staged copies of an input row (k = 3·kx + c), one mma per (ky, k-step)."""
    rng = np.random.default_rng(0)
    copy_len, cs, ky = 224, 48, 5
    row = rng.standard_normal(copy_len + 1)
    copies = np.stack([row[:copy_len], row[1:copy_len + 1]])          # copy 1 = row shifted by one
    words = copies.reshape(-1, 2)                                     # 32-bit words (lo, hi) of the row
    W = rng.standard_normal((32, 3, 9, 9))
    for ks in range(2):
        for nt in range(4):
            a_pairs, b_pairs = [], []
            for lane in range(32):
                g, t = divmod(lane, 4)
                e0 = (cs + g) * 3 + 2 * t                              # as in rgb_kernel
                a_word = copy_len // 2 + (e0 - 1) // 2 if g & 1 else e0 // 2
                base = a_word + ks * 8
                a_pairs.append([tuple(words[base + off]) for off in (0, 12, 4, 16)])
                n, k0 = nt * 8 + g, ks * 16 + 2 * t
                bk = [W[n, k % 3, ky, k // 3] if k < 27 else 0.0 for k in (k0, k0 + 1, k0 + 8, k0 + 9)]
                b_pairs.append([(bk[0], bk[1]), (bk[2], bk[3])])
            got = mma_from_fragments(a_pairs, b_pairs)
            for lane in range(32):
                g, t = divmod(lane, 4)
                for e in range(4):
                    m, ch = g + 8 * (e >> 1), nt * 8 + 2 * t + (e & 1)
                    k = np.arange(ks * 16, ks * 16 + 16)
                    valid = k < 27
                    want = sum(row[(cs + m) * 3 + kk] * W[ch, kk % 3, ky, kk // 3] for kk in k[valid])
                    assert abs(got[lane, e] - want) < 1e-9


def test_fragment_model_head_kernel():
    """deconv3: swizzled tile + ldmatrix.x4 for A (16 pixels × 16 channels), B per (ky pair, kx,
    k-step) with column n = 2·co + j holding kernel row 2G + j of output channel co."""
    rng = np.random.default_rng(1)
    cols, rows = 40, 24
    tile = rng.standard_normal((rows * cols, 32))                     # [pixel][channel]
    smem = np.full(rows * cols * 32, np.nan)                          # 16-bit slots
    for P in range(rows * cols):
        for q in range(4):                                            # head_chunk_offset, in elements
            off = (P * 64 + ((q ^ ((P >> 1) & 3)) << 4)) // 2
            smem[off:off + 8] = tile[P, 8 * q:8 * q + 8]
    W = rng.standard_normal((3, 32, 9, 9))
    wr0, cs, R, kx = 8, 16, 11, 7
    for G, ks in itertools.product(range(5), range(2)):
        addr = []
        for lane in range(32):
            P = (wr0 + R) * cols + cs + kx + (lane & 15)
            q = ks * 2 + (lane >> 4)
            off = P * 64 + ((q ^ ((P >> 1) & 3)) << 4)
            assert off % 16 == 0
            addr.append(off // 2)
        # ldmatrix.x4: register i of lane l = word l % 4 of the row given by lane 8i + l // 4.
        a_pairs = [[tuple(smem[addr[8 * i + lane // 4] + 2 * (lane % 4):][:2]) for i in range(4)]
                   for lane in range(32)]
        b_pairs = []
        for lane in range(32):                                        # the kernel's w_s staging
            n, c0 = lane >> 2, ks * 16 + (lane & 3) * 2
            co, ky = n >> 1, 2 * G + (n & 1)
            v = [W[co, c, ky, kx] if n < 6 and ky < 9 else 0.0 for c in (c0, c0 + 1, c0 + 8, c0 + 9)]
            b_pairs.append([(v[0], v[1]), (v[2], v[3])])
        got = mma_from_fragments(a_pairs, b_pairs)
        for lane in range(32):
            g, t = divmod(lane, 4)
            for e in range(4):
                # C register e: pixel g (+8 for e ≥ 2), column 2t + (e & 1) = channel t, kernel row 2G + (e & 1)
                m, co, ky = g + 8 * (e >> 1), t, 2 * G + (e & 1)
                P = (wr0 + R) * cols + cs + kx + m
                real = t < 3 and ky < 9
                want = tile[P, ks * 16:ks * 16 + 16] @ W[co, ks * 16:ks * 16 + 16, ky, kx] if real else 0.0
                assert abs(got[lane, e] - want) < 1e-9


def test_head_swizzle_is_bank_conflict_free():
    """Any 8 consecutive pixels of one 16-byte chunk land in 8 distinct 4-bank groups."""
    for P0 in range(64):
        for q in range(4):
            groups = {((P * 64 + ((q ^ ((P >> 1) & 3)) << 4)) // 16) % 8 for P in range(P0, P0 + 8)}
            assert len(groups) == 8


# ---- the real kernels on the CPU through the warp emulator ------------------------------------

@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    # A unique module name: the instance_norm emulator's module is also called `emulate`.
    spec = importlib.util.spec_from_file_location("conv9x9_emulate", EMULATOR / "emulate.py")
    emulate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emulate)
    if shutil.which("g++") is None or emulate.cuda_include() is None:
        pytest.skip("the kernel emulator needs g++ and the CUDA headers")
    return emulate, emulate.build(tmp_path_factory.mktemp("conv9x9_emulator"))


# label: (layer, N, H, W, dtype, bias, out_float32, emulated SM count → persistent grid of 2·SMs)
EMULATED = {
    "conv1 1x1 output": ("conv1", 1, 1, 1, torch.float16, False, False, 4),
    "conv1 batch 2, tails in H and W": ("conv1", 2, 9, 67, torch.bfloat16, True, False, 1),
    "conv1 wide, 3 tiles per block": ("conv1", 1, 7, 130, torch.float16, True, False, 1),
    "deconv3 1x1 output": ("deconv3", 1, 1, 1, torch.bfloat16, True, False, 4),
    "deconv3 batch 2, tails, fp32 out": ("deconv3", 2, 17, 33, torch.bfloat16, True, True, 1),
    "deconv3 fp16 no bias, odd": ("deconv3", 1, 19, 35, torch.float16, False, False, 1),
}


# label: (layer, N, H, W, dtype, out_float32, channels_last image, emulated SMs); pad=4, fused inputs.
EMULATED_FUSED = {
    "conv1 fp32 NCHW image, tails": ("conv1", 1, 9, 67, torch.bfloat16, False, False, 1),
    "conv1 fp32 channels_last image, batch 2": ("conv1", 2, 8, 70, torch.float16, False, True, 2),
    "conv1 smallest plane (5x5)": ("conv1", 1, 5, 5, torch.bfloat16, False, False, 4),
    "deconv3 norm, batch 2, tails, fp32 out": ("deconv3", 2, 17, 33, torch.bfloat16, True, False, 1),
    "deconv3 norm fp16, 2 tiles per block": ("deconv3", 1, 35, 19, torch.float16, False, False, 1),
    "deconv3 norm smallest plane (5x6)": ("deconv3", 1, 5, 6, torch.bfloat16, True, False, 4),
}


@pytest.mark.parametrize("label", list(EMULATED_FUSED))
def test_emulated_fused_kernel_matches_reference(emulator, label):
    emulate, exe = emulator
    layer, n, h, w, dtype, out_float32, channels_last, sms = EMULATED_FUSED[label]
    x, weight, b, scale, shift = make_fused_inputs(layer, n, h, w, dtype, seed=len(label), channels_last=channels_last)
    out = emulate.run(exe, x, weight, b if layer == "deconv3" else None, out_float32, sms, scale, shift, pad=4)
    assert not torch.isnan(out).any(), "unwritten (poisoned) output elements"
    bias = b if layer == "deconv3" else None
    # The operand is the twin's bit for bit (no FMA in the norm, the cast rounds as .to does), so
    # only the summation order differs.
    want = reference_conv.conv9x9(x, weight, bias, out_float32, scale, shift, 4)
    assert out.shape == want.shape == (n, weight.shape[0], h, w)
    assert rel_error(out, want) <= (1e-6 if out_float32 else 2e-3)


@pytest.mark.parametrize("label", list(EMULATED))
def test_emulated_kernel_matches_reference(emulator, label):
    emulate, exe = emulator
    layer, n, h, w, dtype, bias, out_float32, sms = EMULATED[label]
    x, weight, b = make_inputs(layer, n, h, w, dtype, bias=bias, seed=len(label))
    out = emulate.run(exe, x, weight, b, out_float32, num_sms=sms)
    assert not torch.isnan(out).any(), "unwritten (poisoned) output elements"
    want = reference_conv.conv9x9(x, weight, b, out_float32)
    # Same products, fp32 vs double sums, one rounding to the output dtype: ≤ 1 ulp, rarely.
    assert rel_error(out, want) <= (1e-6 if out_float32 else 2e-3)
    assert_matches_reference(out.to(dtype), ref64(x, weight, b), torch_same_dtype(x, weight, b))


# label: (N, H, W, dtype, fp32 image with pad=4 (else pre-padded, pad=0), IN1 affine, emulated SMs, seed);
# an odd seed makes the image channels_last (make_norm_inputs).
EMULATED_NORM = {
    "fp32 NCHW image, batch 2, tails, 3 tiles per block": (2, 9, 67, torch.bfloat16, True, True, 1, 0),
    "fp16 pre-padded, no affine, tiles over 4 blocks": (1, 17, 70, torch.float16, False, False, 2, 2),
    "fp32 channels_last image, 9 blocks over the 8 sum copies": (3, 17, 5, torch.float16, True, True, 8, 1),
}


@pytest.mark.parametrize("label", list(EMULATED_NORM))
def test_emulated_norm_kernel_matches_reference(emulator, label):
    """The statistics epilogue and the in-kernel hand-off on the emulator (fp64 atomics modelled with
    std::atomic_ref; blocks run one after another): two launches on one state, each leaving it zero
    and writing the same bytes (the driver checks), y equal to the plain kernel's."""
    emulate, exe = emulator
    n, h, w, dtype, image, affine, sms, seed = EMULATED_NORM[label]
    x, weight, (nw, nb), pad = make_norm_inputs(n, h, w, dtype, seed=seed, image=image, affine=affine)
    y, scale, shift = emulate.run_norm(exe, x, weight, pad, nw, nb, 1e-5, num_sms=sms, repeat=2)
    torch.testing.assert_close(y, emulate.run(exe, x, weight, None, False, sms, pad=pad), rtol=0, atol=0)
    assert rel_error(y, reference_conv.conv9x9(x, weight, None, False, None, None, pad)) <= 2e-3
    want_scale, want_shift = reference_conv3x3.norm_scale_shift(y.contiguous(), nw, nb, 1e-5)
    assert rel_error(scale, want_scale) <= 1e-5 and rel_error(shift, want_shift) <= 1e-5


# ---- the CUDA kernel (GPU) ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def cuda_op():
    ok, reason = kernels.cuda_kernels_available()
    assert ok, reason     # on a GPU machine a failed build is a failure, not a skip
    return OP


def _check_cuda(op, layer, n, h, w, dtype, bias=True, out_float32=False, seed=0):
    x, weight, b = make_inputs(layer, n, h, w, dtype, "cuda", bias, seed)
    out = op(x, weight, b, out_float32)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert out.dtype == (torch.float32 if out_float32 else dtype)
    want = ref64(x, weight, b)
    if out_float32:
        assert rel_error(out, want) <= 1e-4   # fp32 tensor-core accumulation, no output rounding
        out = out.to(dtype)
    return assert_matches_reference(out, want, torch_same_dtype(x, weight, b))


EDGE = [(1, 1, 1), (1, 7, 7), (2, 17, 33), (1, 33, 17), (2, 9, 65), (1, 31, 63), (3, 16, 32), (1, 1, 100),
        (1, 100, 1)]


@pytest.mark.gpu
@pytest.mark.parametrize("layer", list(LAYERS))
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_cuda_edge_shapes(cuda_op, layer, dtype):
    for n, h, w in EDGE:
        for bias in (True, False):
            _check_cuda(cuda_op, layer, n, h, w, dtype, bias)
    if layer == "deconv3":
        for n, h, w in EDGE[:4]:
            _check_cuda(cuda_op, layer, n, h, w, dtype, True, out_float32=True)


LARGE = {"1080p": (1, 1080, 1920), "4K-ish": (1, 2160, 3840), "batch 2 at 512": (2, 512, 512)}


@pytest.mark.gpu
@pytest.mark.parametrize("label", list(LARGE))
@pytest.mark.parametrize("layer", list(LAYERS))
def test_cuda_large_planes(cuda_op, layer, label):
    n, h, w = LARGE[label]
    _check_cuda(cuda_op, layer, n, h, w, torch.bfloat16, bias=layer == "deconv3")
    if label == "1080p":
        _check_cuda(cuda_op, layer, n, h, w, torch.float16, bias=True)


@pytest.mark.gpu
@pytest.mark.parametrize("layer", list(LAYERS))
def test_cuda_poisoned_memory_is_fully_overwritten_and_deterministic(cuda_op, layer):
    x, w, b = make_inputs(layer, 1, 133, 271, torch.bfloat16, "cuda")
    outs = []
    for _ in range(2):
        poison = torch.full((64 << 20,), float("nan"), device="cuda")   # 256 MB of NaN, then freed
        del poison
        outs.append(cuda_op(x, w, b, False))
        assert not torch.isnan(outs[-1]).any()
    assert torch.equal(outs[0], outs[1]), "two runs differ: the kernel must be deterministic"


def _check_cuda_fused(op, layer, n, h, w, dtype, channels_last=False, seed=0):
    """The fused call against float64 on the operand it must have formed; conv1's operand is the
    rounded image, deconv3's the rounded relu(x·scale + shift), both reflection-padded by 4."""
    x, weight, b, scale, shift = make_fused_inputs(layer, n, h, w, dtype, "cuda", seed, channels_last)
    head = layer == "deconv3"
    bias = b if head else None
    out = op(x, weight, bias, head, scale, shift, 4)
    assert out.shape == (n, weight.shape[0], h, w) and out.is_contiguous(memory_format=torch.channels_last)
    operand = fused_operand(x, weight, scale, shift)
    want = ref64(operand, weight, bias)
    if head:
        assert rel_error(out, want) <= 1e-4
        out = out.to(dtype)
    return assert_matches_reference(out, want, torch_same_dtype(operand, weight, bias))


FUSED_SHAPES = {"small": [(1, 5, 5), (1, 5, 6), (2, 17, 33), (1, 33, 17), (1, 31, 63), (3, 16, 32), (1, 5, 100),
                          (1, 100, 5)],
                "large": [(1, 512, 512), (2, 256, 384), (1, 1080, 1920)]}


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", list(FUSED_SHAPES))
@pytest.mark.parametrize("layer", list(LAYERS))
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_cuda_fused_pad_norm_and_fp32_image(cuda_op, layer, dtype, sizes):
    for i, (n, h, w) in enumerate(FUSED_SHAPES[sizes]):
        _check_cuda_fused(cuda_op, layer, n, h, w, dtype, channels_last=i % 2 == 1, seed=i)


@pytest.mark.gpu
def test_cuda_fused_conv1_matches_the_padded_cast_path_bit_for_bit(cuda_op):
    """Reading the fp32 image with the pad in the addressing is the old pad + cast + conv exactly."""
    x, w, _, _, _ = make_fused_inputs("conv1", 2, 64, 96, torch.bfloat16, "cuda")
    padded = F.pad(x, (4, 4, 4, 4), mode="reflect").to(torch.bfloat16, memory_format=torch.channels_last)
    torch.testing.assert_close(cuda_op(x, w, None, False, None, None, 4), cuda_op(padded, w, None, False),
                               rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_cuda_fused_head_norm_matches_the_norm_then_pad_path_bit_for_bit(cuda_op, dtype):
    """IN5 applied on load (one cvt.rn.relu per pair) writes the operand the norm op and pad wrote:
    the same kernel on that pre-padded operand gives the same bits."""
    x, w, b, scale, shift = make_fused_inputs("deconv3", 2, 48, 80, dtype, "cuda")
    padded = fused_operand(x, w, scale, shift).contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(cuda_op(x, w, b, True, scale, shift, 4), cuda_op(padded, w, b, True), rtol=0, atol=0)


@pytest.mark.gpu
def test_cuda_misaligned_and_nchw_inputs(cuda_op):
    x, w, b = make_inputs("conv1", 1, 20, 30, torch.float16, "cuda")
    nhwc = x.permute(0, 2, 3, 1).reshape(-1)
    base = torch.empty(nhwc.numel() + 1, dtype=x.dtype, device="cuda")
    base[1:].copy_(nhwc)
    view = base[1:].view(1, 28, 38, 3).permute(0, 3, 1, 2)    # channels_last at a 2-byte offset
    assert view.data_ptr() % 16 != 0
    for xin in (view, x.contiguous()):                         # misaligned, NCHW
        assert_matches_reference(cuda_op(xin, w, b, False), ref64(x, w, b), torch_same_dtype(x, w, b))


@pytest.mark.gpu
def test_cuda_graph_capture_and_replay(cuda_op):
    x, w, b = make_inputs("deconv3", 1, 64, 96, torch.bfloat16, "cuda")
    static_x = x.clone()
    cuda_op(static_x, w, b, True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = cuda_op(static_x, w, b, True)
    fresh, _, _ = make_inputs("deconv3", 1, 64, 96, torch.bfloat16, "cuda", seed=7)
    static_x.copy_(fresh)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(static_out, cuda_op(fresh, w, b, True), rtol=0, atol=0)


@pytest.mark.gpu
def test_cuda_opcheck(cuda_op):
    x, w, b = make_inputs("conv1", 2, 10, 12, torch.bfloat16, "cuda")
    torch.library.opcheck(cuda_op, (x, w, b, False))
    x, w, b = make_inputs("deconv3", 1, 10, 12, torch.float16, "cuda")
    torch.library.opcheck(cuda_op, (x, w, b, True))
    x, w, b, scale, shift = make_fused_inputs("deconv3", 2, 10, 12, torch.bfloat16, "cuda")
    torch.library.opcheck(cuda_op, (x, w, b, True, scale, shift, 4))
    x, w, _, _, _ = make_fused_inputs("conv1", 1, 10, 12, torch.float16, "cuda")
    torch.library.opcheck(cuda_op, (x, w, None, False, None, None, 4))


@pytest.mark.gpu
def test_cuda_misaligned_weight(cuda_op):
    """The kernels copy the weight in 16-byte chunks: a view at an odd offset is cloned first."""
    x, w, b = make_inputs("conv1", 1, 20, 30, torch.bfloat16, "cuda")
    base = torch.empty(w.numel() + 1, dtype=w.dtype, device="cuda")
    base[1:].copy_(w.reshape(-1))
    view = base[1:].view(w.shape)
    assert view.data_ptr() % 16 != 0
    torch.testing.assert_close(cuda_op(x, view, b, False), cuda_op(x, w, b, False), rtol=0, atol=0)


# (N, H, W) for conv9x9_norm on the GPU: odd sizes, batch 2, the 512² frame.
NORM_SHAPES = {"odd": (1, 17, 33), "min": (1, 5, 5), "batch 2": (2, 37, 70), "512": (1, 512, 512),
               "batch 2 at 256x384": (2, 256, 384)}


def _check_cuda_norm(n, h, w, dtype, image, seed=0):
    x, weight, (nw, nb), pad = make_norm_inputs(n, h, w, dtype, "cuda", seed=seed, image=image)
    state = kernels.norm_state(n, 32, "cuda")
    y, scale, shift = NORM_OP(x, weight, pad, nw, nb, 1e-5, state)
    torch.cuda.synchronize()
    assert not state.any(), "the hand-off must leave its state zero"
    torch.testing.assert_close(y, OP(x, weight, None, False, None, None, pad), rtol=0, atol=0)
    assert y.is_contiguous(memory_format=torch.channels_last) and scale.shape == shift.shape == (n, 32)
    # The statistics of the stored y: against the twin's fp32 ones and float64 ones.
    want_scale, want_shift = reference_conv3x3.norm_scale_shift(y, nw, nb, 1e-5)
    assert rel_error(scale, want_scale) <= 1e-4 and rel_error(shift, want_shift) <= 1e-4
    s64, t64 = scale_shift64(y, nw, nb)
    assert rel_error(scale, s64) <= 1e-4 and rel_error(shift, t64) <= 1e-4
    # The same with the weight pre-packed as the Hopper kernel's B image: the same bits of y (the
    # statistics' fp64 atomics may add in another order).
    y_p, scale_p, shift_p = NORM_OP(x, weight, pad, nw, nb, 1e-5, state, True, kernels.pack_conv1_weight(weight))
    assert torch.equal(y_p, y) and rel_error(scale_p, scale) <= 1e-6 and rel_error(shift_p, shift) <= 1e-6
    return x, weight, nw, nb, pad, (y, scale, shift)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", list(NORM_SHAPES))
@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("image", [True, False], ids=["fp32 image pad 4", "pre-padded pad 0"])
def test_cuda_norm_matches_conv9x9_and_the_twin(cuda_op, shape, dtype, image):
    n, h, w = NORM_SHAPES[shape]
    _check_cuda_norm(n, h, w, dtype, image, seed=h + w)


@pytest.mark.gpu
def test_cuda_norm_repeatable_on_one_state_and_in_a_cuda_graph(cuda_op):
    x, weight, nw, nb, pad, first = _check_cuda_norm(1, 256, 256, torch.bfloat16, True)
    state = kernels.norm_state(1, 32, "cuda")
    run = lambda: NORM_OP(x, weight, pad, nw, nb, 1e-5, state)
    assert_graph_replays_like_fresh_calls(run, first, x, state, repeats=5, changed=1)


@pytest.mark.gpu
def test_cuda_norm_entry_and_opcheck(cuda_op):
    x, weight, (nw, nb), pad = make_norm_inputs(2, 10, 12, torch.float16, "cuda")
    got = kernels.conv9x9_norm(x, weight, pad=pad, norm_weight=nw, norm_bias=nb)   # a fresh state per call
    for a, b in zip(got, NORM_OP(x, weight, pad, nw, nb, 1e-5, kernels.norm_state(2, 32, "cuda"))):
        assert torch.equal(a, b)
    torch.library.opcheck(NORM_OP, (x, weight, pad, nw, nb, 1e-5, kernels.norm_state(2, 32, "cuda")),
                          test_utils=("test_schema", "test_faketensor"))


# ---- conv1's two CUDA kernels: wgmma on Hopper, mma.sync elsewhere (STYLEFORGE_CONV1_KERNEL) ----

@pytest.mark.gpu
@requires_hopper
def test_cuda_conv1_runs_the_wgmma_kernel_on_hopper_and_mma_on_request(cuda_op, monkeypatch):
    x, w, b = make_inputs("conv1", 1, 40, 70, torch.bfloat16, "cuda")
    names = cuda_kernel_names(lambda: cuda_op(x, w, b, False))
    assert any("rgb_sm90_kernel" in n for n in names), names
    monkeypatch.setenv("STYLEFORGE_CONV1_KERNEL", "mma")
    names = cuda_kernel_names(lambda: cuda_op(x, w, b, False))
    assert any("rgb_kernel" in n for n in names) and not any("sm90" in n for n in names), names
    monkeypatch.setenv("STYLEFORGE_CONV1_KERNEL", "fast")
    with pytest.raises(RuntimeError, match="STYLEFORGE_CONV1_KERNEL must be auto or mma"):
        cuda_op(x, w, b, False)


@pytest.mark.gpu
@requires_hopper
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_cuda_conv1_mma_kernel_still_matches_reference_on_hopper(cuda_op, monkeypatch, dtype):
    """Every other conv1 GPU test runs the wgmma kernel here: this keeps the portable one covered."""
    monkeypatch.setenv("STYLEFORGE_CONV1_KERNEL", "mma")
    for n, h, w in EDGE[:5] + [(2, 256, 384)]:
        _check_cuda(cuda_op, "conv1", n, h, w, dtype)
    _check_cuda_fused(cuda_op, "conv1", 1, 130, 200, dtype, channels_last=True)
    _check_cuda_norm(2, 37, 70, dtype, True)


@pytest.mark.gpu
@requires_hopper
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_cuda_conv1_kernels_agree(cuda_op, monkeypatch, dtype):
    """The wgmma and mma.sync kernels differ only in the fp32 summation order: outputs within one
    rounding of each other, IN1's statistics to fp32 precision."""
    for n, h, w in [(1, 512, 512), (2, 67, 131)]:
        x, weight, (nw, nb), pad = make_norm_inputs(n, h, w, dtype, "cuda", seed=h)
        got = {}
        for kind in ("auto", "mma"):
            monkeypatch.setenv("STYLEFORGE_CONV1_KERNEL", kind)
            got[kind] = NORM_OP(x, weight, pad, nw, nb, 1e-5, kernels.norm_state(n, 32, "cuda"))
        (y, s, t), (y_mma, s_mma, t_mma) = got["auto"], got["mma"]
        step = torch.finfo(dtype).eps * y_mma.float().abs().clamp_min(1.0)
        assert ((y.float() - y_mma.float()).abs() <= step).all()
        assert rel_error(s, s_mma) <= 1e-5 and rel_error(t, t_mma) <= 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("layer", ["conv1", "deconv3"])
def test_cuda_l2_hints_change_no_value(cuda_op, monkeypatch, layer):
    """The 32-channel side's L2 hints (cache_hints.cuh: on where the activations fit L2, as here;
    STYLEFORGE_L2_HINT_BYTES=0 turns them off) change no value."""
    x, weight, b = make_inputs(layer, 2, 67, 131, torch.bfloat16, "cuda", seed=4)
    monkeypatch.delenv("STYLEFORGE_L2_HINT_BYTES", raising=False)
    hinted = cuda_op(x, weight, b, False)
    monkeypatch.setenv("STYLEFORGE_L2_HINT_BYTES", "0")
    assert torch.equal(cuda_op(x, weight, b, False), hinted)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_cuda_norm_keeps_the_variance_under_a_large_mean(cuda_op, dtype):
    """A bright, nearly flat image through positive weights: every channel's mean is hundreds of
    standard deviations; the statistics must not cancel the variance away."""
    g = torch.Generator().manual_seed(3)
    x = (240 + 10 * torch.rand(1, 3, 200, 300, generator=g)).cuda()
    weight = (torch.rand(32, 3, 9, 9, generator=g) / 243).to("cuda", dtype)
    nw, nb = torch.ones(32, device="cuda"), torch.zeros(32, device="cuda")
    y, scale, shift = NORM_OP(x, weight, 4, nw, nb, 1e-5, kernels.norm_state(1, 32, "cuda"))
    var, mean = torch.var_mean(y.double(), dim=(2, 3), unbiased=False)
    assert (mean.abs() > 100 * var.sqrt()).all()   # the case this test is about
    s64, t64 = scale_shift64(y, nw, nb)
    assert rel_error(scale, s64) <= 1e-4 and rel_error(shift, t64) <= 1e-4


# ---- the fused engine's choice (CPU) -----------------------------------------------------------

@pytest.mark.slow
def test_engine_records_a_choice_per_nine_by_nine_layer():
    from styleforge.engine.runner import FusedRunner
    from styleforge.models import TransformerNet
    runner = FusedRunner(TransformerNet().eval(), torch.device("cpu"), torch.bfloat16)
    runner(torch.rand(1, 3, 16, 20) * 255)
    choices = {name: c for (name, _), c in runner.layer_choices.items()}
    assert set(choices) == {"conv1", "deconv3"}
    assert all(c.provider == "cudnn" and "CUDA" in c.reason for c in choices.values())
