"""The sums hand-off between fused layers: a producer leaves fp64 Σx, Σx² of its output in a norm
state (conv9x9_norm / conv3x3_norm with affine=False), the consumer (conv3x3_norm,
conv3x3_residual_chain, conv9x9_from_sums with in_state) forms the InstanceNorm's affine from them
and leaves the state zero.

CPU (CI): the twin's sums (reference_norm_sums) against float64 statistics, each consumer twin
against the same layer given (scale, shift), named errors, the new op's registration (opcheck).
GPU (Hopper): each CUDA producer's sums against float64, each CUDA consumer against the (scale,
shift) path and float64 (odd sizes, batches, the 512² frame's planes, persistent grids that meet
several samples), the state left zero, repeat calls and CUDA graph replays.
"""
from __future__ import annotations

import pytest
import torch
from conftest import capture_in_graph, rel_error, requires_hopper

from styleforge import kernels
from styleforge.kernels.reference import conv3x3 as ref
from styleforge.kernels.reference import conv9x9 as ref9
from styleforge.kernels.reference import norm_sums as sums

kernels.register_ops()   # these tests call torch.ops.styleforge.* directly (kernels/library.py)

CONFIGS = {"res128": (128, 128, 1, 1), "dec128to64": (128, 64, 2, 1), "dec64to32": (64, 32, 2, 1),
           "enc32to64s2": (32, 64, 1, 2), "enc64to128s2": (64, 128, 1, 2)}


def raw_input(n, c, h, w, device="cpu", dtype=torch.bfloat16, seed=0, mean=3.0):
    """A raw convolution output (mean well away from 0: Σx²/n − mean² must keep the variance)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, c, h, w, generator=g) * 2 + mean).to(device, dtype).contiguous(
        memory_format=torch.channels_last)


def norm_params(c, device="cpu", seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(c, generator=g) + 0.5).to(device), (torch.randn(c, generator=g) * 0.5).to(device)


def scale_shift64(y, nw, nb, eps=1e-5):
    var, mean = torch.var_mean(y.double(), dim=(2, 3), unbiased=False)
    s = nw.double() * torch.rsqrt(var + eps)
    return s, nb.double() - mean * s


def state_totals(state, n, c):
    """(Σx, Σx²) over the state's copies, float64 (n, c) each."""
    total = sums._sums(state, n, c).sum(dim=0)
    return total[0], total[1]


def filled_state(y, spread=True):
    """A state holding y's sums the way the kernels leave them: spread over the copies (spread) or in copy 0."""
    n, c = y.shape[:2]
    state = kernels.norm_state(n, c, y.device)
    if spread:   # split the pixels' rows over the copies, as CTAs add to copy blockIdx % 8
        parts = torch.chunk(y.double(), sums.NORM_SUM_COPIES, dim=2)
        view = sums._sums(state, n, c)
        for k, part in enumerate(parts):
            view[k, 0] += part.sum(dim=(2, 3))
            view[k, 1] += (part * part).sum(dim=(2, 3))
    else:
        sums.add_sums(state, y)
    return state


# ---- CPU ------------------------------------------------------------------------------------

@pytest.mark.parametrize("spread", [True, False])
def test_sums_give_the_float64_affine_and_leave_the_state_zero(spread):
    y = raw_input(2, 32, 9, 13, mean=40.0)
    nw, nb = norm_params(32)
    state = filled_state(y, spread)
    s1, s2 = state_totals(state, 2, 32)
    yd = y.double()
    assert torch.allclose(s1, yd.sum(dim=(2, 3)), rtol=1e-12)
    assert torch.allclose(s2, (yd * yd).sum(dim=(2, 3)), rtol=1e-12)
    scale, shift = sums.take_affine(state, 2, 32, 9 * 13, nw, nb, 1e-5)
    s64, t64 = scale_shift64(y, nw, nb)
    assert scale.dtype == torch.float32 and rel_error(scale, s64) <= 1e-6 and rel_error(shift, t64) <= 1e-6
    assert not state.any()


@pytest.mark.parametrize("config", list(CONFIGS))
def test_twin_consumer_from_sums_equals_the_scale_shift_call(config):
    cin, cout, up, stride = CONFIGS[config]
    x = raw_input(2, cin, 6, 10, seed=cin)
    nw_in, nb_in = norm_params(cin, seed=2)
    g = torch.Generator().manual_seed(3)
    weight = ref.pack_weight((torch.randn(cout, cin, 3, 3, generator=g) / (cin * 9) ** 0.5).to(torch.bfloat16))
    nw, nb = norm_params(cout, seed=4)
    scale, shift = ref.norm_scale_shift(x, nw_in, nb_in)
    want = ref.conv3x3_norm(x, weight, scale, shift, None, True, up, False, nw, nb, 1e-5, True, stride)
    in_state, out_state = filled_state(x), kernels.norm_state(2, cout, "cpu")
    got = kernels.conv3x3_norm(x, weight, relu=True, upsample=up, stride=stride, norm_weight=nw, norm_bias=nb,
                               state=out_state, in_state=in_state, in_norm_weight=nw_in, in_norm_bias=nb_in,
                               affine=False)
    assert not in_state.any()
    assert rel_error(got[0], want[0]) <= 1e-2   # the affine to fp32 rounding; outputs rounded to bf16
    assert got[1].shape == (0, cout) and got[2].shape == (0, cout)
    s1, s2 = state_totals(out_state, 2, cout)
    o = got[0].double()
    assert torch.allclose(s1, o.sum(dim=(2, 3)), rtol=1e-9) and torch.allclose(s2, (o * o).sum(dim=(2, 3)), rtol=1e-9)


def test_twin_chain_and_head_from_sums():
    g = torch.Generator().manual_seed(5)
    x = raw_input(1, 128, 8, 12)
    nw3, nb3 = norm_params(128, seed=6)
    ws = [ref.pack_weight((torch.randn(128, 128, 3, 3, generator=g) / 34).to(torch.bfloat16)) for _ in range(2)]
    nws, nbs = [norm_params(128, seed=7 + i)[0] for i in range(2)], [norm_params(128, seed=9 + i)[1] for i in range(2)]
    scale, shift = ref.norm_scale_shift(x, nw3, nb3)
    want = ref.residual_chain(x, scale, shift, ws, nws, nbs)
    state = filled_state(x)
    got = kernels.conv3x3_residual_chain(x, None, None, ws, nws, nbs, in_state=state, in_norm_weight=nw3,
                                         in_norm_bias=nb3)
    assert not state.any()
    for a, b in zip(got, want):
        assert rel_error(a, b) <= 1e-2
    h = raw_input(2, 32, 20, 24, seed=11)
    nw5, nb5 = norm_params(32, seed=12)
    head_w = (torch.randn(3, 32, 9, 9, generator=g) / 51).to(torch.bfloat16)
    bias = torch.randn(3, generator=g)
    s5, t5 = ref.norm_scale_shift(h, nw5, nb5)
    want_head = ref9.conv9x9(h, head_w, bias, True, s5, t5, 4)
    state = filled_state(h)
    got_head = kernels.conv9x9_from_sums(h, head_w, bias, state, out_float32=True, pad=4, norm_weight=nw5,
                                         norm_bias=nb5)
    assert not state.any() and got_head.dtype == torch.float32
    assert rel_error(got_head, want_head) <= 1e-2


def test_twin_chain_leaves_its_last_norm_as_sums():
    g = torch.Generator().manual_seed(15)
    x = raw_input(2, 128, 8, 12)
    links = 4
    ws = [ref.pack_weight((torch.randn(128, 128, 3, 3, generator=g) / 34).to(torch.bfloat16)) for _ in range(links)]
    nws = [norm_params(128, seed=16 + i)[0] for i in range(links)]
    nbs = [norm_params(128, seed=20 + i)[1] for i in range(links)]
    scale, shift = ref.norm_scale_shift(x, *norm_params(128, seed=24))
    h, s_last, t_last, block_in = ref.residual_chain(x, scale, shift, ws, nws, nbs)
    out_state = kernels.norm_state(2, 128, "cpu")
    got = kernels.conv3x3_residual_chain(x, scale, shift, ws, nws, nbs, out_state=out_state)
    assert torch.equal(got[0], h) and torch.equal(got[3], block_in)
    assert got[1].shape == (0, 128) and got[2].shape == (0, 128)
    s, t = sums.take_affine(out_state, 2, 128, 8 * 12, nws[-1], nbs[-1], 1e-5)
    assert not out_state.any()
    assert rel_error(s, s_last) <= 1e-5 and rel_error(t, t_last) <= 1e-5
    with pytest.raises(ValueError, match="out_state needs at least 4 convolutions"):
        kernels.conv3x3_residual_chain(x, scale, shift, ws[:2], nws[:2], nbs[:2], out_state=out_state)


def test_twin_conv1_leaves_its_sums():
    g = torch.Generator().manual_seed(13)
    x = torch.rand(2, 3, 20, 28, generator=g) * 255
    w = (torch.randn(32, 3, 9, 9, generator=g) / 15).to(torch.bfloat16)
    state = kernels.norm_state(2, 32, "cpu")
    y, scale, shift = kernels.conv9x9_norm(x, w, pad=4, state=state, affine=False)
    assert scale.shape == (0, 32) and shift.shape == (0, 32)
    assert torch.equal(y, ref9.conv9x9(x, w, None, False, None, None, 4))
    s1, _ = state_totals(state, 2, 32)
    assert torch.allclose(s1, y.double().sum(dim=(2, 3)), rtol=1e-9)


@pytest.mark.parametrize("case, match", [
    ("scale_and_state", "scale/shift or in_state"),
    ("affine_without_state", "needs stats=True and a state"),
    ("small_in_state", "in_state must be"),
    ("chain_neither", "exactly one"),
    ("head_small_state", "state must be"),
    ("conv1_affine_without_state", "a state is needed"),
])
def test_named_errors(case, match):
    x = raw_input(2, 64, 6, 10)
    nw, nb = norm_params(128)
    weight = ref.pack_weight(torch.randn(128, 64, 3, 3).to(torch.bfloat16))
    scale, shift = ref.norm_scale_shift(x)
    with pytest.raises(ValueError, match=match):
        if case == "scale_and_state":
            kernels.conv3x3_norm(x, weight, scale, shift, stride=2, in_state=filled_state(x))
        elif case == "affine_without_state":
            kernels.conv3x3_norm(x, weight, scale, shift, stride=2, norm_weight=nw, norm_bias=nb, affine=False)
        elif case == "small_in_state":
            kernels.conv3x3_norm(x, weight, stride=2, in_state=kernels.norm_state(1, 64, "cpu"))
        elif case == "chain_neither":
            x128 = raw_input(1, 128, 4, 4)
            w128 = ref.pack_weight(torch.randn(128, 128, 3, 3).to(torch.bfloat16))
            kernels.conv3x3_residual_chain(x128, None, None, [w128, w128], [nw, nw], [nb, nb])
        elif case == "head_small_state":
            h = raw_input(1, 32, 12, 12)
            kernels.conv9x9_from_sums(h, torch.randn(3, 32, 9, 9).to(torch.bfloat16), None,
                                      kernels.norm_state(1, 16, "cpu"), pad=4)
        else:
            kernels.conv9x9_norm(torch.rand(1, 3, 16, 16), torch.randn(32, 3, 9, 9).to(torch.bfloat16), pad=4,
                                 affine=False)


def test_opcheck_from_sums_on_cpu():
    h = raw_input(1, 32, 12, 14)
    nw, nb = norm_params(32)
    torch.library.opcheck(torch.ops.styleforge.conv9x9_from_sums.default,
                          (h, torch.randn(3, 32, 9, 9).to(torch.bfloat16), torch.randn(3), True, 4, filled_state(h), nw,
                           nb, 1e-5), test_utils=("test_schema", "test_faketensor"))


# ---- GPU ------------------------------------------------------------------------------------

hopper = requires_hopper   # conftest: skips without an sm_90a GPU; `loaded` is conftest's fixture


# (n, h, w) of the layer's input: odd sizes and a batch of three; the 512² frame's plane; and two
# samples of it, so that the persistent grids (conv2, deconv2) visit several tiles and samples per CTA.
SHAPES = {"odd": (2, 9, 13), "batch3": (3, 24, 40), "frame": (1, None, None), "frame_x2": (2, None, None)}
FRAME_INPUT = {"res128": 128, "dec128to64": 128, "dec64to32": 256, "enc32to64s2": 512, "enc64to128s2": 256}


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("config", list(CONFIGS))
def test_cuda_conv3x3_sums_in_and_out(loaded, config, shape, dtype):
    cin, cout, up, stride = CONFIGS[config]
    n, h, w = SHAPES[shape]
    if h is None:
        h = w = FRAME_INPUT[config]
    x = raw_input(n, cin, h, w, "cuda", dtype, seed=h + w)
    nw_in, nb_in = norm_params(cin, "cuda", seed=2)
    g = torch.Generator().manual_seed(3)
    weight = ref.pack_weight((torch.randn(cout, cin, 3, 3, generator=g) / (cin * 9) ** 0.5).to("cuda", dtype))
    nw, nb = norm_params(cout, "cuda", seed=4)
    in_state, out_state = filled_state(x), kernels.norm_state(n, cout, "cuda")
    scale, shift = sums.take_affine(filled_state(x), n, cin, h * w, nw_in, nb_in, 1e-5)
    want = torch.ops.styleforge.conv3x3_norm(x, weight, scale, shift, None, True, up, False, nw, nb, 1e-5, True,
                                             stride)

    def run():
        return torch.ops.styleforge.conv3x3_norm(x, weight, None, None, None, True, up, False, nw, nb, 1e-5, True,
                                                 stride, out_state, in_state, nw_in, nb_in, False)

    got = run()
    torch.cuda.synchronize()
    assert not in_state.any(), "the consumer must leave the producer's state zero"
    assert got[1].shape == (0, cout)
    # The same affine up to fp32 rounding (rsqrt; the product order): the outputs agree to an ulp.
    assert rel_error(got[0], want[0]) <= 2e-3
    s1, s2 = state_totals(out_state, n, cout)   # fp64 sums of fp32 per-tile moments
    o = got[0].double()
    assert rel_error(s1, o.sum(dim=(2, 3))) <= 1e-6 and rel_error(s2, (o * o).sum(dim=(2, 3))) <= 1e-6
    # The consumer of those sums forms the float64 norm of this output.
    s, t = sums.take_affine(out_state, n, cout, o.shape[2] * o.shape[3], nw, nb, 1e-5)
    s64, t64 = scale_shift64(got[0], nw, nb)
    assert rel_error(s, s64) <= 1e-5 and rel_error(t, t64) <= 1e-5
    assert not out_state.any()
    # Repeated calls with a refilled input state give the same bits; so do the replays of a graph.
    for _ in range(3):
        in_state.copy_(filled_state(x))
        again = run()
        out_state.zero_()
        assert torch.equal(again[0], got[0])
    refill = filled_state(x)

    def graphed():
        in_state.copy_(refill)
        out_state.zero_()
        return run()

    graph, captured = capture_in_graph(graphed)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured[0], got[0]) and not in_state.any()


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("shape", [(1, 128, 128), (2, 9, 13)], ids=str)
def test_cuda_chain_from_sums(loaded, shape):
    n, h, w = shape
    g = torch.Generator().manual_seed(21)
    x = raw_input(n, 128, h, w, "cuda", seed=22)
    nw3, nb3 = norm_params(128, "cuda", seed=23)
    links = 4
    ws = [ref.pack_weight((torch.randn(128, 128, 3, 3, generator=g) / 34).to("cuda", torch.bfloat16))
          for _ in range(links)]
    nws = [norm_params(128, "cuda", seed=30 + i)[0] for i in range(links)]
    nbs = [norm_params(128, "cuda", seed=40 + i)[1] for i in range(links)]
    scale, shift = sums.take_affine(filled_state(x), n, 128, h * w, nw3, nb3, 1e-5)
    chain_state = kernels.chain_state(n, links, "cuda")
    want = torch.ops.styleforge.conv3x3_residual_chain(x, scale, shift, ws, nws, nbs, 1e-5, chain_state)
    in_state = filled_state(x)
    for _ in range(3):
        got = torch.ops.styleforge.conv3x3_residual_chain(x, None, None, ws, nws, nbs, 1e-5, chain_state, in_state,
                                                          nw3, nb3)
        torch.cuda.synchronize()
        assert not in_state.any() and not chain_state.any()
        for a, b in zip(got, want):
            assert rel_error(a, b) <= 2e-3
        in_state.copy_(filled_state(x))


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("links", [4, 10])
@pytest.mark.parametrize("shape", [(1, 128, 128), (2, 9, 13), (2, 128, 128)], ids=str)
def test_cuda_chain_out_state(loaded, shape, links):
    # The last link's sums left for the consumer (no last CTA): the same frames as the (scale, shift)
    # form, the sums of the returned output, and a state that serves the next launch in either form
    # (the persistent kernel's last barrier counter and sums are cleared by its next launch; (2, 128²)
    # runs the links as conv3x3_norm launches).
    n, h, w = shape
    g = torch.Generator().manual_seed(70 + links)
    x = raw_input(n, 128, h, w, "cuda", seed=71)
    ws = [ref.pack_weight((torch.randn(128, 128, 3, 3, generator=g) / 34).to("cuda", torch.bfloat16))
          for _ in range(links)]
    nws = [norm_params(128, "cuda", seed=80 + i)[0] for i in range(links)]
    nbs = [norm_params(128, "cuda", seed=100 + i)[1] for i in range(links)]
    scale, shift = sums.take_affine(filled_state(x), n, 128, h * w, *norm_params(128, "cuda", seed=72), 1e-5)
    chain_state, out_state = kernels.chain_state(n, links, "cuda"), kernels.norm_state(n, 128, "cuda")

    def chain(to_sums):
        return torch.ops.styleforge.conv3x3_residual_chain(x, scale, shift, ws, nws, nbs, 1e-5, chain_state, None,
                                                           None, None, out_state if to_sums else None)

    want = chain(False)
    for to_sums in (True, True, False, True, False):
        got = chain(to_sums)
        torch.cuda.synchronize()
        assert rel_error(got[0], want[0]) <= 2e-3 and rel_error(got[3], want[3]) <= 2e-3
        if not to_sums:
            assert rel_error(got[1], want[1]) <= 1e-5 and rel_error(got[2], want[2]) <= 1e-5
            assert not chain_state.any(), "the (scale, shift) form leaves the chain's state zero"
            continue
        assert got[1].shape == (0, 128)
        o = got[0].double()
        s1, s2 = state_totals(out_state, n, 128)
        assert rel_error(s1, o.sum(dim=(2, 3))) <= 1e-6 and rel_error(s2, (o * o).sum(dim=(2, 3))) <= 1e-6
        s, t = sums.take_affine(out_state, n, 128, h * w, nws[-1], nbs[-1], 1e-5)
        assert rel_error(s, want[1]) <= 1e-5 and rel_error(t, want[2]) <= 1e-5
        assert not out_state.any()
    # And in a CUDA graph, replayed: the consumer's part (clearing out_state) done between replays.
    graph, captured = capture_in_graph(lambda: chain(True))
    for _ in range(3):
        out_state.zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert rel_error(captured[0], want[0]) <= 2e-3
        s, _ = sums.take_affine(out_state, n, 128, h * w, nws[-1], nbs[-1], 1e-5)
        assert rel_error(s, want[1]) <= 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 2])
def test_cuda_conv1_sums_and_head_from_sums(loaded, n):
    g = torch.Generator().manual_seed(50 + n)
    x = (torch.rand(n, 3, 256, 320, generator=g) * 255).cuda()
    w1 = (torch.randn(32, 3, 9, 9, generator=g) / 15).to("cuda", torch.bfloat16)
    state = kernels.norm_state(n, 32, "cuda")
    y, scale, shift = kernels.conv9x9_norm(x, w1, pad=4, state=state, affine=False)
    assert scale.shape == (0, 32) and shift.shape == (0, 32)
    assert torch.equal(y, kernels.conv9x9(x, w1, pad=4))
    s1, s2 = state_totals(state, n, 32)
    yd = y.double()
    assert rel_error(s1, yd.sum(dim=(2, 3))) <= 1e-6 and rel_error(s2, (yd * yd).sum(dim=(2, 3))) <= 1e-6
    # The head reads such sums (here of a deconv2-like output, 256×320 → many tiles per block).
    h = raw_input(n, 32, 256, 320, "cuda", seed=60)
    nw5, nb5 = norm_params(32, "cuda", seed=61)
    head_w = (torch.randn(3, 32, 9, 9, generator=g) / 51).to("cuda", torch.bfloat16)
    bias = torch.randn(3, generator=g).cuda()
    s5, t5 = sums.take_affine(filled_state(h), n, 32, 256 * 320, nw5, nb5, 1e-5)
    want = kernels.conv9x9(h, head_w, bias, out_float32=True, scale=s5, shift=t5, pad=4)
    in_state = filled_state(h)
    packed = kernels.pack_head_weight(head_w)
    for call in range(4):   # the last two with the weight pre-packed (the engine's form): the same bits
        got = kernels.conv9x9_from_sums(h, head_w, bias, in_state, out_float32=True, pad=4, norm_weight=nw5,
                                        norm_bias=nb5, packed_weight=packed if call >= 2 else None)
        torch.cuda.synchronize()
        assert not in_state.any()
        assert rel_error(got, want) <= 1e-3
        if call == 0:
            first = got
        else:
            assert torch.equal(got, first)
        in_state.copy_(filled_state(h))


@pytest.mark.gpu
@hopper
def test_engine_sums_handoff_plan_is_the_network_and_replays(loaded):
    """The fused plan (the sums hand-off between every two layers) within 2x the eager bf16 error,
    on the first (eager, choosing) and the replayed calls, and every sums state left zero."""
    from conftest import random_net

    from styleforge.engine.runner import FusedRunner
    from styleforge.switches import Switches
    model = random_net(4).cuda()
    runner = FusedRunner(model, torch.device("cuda"), torch.bfloat16, settings=Switches(conv3x3="on"))
    states = None
    for seed in range(3):   # the first call chooses conv1's and the head's kernels, then replays
        x = torch.rand(1, 3, 256, 256, device="cuda", generator=torch.Generator("cuda").manual_seed(seed)) * 255
        with torch.no_grad():
            ref = model(x)
            eager = model.to(torch.bfloat16)(x.to(torch.bfloat16)).float()
            model.float()
        assert rel_error(runner(x), ref) <= 2 * rel_error(eager, ref)
        states = runner.context.sum_states()
        torch.cuda.synchronize()
        assert len(states) >= 3 and not any(s.any() for s in states)
