"""The fused InstanceNorm op: its twin against an independent float64 composition, the op's
registrations (opcheck, fake, autograd, the reference|cuda switch), and — on a GPU — the
CUDA kernel against float64 under the tolerance policy of conftest.py.

The float64 oracle is built from PyTorch's own pieces (F.instance_norm, +, relu,
F.interpolate nearest, F.pad reflect), not from the twin's code.
"""
from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_matches_reference, cuda_kernel_names, rel_error
from op_recorder import OpRecorder

from styleforge import kernels
from styleforge.kernels.reference import instance_norm as reference

kernels.register_ops()   # these tests call torch.ops.styleforge.* directly (kernels/library.py)

OP = torch.ops.styleforge.instance_norm.default
LOW = (torch.bfloat16, torch.float16)


def _instance_norm(x, weight, bias, eps):
    if x.shape[2] * x.shape[3] > 1:
        return F.instance_norm(x, weight=weight, bias=bias, eps=eps)
    # F.instance_norm refuses 1×1 planes; there the centred value is 0, so y = bias exactly.
    y = torch.zeros_like(x)
    return y if bias is None else y + bias.view(1, -1, 1, 1)


def composed64(x, weight=None, bias=None, residual=None, eps=1e-5, relu=False, pad=0, upsample=1):
    as64 = (lambda t: None if t is None else t.double())
    y = _instance_norm(x.double(), as64(weight), as64(bias), eps)
    if residual is not None:
        y = y + residual.double()
    if relu:
        y = torch.relu(y)
    if upsample != 1:
        y = F.interpolate(y, scale_factor=upsample, mode="nearest")
    if pad:
        y = F.pad(y, (pad,) * 4, mode="reflect")
    return y


def torch_same_dtype(x, weight=None, bias=None, residual=None, eps=1e-5, relu=False, pad=0, upsample=1):
    """PyTorch's own computation in x's dtype: the yardstick of the low-precision rule."""
    cast = (lambda t: None if t is None else t.to(x.dtype))
    y = _instance_norm(x, cast(weight), cast(bias), eps)
    if residual is not None:
        y = y + residual
    if relu:
        y = torch.relu(y)
    if upsample != 1:
        y = F.interpolate(y, scale_factor=upsample, mode="nearest")
    return F.pad(y, (pad,) * 4, mode="reflect") if pad else y


def make_inputs(shape, dtype=torch.float32, device="cpu", channels_last=False, affine="both",
                residual=None, mean=60.0, std=25.0, seed=0):
    """Fresh random x with a non-zero mean (the network works in 0–255), and the options. Drawn on
    `device` by a generator there, so that a GPU test's large planes are not drawn on the CPU and
    copied over."""
    g = torch.Generator(device).manual_seed(seed)
    draw = (lambda f, size, dt=torch.float32: f(size, generator=g, dtype=dt, device=device))
    n, c, h, w = shape
    x = (draw(torch.randn, shape, torch.float64) * std + mean).to(dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    weight = draw(torch.rand, (c,)) + 0.5 if affine in ("both", "weight") else None
    bias = draw(torch.randn, (c,)) if affine == "both" else None
    res = None
    if residual == "contiguous":
        res = draw(torch.randn, shape).to(dtype)
    elif residual == "strided":   # the interior of a padded tensor, as the engine passes it
        padded = draw(torch.randn, (n, c, h + 2, w + 2)).to(dtype)
        if channels_last:
            padded = padded.contiguous(memory_format=torch.channels_last)
        res = padded[..., 1:-1, 1:-1]
    return x, weight, bias, res


COMBOS = list(itertools.product((False, True), (None, "contiguous", "strided"), (0, 1, 4), (1, 2),
                                ("none", "both", "weight")))
EDGE_SHAPES = {
    "B=1 C=32": (1, 32, 8, 8),
    "batch 3 odd H/W": (3, 5, 7, 9),
    "1x1 plane": (2, 3, 1, 1),
    "not divisible by 4": (1, 64, 6, 10),
    "C=128 quarter scale": (1, 128, 5, 6),
    "C=3 wide": (1, 3, 2, 37),
}


# ---- the twin (CPU, CI) ---------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_reference_matches_float64_for_every_option(channels_last):
    for relu, residual, pad, upsample, affine in COMBOS:
        x, w, b, r = make_inputs((2, 4, 6, 5), channels_last=channels_last, affine=affine, residual=residual)
        label = f"relu={relu} residual={residual} pad={pad} upsample={upsample} affine={affine}"
        out = reference.instance_norm(x, w, b, r, 1e-5, relu, pad, upsample)
        assert out.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format), label
        assert rel_error(out, composed64(x, w, b, r, 1e-5, relu, pad, upsample)) <= 1e-6, label


@pytest.mark.parametrize("label", list(EDGE_SHAPES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_reference_edge_shapes(label, dtype):
    shape = EDGE_SHAPES[label]
    pad = 0 if shape[2] == 1 else min(2, shape[2] - 1)
    for channels_last in (False, True):
        x, w, b, r = make_inputs(shape, dtype, channels_last=channels_last, residual="strided")
        args = (x, w, b, r, 1e-5, True, pad, 2 if shape[2] > 1 else 1)
        assert_matches_reference(reference.instance_norm(*args), composed64(*args),
                                 torch_same_dtype(*args) if dtype in LOW else None)


def test_reference_keeps_precision_with_a_large_mean():
    x, w, b, _ = make_inputs((1, 8, 16, 16), mean=200.0, std=2.0)
    assert rel_error(reference.instance_norm(x, w, b), composed64(x, w, b)) <= 1e-5


BAD_ARGS = {
    "x not 4-D": (dict(x=torch.zeros(2, 3, 4)), "4-D"),
    "int dtype": (dict(x=torch.zeros(1, 2, 4, 4, dtype=torch.int32)), "dtype"),
    "float64": (dict(x=torch.zeros(1, 2, 4, 4, dtype=torch.float64)), "unsupported"),
    "pad too large": (dict(pad=4), "pad"),
    "pad out of range": (dict(pad=5), "0..4"),
    "upsample 3": (dict(upsample=3), "upsample"),
    "weight shape": (dict(weight=torch.ones(3)), "weight"),
    "bias shape": (dict(bias=torch.ones(2, 1)), "bias"),
    "residual shape": (dict(residual=torch.zeros(1, 2, 4, 5)), "residual"),
    "residual dtype": (dict(residual=torch.zeros(1, 2, 4, 4, dtype=torch.float16)), "residual"),
    "negative eps": (dict(eps=-1.0), "eps"),
}


@pytest.mark.parametrize("label", list(BAD_ARGS))
def test_bad_arguments_are_named(label):
    overrides, needle = BAD_ARGS[label]
    args = dict(x=torch.zeros(1, 2, 4, 4), weight=None, bias=None, residual=None, eps=1e-5, relu=False,
                pad=1, upsample=1)
    args.update(overrides)
    with pytest.raises(ValueError, match=needle):
        OP(*args.values())


# ---- the op's registrations (CPU, CI) -------------------------------------------------------

def _opcheck_samples():
    x, w, b, r = make_inputs((2, 3, 5, 6), residual="strided")
    xc, wc, bc, rc = make_inputs((1, 8, 4, 4), channels_last=True, residual="contiguous", seed=1)
    xb, _, _, rb = make_inputs((1, 4, 3, 5), torch.bfloat16, residual="contiguous", seed=2)
    return [
        (x, w, b, r, 1e-5, True, 2, 2),
        (xc, wc, bc, rc, 1e-5, False, 1, 1),
        (xb, None, None, rb, 1e-3, True, 0, 2),
        (x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_(), r, 1e-5,
         True, 1, 2),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(4))
def test_opcheck(index):
    torch.library.opcheck(OP, _opcheck_samples()[index])


def test_backward_equals_autograd_through_the_twin():
    x, w, b, r = make_inputs((2, 3, 5, 4), residual="contiguous")
    leaves = [t.clone().requires_grad_() for t in (x, w, b, r)]
    grad = torch.randn(2, 3, 12, 10)
    torch.autograd.backward(OP(*leaves, 1e-5, True, 1, 2), grad)
    twin = [t.clone().requires_grad_() for t in (x, w, b, r)]
    torch.autograd.backward(reference.instance_norm(*twin, 1e-5, True, 1, 2), grad)
    for got, want in zip(leaves, twin):
        torch.testing.assert_close(got.grad, want.grad)


def test_fake_impl_matches_real_shape_and_strides():
    from torch._subclasses.fake_tensor import FakeTensorMode
    for channels_last in (False, True):
        x, w, b, r = make_inputs((2, 5, 6, 7), channels_last=channels_last, residual="strided")
        real = OP(x, w, b, r, 1e-5, True, 3, 2)
        with FakeTensorMode() as mode:
            fake = OP(mode.from_tensor(x), mode.from_tensor(w), mode.from_tensor(b), mode.from_tensor(r),
                      1e-5, True, 3, 2)
        assert fake.shape == real.shape and fake.stride() == real.stride() and fake.dtype == real.dtype


def test_switch_routes_between_op_and_twin():
    x, w, b, _ = make_inputs((1, 2, 4, 4))
    assert kernels.current_mode() == "cuda"
    with OpRecorder() as rec:
        via_op = kernels.instance_norm(x, w, b, relu=True, pad=1)
    assert rec.ops == ["styleforge.instance_norm.default"]
    with kernels.using("reference"):
        assert kernels.current_mode() == "reference"
        with OpRecorder() as rec:
            via_twin = kernels.instance_norm(x, w, b, relu=True, pad=1)
        assert "styleforge.instance_norm.default" not in rec.ops
    assert kernels.current_mode() == "cuda"
    torch.testing.assert_close(via_op, via_twin, rtol=0, atol=0)
    with pytest.raises(ValueError, match="mode"):
        kernels.use("triton")


def test_cuda_kernels_unavailable_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    ok, reason = kernels.cuda_kernels_available()
    assert not ok and "CUDA" in reason


# ---- the CUDA kernel (GPU) ------------------------------------------------------------------

@pytest.fixture(scope="module")
def cuda_op():
    ok, reason = kernels.cuda_kernels_available()
    assert ok, reason     # on a GPU machine a failed build is a failure, not a skip
    return OP


# Both CUDA paths run every GPU test below: three launches (statistics, finalize, apply) and the
# single cooperative launch. Where the single launch cannot run (NCHW, C not a multiple of 16 bytes,
# N·C > 512, ...) "single" falls back to three launches.
PATHS = ["split", "single"]


@pytest.fixture(params=PATHS)
def kernel_path(request, monkeypatch):
    monkeypatch.setenv("STYLEFORGE_INSTANCE_NORM_PATH", request.param)
    return request.param


def _check_cuda(op, shape, dtype, channels_last, relu, residual, pad, upsample, affine="both",
                mean=60.0, std=25.0, seed=0):
    x, w, b, r = make_inputs(shape, dtype, "cuda", channels_last, affine, residual, mean, std, seed)
    args = (x, w, b, r, 1e-5, relu, pad, upsample)
    out = op(*args)
    expect_format = torch.channels_last if channels_last and not x.is_contiguous() else torch.contiguous_format
    assert out.is_contiguous(memory_format=expect_format)
    return assert_matches_reference(out, composed64(*args), torch_same_dtype(*args) if dtype in LOW else None)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("batch", [2, 1])
def test_cuda_every_option(cuda_op, kernel_path, dtype, channels_last, batch):
    for relu, residual, pad, upsample, affine in COMBOS:
        _check_cuda(cuda_op, (batch, 32, 9, 14), dtype, channels_last, relu, residual, pad, upsample, affine)


@pytest.mark.gpu
@pytest.mark.parametrize("label", list(EDGE_SHAPES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_cuda_edge_shapes(cuda_op, kernel_path, label, dtype, channels_last):
    shape = EDGE_SHAPES[label]
    pad = 0 if shape[2] == 1 else min(2, shape[2] - 1)
    _check_cuda(cuda_op, shape, dtype, channels_last, True, "strided", pad, 2 if shape[2] > 1 else 1)


LARGE = {
    "1080p plane C=32": ((1, 32, 1080, 1920), torch.bfloat16, True, 1, 1),
    "1080p plane NCHW": ((1, 32, 1080, 1920), torch.float16, False, 1, 1),
    "4K-ish plane fp32": ((1, 4, 2160, 3840), torch.float32, True, 4, 1),
    "4K-ish NCHW fp32": ((1, 4, 2160, 3840), torch.float32, False, 1, 1),
    "1/4 scale 4K, upsample": ((2, 128, 540, 960), torch.bfloat16, True, 1, 2),
    "rows beyond grid.y (NCHW)": ((1, 70000, 1, 1), torch.float32, False, 0, 1),
    "rows beyond grid.y (channels_last)": ((1, 8, 70000, 2), torch.bfloat16, True, 1, 1),
}


@pytest.mark.gpu
@pytest.mark.parametrize("label", list(LARGE))
def test_cuda_large_planes(cuda_op, kernel_path, label):
    shape, dtype, channels_last, pad, upsample = LARGE[label]
    _check_cuda(cuda_op, shape, dtype, channels_last, True, "strided", pad, upsample)


@pytest.mark.gpu
def test_cuda_large_mean_keeps_fp32_precision(cuda_op, kernel_path):
    # mean/std = 1000: a naive E[x²] − E[x]² in fp32 loses every digit here.
    _check_cuda(cuda_op, (1, 16, 256, 320), torch.float32, True, False, None, 1, 1, mean=1000.0, std=1.0)
    _check_cuda(cuda_op, (1, 16, 256, 320), torch.float32, False, False, None, 1, 1, mean=-500.0, std=0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_cuda_poisoned_memory_is_fully_overwritten_and_deterministic(cuda_op, kernel_path, channels_last):
    x, w, b, r = make_inputs((1, 64, 270, 480), torch.bfloat16, "cuda", channels_last, residual="strided")
    outs = []
    for _ in range(2):
        poison = torch.full((64 << 20,), float("nan"), device="cuda")   # 256 MB of NaN, then freed
        del poison
        outs.append(cuda_op(x, w, b, r, 1e-5, True, 1, 2))
        assert not torch.isnan(outs[-1]).any()
    assert torch.equal(outs[0], outs[1]), "two runs differ: the kernel must be deterministic"


@pytest.mark.gpu
def test_cuda_misaligned_inputs(cuda_op, kernel_path):
    base = (torch.randn(1 + 2 * 3 * 17 * 23, device="cuda") * 20 + 30).half()
    x = base[1:].view(2, 3, 17, 23)     # 2-byte offset: 16-byte vector loads must not be used blindly
    assert x.data_ptr() % 16 != 0
    args = (x, None, None, None, 1e-5, True, 2, 1)
    assert_matches_reference(cuda_op(*args), composed64(*args), torch_same_dtype(*args))
    xc = base[1:1 + 2 * 16 * 5 * 7].view(2, 5, 7, 16).permute(0, 3, 1, 2)   # channels_last, misaligned
    args = (xc, None, None, None, 1e-5, False, 1, 2)
    assert_matches_reference(cuda_op(*args), composed64(*args), torch_same_dtype(*args))


@pytest.mark.gpu
def test_cuda_graph_capture_and_replay(cuda_op, kernel_path):
    x, w, b, r = make_inputs((1, 32, 64, 96), torch.bfloat16, "cuda", True, residual="strided")
    static_x = x.clone()
    cuda_op(static_x, w, b, r, 1e-5, True, 1, 2)    # warm-up outside capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = cuda_op(static_x, w, b, r, 1e-5, True, 1, 2)
    fresh, _, _, _ = make_inputs((1, 32, 64, 96), torch.bfloat16, "cuda", True, seed=7)
    static_x.copy_(fresh)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(static_out, cuda_op(fresh, w, b, r, 1e-5, True, 1, 2), rtol=0, atol=0)


@pytest.mark.gpu
def test_cuda_opcheck(cuda_op, kernel_path):
    x, w, b, r = make_inputs((2, 16, 6, 10), torch.float32, "cuda", True, residual="strided")
    torch.library.opcheck(cuda_op, (x, w, b, r, 1e-5, True, 1, 2))


SINGLE_CASES = {   # shape, dtype, residual, pad, upsample, path → the one kernel expected, or 3 launches
    "auto, < 6 MB → three": ((1, 128, 128, 128), torch.bfloat16, None, 1, 1, "auto", 3),
    "auto, 8.4 MB": ((1, 64, 256, 256), torch.bfloat16, None, 1, 1, "auto", "single_nhwc"),
    "auto, 16.8 MB": ((1, 32, 512, 512), torch.bfloat16, None, 1, 1, "auto", "single_nhwc"),
    "auto, residual, 4 MB → three": ((1, 128, 128, 128), torch.float16, "strided", 0, 1, "auto", 3),
    "auto, batch 2, fp32 upsample": ((2, 64, 96, 160), torch.float32, None, 1, 2, "auto", "single_nhwc"),
    "auto, > 24 MB → three": ((1, 32, 544, 1024), torch.bfloat16, None, 1, 1, "auto", 3),
    "single, small, residual": ((1, 128, 32, 32), torch.float16, "strided", 0, 1, "single", "single_nhwc"),
    "single, upsample, odd": ((1, 64, 33, 17), torch.bfloat16, None, 1, 2, "single", "single_nhwc"),
    "single, N·C > 512 → three": ((5, 128, 6, 6), torch.bfloat16, None, 1, 1, "single", 3),
    "single, C=3 (no vectors) → three": ((1, 3, 40, 40), torch.bfloat16, None, 1, 1, "single", 3),
    "split forced": ((1, 32, 128, 128), torch.bfloat16, None, 1, 1, "split", 3),
}


@pytest.mark.gpu
@pytest.mark.parametrize("label", list(SINGLE_CASES))
def test_cuda_path_choice_and_launch_count(cuda_op, monkeypatch, label):
    shape, dtype, residual, pad, upsample, path, launches = SINGLE_CASES[label]
    monkeypatch.setenv("STYLEFORGE_INSTANCE_NORM_PATH", path)
    x, w, b, r = make_inputs(shape, dtype, "cuda", True, residual=residual)
    args = (x, w, b, r, 1e-5, True, pad, upsample)
    cuda_op(*args)   # warm-up: occupancy query, allocator
    names = cuda_kernel_names(lambda: cuda_op(*args))
    if launches == 3:
        assert len(names) == 3, names
    else:
        assert len(names) == 1 and launches in names[0], names
    assert_matches_reference(cuda_op(*args), composed64(*args), torch_same_dtype(*args) if dtype in LOW else None)


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 2])
def test_cuda_single_and_split_paths_agree(cuda_op, monkeypatch, batch):
    # Same formula, statistics differing only in how many partials a plane is cut into.
    x, w, b, r = make_inputs((batch, 64, 96, 80), torch.float32, "cuda", True, residual="strided")
    outs = {}
    for path in PATHS:
        monkeypatch.setenv("STYLEFORGE_INSTANCE_NORM_PATH", path)
        outs[path] = cuda_op(x, w, b, r, 1e-5, True, 1, 2)
    assert rel_error(outs["single"], outs["split"]) < 2e-6


@pytest.mark.gpu
def test_cuda_bad_path_setting_is_named(cuda_op, monkeypatch):
    monkeypatch.setenv("STYLEFORGE_INSTANCE_NORM_PATH", "fast")
    x, w, b, r = make_inputs((1, 8, 4, 4), torch.float32, "cuda", True)
    with pytest.raises(RuntimeError, match="STYLEFORGE_INSTANCE_NORM_PATH"):
        cuda_op(x, w, b, r, 1e-5, False, 0, 1)
