"""The fused engine (engine/fused.py) equals the reference network.

CPU (CI): the plan — pre-padded convolutions, conv biases dropped before norms, the residual
read from the padded tensor's interior, upsample and pad folded into the norms — run eagerly
through the op's twin, against the plain `TransformerNet`. GPU: the real thing with CUDA
graphs: fp32 within a tight tolerance, bf16/fp16 within 2× the eager same-dtype error on
random weights and ≥ 40 dB PSNR on real photos with a trained style, the graph cache, CPU
(pinned) inputs, and the `fused` backend through the pipeline.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import psnr, random_net, rel_error

from styleforge.engine.runner import FusedRunner
from styleforge.models import TransformerNet
from styleforge.switches import Switches

ASSETS = Path(__file__).resolve().parents[2] / "styleforge" / "assets"
STYLES = Path(__file__).resolve().parents[2] / "styleforge" / "styles"
FUSED_FP32_REL_TOL = 1e-4    # 16 convolutions in fp32 (TF32 off), summation orders differ


def _image(shape, seed=0, device="cpu"):
    """0–255 with smooth structure plus noise, like a photo rather than white noise."""
    g = torch.Generator().manual_seed(seed)
    n, c, h, w = shape
    smooth = torch.nn.functional.interpolate(torch.rand(n, c, h // 4 + 1, w // 4 + 1, generator=g),
                                             size=(h, w), mode="bilinear", align_corners=False)
    return (smooth * 200 + torch.rand(shape, generator=g) * 55).to(device)


@torch.no_grad()
def _reference(model, x, dtype=torch.float32, device="cpu"):
    memory_format = torch.channels_last if device != "cpu" else torch.contiguous_format
    net = _model_copy(model).to(device=device, dtype=dtype, memory_format=memory_format)
    return net(x.to(device, dtype).contiguous(memory_format=memory_format)).float()


def _model_copy(model):
    copy = TransformerNet()
    copy.load_state_dict(model.state_dict())
    return copy.eval()


# ---- CPU: the plan ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 3, 16, 16), (2, 3, 20, 28), (1, 3, 8, 12)],
                         ids=["16x16", "batch2-20x28", "smallest-8x12"])
def test_plan_equals_reference_network_on_cpu(shape):
    model = random_net(0)
    x = _image(shape)
    out = FusedRunner(model, torch.device("cpu"), torch.float32)(x)
    assert out.dtype == torch.float32 and out.shape == shape
    assert rel_error(out, _reference(model, x)) <= 1e-5


@pytest.mark.slow
def test_plan_bf16_error_within_twice_eager_bf16_on_cpu():
    model = random_net(1)
    x = _image((1, 3, 32, 32), seed=1)
    ref = _reference(model, x)
    fused = FusedRunner(model, torch.device("cpu"), torch.bfloat16)(x)
    eager = _reference(model, x, torch.bfloat16)
    assert rel_error(fused, ref) <= 2 * rel_error(eager, ref)


@pytest.mark.parametrize("shape", [(1, 3, 18, 16), (1, 3, 4, 16), (1, 1, 16, 16)],
                         ids=["not multiple of 4", "too small", "not RGB"])
def test_runner_rejects_bad_shapes(shape):
    runner = FusedRunner(random_net(0), torch.device("cpu"), torch.float32)
    with pytest.raises(ValueError, match="FusedRunner"):
        runner(torch.zeros(shape))


# ---- GPU ---------------------------------------------------------------------------------------

@pytest.fixture
def exact_fp32():
    """fp32 means fp32 here: no TF32 in cuDNN or matmuls while comparing."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.fixture(scope="module")
def kernels_loaded():
    from styleforge import kernels
    ok, reason = kernels.cuda_kernels_available()
    assert ok, reason


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 3, 64, 96), (2, 3, 128, 128), (1, 3, 36, 52)])
def test_fused_fp32_equals_reference(kernels_loaded, exact_fp32, shape):
    model = random_net(0)
    x = _image(shape, device="cuda")
    out = FusedRunner(model, torch.device("cuda"), torch.float32)(x)
    err = rel_error(out, _reference(model, x, device="cuda"))
    assert err <= FUSED_FP32_REL_TOL, f"fp32 fused vs reference: {err:.3g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_fused_low_precision_within_twice_eager(kernels_loaded, exact_fp32, dtype):
    model = random_net(1)
    x = _image((1, 3, 256, 256), seed=1, device="cuda")
    ref = _reference(model, x, device="cuda")
    fused = FusedRunner(model, torch.device("cuda"), dtype)(x)
    eager = _reference(model, x, dtype, device="cuda")
    assert rel_error(fused, ref) <= max(2 * rel_error(eager, ref), 1e-3)


def _photo(path: Path) -> torch.Tensor:
    import numpy as np
    from PIL import Image
    array = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32)
    return torch.from_numpy(array.copy()).permute(2, 0, 1).unsqueeze(0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_fused_psnr_on_real_photos_with_a_trained_style(kernels_loaded, exact_fp32, dtype):
    from styleforge.engine.pipeline import pad_for_network
    from styleforge.models.checkpoint import build_model, load_checkpoint
    styles = sorted(STYLES.glob("*.safetensors"))
    photos = sorted(ASSETS.glob("*.jpg"))
    if not styles or not photos:
        pytest.skip("needs a trained style in styleforge/styles/ and photos in styleforge/assets/")
    model = build_model(load_checkpoint(styles[0]))
    runner = FusedRunner(model, torch.device("cuda"), dtype)
    for photo in photos:
        content = _photo(photo)
        h, w = content.shape[-2:]
        x = pad_for_network(content).cuda()
        ref = _reference(model, x, device="cuda")[..., :h, :w].clamp(0, 255)
        out = runner(x)[..., :h, :w].clamp(0, 255)
        value = psnr(out, ref)
        assert value >= 40.0, f"{photo.name} with {styles[0].stem} in {dtype}: PSNR {value:.1f} dB"


@pytest.mark.gpu
def test_graph_cache_reuses_captures_per_shape(kernels_loaded, exact_fp32):
    # A shape's first call runs eagerly (no plan timing, no capture: a folder of one-off sizes
    # stays cheap); its second captures, and later ones replay.
    model = random_net(0)
    runner = FusedRunner(model, torch.device("cuda"), torch.float32)
    a, b = _image((1, 3, 64, 64), 0, "cuda"), _image((1, 3, 64, 64), 1, "cuda")
    out_a = runner(a)
    assert runner.captures == 0, "a shape seen once must not be captured"
    out_b = runner(b)
    assert runner.captures == 1, "a repeated shape must be captured"
    assert rel_error(out_b, _reference(model, b, device="cuda")) <= FUSED_FP32_REL_TOL
    assert rel_error(out_a, _reference(model, a, device="cuda")) <= FUSED_FP32_REL_TOL, \
        "an earlier result must not be overwritten by a later call"
    batch = torch.cat([a, b])
    out_batch = runner(batch)
    runner(_image((1, 3, 32, 48), 2, "cuda"))
    assert runner.captures == 1
    assert rel_error(out_batch, _reference(model, batch, device="cuda")) <= FUSED_FP32_REL_TOL
    assert rel_error(runner(batch), out_batch) <= FUSED_FP32_REL_TOL
    assert runner.captures == 2
    runner(a)
    assert runner.captures == 2


@pytest.mark.gpu
def test_cpu_inputs_go_through_pinned_memory(kernels_loaded, exact_fp32):
    model = random_net(0)
    runner = FusedRunner(model, torch.device("cuda"), torch.float32)
    x = _image((1, 3, 48, 64))
    outs = [runner(x), runner(x * 0.5)]
    assert all(o.is_cuda for o in outs)
    assert rel_error(outs[0], _reference(model, x, device="cuda")) <= FUSED_FP32_REL_TOL
    assert rel_error(outs[1], _reference(model, x * 0.5, device="cuda")) <= FUSED_FP32_REL_TOL


@pytest.mark.gpu
def test_fused_backend_through_the_pipeline(kernels_loaded, exact_fp32, tiny_styles):
    from styleforge.engine.options import StylizeOptions
    from styleforge.engine.pipeline import Stylizer
    checkpoint = str(tiny_styles / "alpha.safetensors")
    content = _image((1, 3, 50, 70))   # not a multiple of 4: the pipeline pads and crops
    fused = Stylizer(StylizeOptions(checkpoint=checkpoint, device="cuda", precision="fp32", backend="fused"))
    plain = Stylizer(StylizeOptions(checkpoint=checkpoint, device="cuda", precision="fp32", backend="reference"))
    assert isinstance(fused.runner, FusedRunner)
    assert psnr(fused(content), plain(content)) >= 60.0


@pytest.mark.gpu
def test_capture_restores_the_global_cudnn_flags(kernels_loaded):
    # Capture flips benchmark, deterministic (a cuDNN plan-cache key of our own) and allow_tf32;
    # the caller's settings must come back unchanged.
    cudnn = torch.backends.cudnn
    saved = cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32
    try:
        cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32 = False, False, True
        FusedRunner(random_net(0), torch.device("cuda"), torch.bfloat16)(_image((1, 3, 32, 32), 0, "cuda"))
        assert (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (False, False, True)
    finally:
        cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32 = saved


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_graph_io_reads_and_writes_the_callers_tensors(kernels_loaded, dtype):
    # Where conv1 and the head are our kernels, a replay reads the caller's tensor where it is and
    # writes a fresh output (engine/graph_io.py): the same frames as the copy path, none of them
    # overwritten by later calls, and the copy path still right for inputs the nodes cannot take.
    model, shape, cuda = random_net(2), (1, 3, 128, 192), torch.device("cuda")
    inputs = [_image(shape, seed, "cuda") for seed in range(3)]
    copy_runner = FusedRunner(model, cuda, dtype, settings=Switches(graph_io=False))
    expected = [copy_runner(x) for x in inputs]
    assert copy_runner._graphs[(shape, torch.float32, "cuda")].io is None
    runner = FusedRunner(model, cuda, dtype, settings=Switches())
    outs = [runner(x) for x in inputs]
    entry = runner._graphs[(shape, torch.float32, "cuda")]
    if entry.io is None:
        ends = {name: choice.provider for (name, _), choice in runner.layer_choices.items()
                if name in ("conv1", "deconv3")}
        pytest.skip(f"graph not bound: conv1/head providers {ends} (cuDNN at an end keeps the copy path)")
    assert len({o.data_ptr() for o in outs}) == len(outs), "each call must return its own tensor"
    assert all(o.data_ptr() != entry.static_out.data_ptr() for o in outs)
    batch = torch.cat(inputs[:2])   # a view at an offset: contiguous, aligned, read where it is
    outs.append(runner(batch[1:2]))
    expected.append(expected[1])
    outs.append(runner(inputs[0].contiguous(memory_format=torch.channels_last)))   # other strides: copied
    expected.append(expected[0])
    outs.append(runner(inputs[2].cpu()))   # pinned staging into the static input
    expected.append(expected[2])
    outs.append(runner(inputs[1]))         # and back to the caller's tensor
    expected.append(expected[1])
    ref = _reference(model, inputs[1], device="cuda")
    eager = _reference(model, inputs[1], dtype, device="cuda")
    limit = 1e-3   # the two runners differ only in the order of the norms' fp64 atomics
    for i, (out, want) in enumerate(zip(outs, expected, strict=True)):
        assert rel_error(out, want) <= limit, f"call {i}: {rel_error(out, want):.3g} off the copy path"
    assert rel_error(outs[1], ref) <= max(2 * rel_error(eager, ref), 1e-3), "the frame must be the network's"


def test_known_plan_reuses_the_plan_timed_at_this_or_a_similar_size():
    # A mixed folder must not time four captured plans again at every size: a shape evicted and
    # seen again takes its own timed plan, and a new one the plan timed nearest in pixels.
    from styleforge.engine.autotune import LayerChoice
    runner = FusedRunner(random_net(0), torch.device("cpu"), torch.float32)
    timed = LayerChoice("hybrid", "faster", 1.0, 2.0, {"cudnn": 2.0, "hybrid": 1.0})
    runner.layer_choices[("residual", (1, 3, 512, 384))] = timed
    runner.layer_choices[("residual", (1, 3, 2048, 2048))] = LayerChoice(
        "cudnn", "slower", 9.0, 9.0, {"cudnn": 9.0, "hybrid": 9.5})
    assert runner.layer_choices.known_plan((1, 3, 512, 384)) is timed
    near = runner.layer_choices.known_plan((1, 3, 384, 544))            # 6 % more pixels
    assert near.provider == "hybrid" and near.reason == "timed at 512x384" and not near.plans
    assert runner.layer_choices.known_plan((1, 3, 2048, 1920)).provider == "cudnn"
    assert runner.layer_choices.known_plan((1, 3, 1024, 1024)) is None, "4× the pixels of the nearest timed shape"
    runner.layer_choices[("residual", (1, 3, 384, 544))] = near
    assert runner.layer_choices.known_plan((1, 3, 384, 544)).provider == "hybrid", "an untimed choice is not a source"
    # The 9×9 layers' op-or-cuDNN choices travel the same way, per layer, batch and channels.
    runner.layer_choices[("conv1", (1, 3, 512, 384))] = LayerChoice("styleforge", "faster", 0.1, 0.2)
    timed = lambda c: c.op_ms is not None  # noqa: E731
    assert runner.layer_choices.similar("conv1", (1, 3, 500, 400), timed).provider == "styleforge"
    assert runner.layer_choices.similar("conv1", (2, 3, 500, 400), timed) is None, "another batch size"
    assert runner.layer_choices.similar("head", (1, 3, 500, 400), timed) is None, "another layer"


@pytest.mark.gpu
def test_graph_cache_stays_within_its_memory_share(kernels_loaded, exact_fp32):
    model = random_net(0)
    runner = FusedRunner(model, torch.device("cuda"), torch.float32)
    runner.graph_budget = 1          # every graph over budget: only the newest is kept
    shapes = [(1, 3, 64, 64), (1, 3, 48, 64), (1, 3, 64, 96)]
    for _ in range(4):
        for seed, shape in enumerate(shapes):
            x = _image(shape, seed, "cuda")
            assert rel_error(runner(x), _reference(model, x, device="cuda")) <= FUSED_FP32_REL_TOL
            assert len(runner._graphs) <= 1
    # Round 1 eager; 2 captures all three (each evicting the last); 3: the two evicted ones are
    # new again (eager), the newest replays; 4: those two capture (evicting the third).
    assert runner.captures == 5
