"""Shared test policy: the `gpu` and `slow` markers, the one tolerance rule, and tiny random-weight styles.

Tiers: `python -m pytest` runs everything; `python -m pytest -m "not slow"` leaves out compilers,
emulators and other tests over ~2.5 s (any test that builds a kernel emulator is slow by its fixture).
The default tier stays fast by rule (`slow_limit.py`): a test not marked `slow` whose call costs more
than twice `--slow-limit` seconds (default 5) fails with a message saying to mark it; one over half
the limit is listed in the summary.

Tolerance policy (STYLE.md): compare with a float64 reference by relative L2 error
‖out − ref‖ / ‖ref‖. fp32 kernels must land under `FP32_REL_TOL`; low-precision kernels
must be at most 2× the error of PyTorch's own computation in that dtype (flash-attention's
rule), with a small floor so a PyTorch path that happens to be exact does not demand exactness.
"""
from __future__ import annotations

import os

# Before torch loads its OpenMP runtime: idle intra-op threads sleep instead of spinning. The suite's
# tensors are small, so torch's two threads on the 2-core CI machine mostly wait for each other, and
# a spinning thread takes the core its partner (or a test's subprocess) needs: on a loaded machine the
# default tier took five times the CPU and four times the wall time. A caller's own setting stays.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import torch  # noqa: E402

from styleforge.psnr import psnr  # noqa: E402,F401  (the tests' PSNR is the package's)

# slow_limit: the default tier's time rule; pytester: tests/test_slow_limit.py runs it in a session of its own
pytest_plugins = ("slow_limit", "pytester")

FP32_REL_TOL = 1e-5
LOW_PRECISION_FLOOR = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


# The suite tests the PyTorch path under `--backend auto` even where openvino is installed (an
# INT8 export per test style would cost a minute each); tests/engine/test_openvino.py asks for
# the OpenVINO backend explicitly.
os.environ.setdefault("STYLEFORGE_OPENVINO", "0")

SLOW_FIXTURES = {"emulator"}   # builds a kernel emulator with g++ and sanitizers
def pytest_collection_modifyitems(config, items):
    skip = None if torch.cuda.is_available() else pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if skip is not None and "gpu" in item.keywords:
            item.add_marker(skip)


def capture_in_graph(run):
    """run() warmed up on a side stream (as the torch.cuda.graphs docs prescribe), then captured:
    returns (graph, the captured call's outputs)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = run()
    return graph, captured


def assert_graph_replays_like_fresh_calls(run, first, x, state, repeats, changed):
    """An op with a zeroed statistics state that it leaves zero: run() gives first's bits `repeats`
    times (fp64 sums in any order round to the same fp32 affine here); a CUDA graph of it, replayed
    after x is halved, gives what a fresh call gives (output `changed` no longer equals first's);
    the state is zero after."""
    for _ in range(repeats):
        for a, b in zip(run(), first):
            assert torch.equal(a, b)
    graph, captured = capture_in_graph(run)
    x.mul_(0.5)
    for _ in range(3):
        graph.replay()
    fresh = run()
    for got, want in zip(captured, fresh):
        assert torch.equal(got, want)
    assert not torch.equal(captured[changed], first[changed])
    torch.cuda.synchronize()
    assert not state.any()


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    # In float64 on the reference's device: a GPU oracle stays on the GPU, where float64 is
    # fast, instead of copying gigabytes of a 4K plane to the CPU.
    ref64 = ref.detach().double()
    out64 = out.detach().to(ref64.device, torch.float64)
    assert not torch.isnan(out64).any(), "output has NaN"
    return float((out64 - ref64).norm() / ref64.norm().clamp_min(1e-300))


def assert_matches_reference(out: torch.Tensor, ref64: torch.Tensor,
                             torch_same_dtype: torch.Tensor | None = None) -> float:
    """out vs a float64 reference under the policy above; returns the error for reporting."""
    assert out.shape == ref64.shape, f"shape {tuple(out.shape)} != reference {tuple(ref64.shape)}"
    err = rel_error(out, ref64)
    if out.dtype == torch.float32:
        limit = FP32_REL_TOL
    else:
        limit = LOW_PRECISION_FLOOR[out.dtype]
        if torch_same_dtype is not None:
            limit = max(limit, 2 * rel_error(torch_same_dtype, ref64))
    assert err <= limit, f"relative error {err:.3g} > {limit:.3g} ({out.dtype})"
    return err


def _proc_status_kib(key: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def peak_rss_growth_mb(fn):
    """(fn(), how far this call's peak resident memory rose above the RSS it started from, in MB).

    Per call, unlike `ru_maxrss` (the process's lifetime peak, which an earlier test may have set
    higher than anything this call does): Linux ≥ 4.0 resets the peak (VmHWM) to the current RSS
    when "5" is written to /proc/self/clear_refs. Skips where that is not possible."""
    import gc
    try:
        gc.collect()
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        start = _proc_status_kib("VmRSS")
    except (OSError, KeyError) as exc:
        pytest.skip(f"per-call peak memory needs Linux's /proc/self/clear_refs ({exc})")
    result = fn()
    return result, (_proc_status_kib("VmHWM") - start) / 1024


def random_style_state(seed: int) -> dict[str, torch.Tensor]:
    """A TransformerNet state dict with random weights and non-trivial norm affines."""
    from styleforge.models import TransformerNet
    torch.manual_seed(seed)
    model = TransformerNet()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".weight" in name and p.dim() == 1:      # InstanceNorm scale
                p.uniform_(0.5, 1.5)
            elif p.dim() == 1:                           # biases
                p.uniform_(-0.5, 0.5)
        model.deconv3.conv2d.bias.fill_(127.0)          # centre the output in 0–255
        model.deconv3.conv2d.weight.mul_(20.0)          # and give it visible contrast
    return model.state_dict()


def random_net(seed: int):
    """A TransformerNet with `random_style_state(seed)`, in eval mode."""
    from styleforge.models import TransformerNet
    model = TransformerNet()
    model.load_state_dict(random_style_state(seed))
    return model.eval()


@pytest.fixture(scope="session")
def tiny_styles(tmp_path_factory):
    """Two random-weight styles, 'alpha' and 'beta', as a styles folder of safetensors files."""
    from styleforge.models.checkpoint import save_checkpoint
    folder = tmp_path_factory.mktemp("styles")
    for seed, name in enumerate(["alpha", "beta"]):
        save_checkpoint(folder / f"{name}.safetensors", random_style_state(seed),
                        {"style": name, "painting": f"test painting {name}", "artist": "nobody",
                         "licence": "test"}, dtype=torch.float32)
    return folder


@pytest.fixture(autouse=True)
def fresh_switches():
    """Each test reads the environment switches afresh (styleforge.switches caches them per process),
    so a test's monkeypatch.setenv reaches the code it calls."""
    from styleforge import switches
    switches.reset()
    yield
    switches.reset()


@pytest.fixture(autouse=True)
def private_plan_cache(tmp_path_factory, monkeypatch):
    """Runners built by a test keep their timed plans in a folder of their own: plans left in the
    kernel cache by an earlier run must not change what a test times or sees."""
    from styleforge.engine import plan_cache
    folder = tmp_path_factory.mktemp("plans")
    monkeypatch.setattr(plan_cache.PlanCache, "for_device",
                        classmethod(lambda cls, device: cls(folder / "plans.json")))


@pytest.fixture
def styles_env(tiny_styles, monkeypatch):
    """Point the style registry at `tiny_styles` (as the CLI and API see it) for one test."""
    from styleforge.api import clear_cache
    from styleforge.models.registry import STYLES_DIR_ENV
    monkeypatch.setenv(STYLES_DIR_ENV, str(tiny_styles))
    yield tiny_styles
    clear_cache()


def cuda_kernel_names(fn) -> list[str]:
    """The CUDA kernels one call of `fn` launches, in order (memsets and copies left out)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
            and "memset" not in e.name.lower() and "memcpy" not in e.name.lower()]


def is_hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


# The fused 3×3 convolution's tests: its CUDA kernel runs on Hopper (sm_90a) only.
requires_hopper = pytest.mark.skipif(not is_hopper(), reason="the fused convolution runs on Hopper (sm_90a) only")


@pytest.fixture(scope="module")
def loaded():
    """The CUDA extension built and loaded (the GPU tests of the kernels need it)."""
    from styleforge import kernels
    ok, why = kernels.cuda_kernels_available()
    assert ok, why


def tiny_training_data(root, rng):
    """Three 20-px training photos in root/content, a 30×40 udnie painting in root/styles and a
    narrow random VGG at root/vgg.pth (returned): enough for dev/train_builtin.py to take a step."""
    import numpy as np
    from PIL import Image

    from styleforge.models.vgg import VGG16Features
    (root / "content").mkdir()
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (20, 20, 3), dtype=np.uint8)).save(root / "content" / f"p{i}.png")
    (root / "styles").mkdir()
    Image.fromarray(rng.integers(0, 255, (30, 40, 3), dtype=np.uint8)).save(root / "styles" / "udnie.jpg")
    torch.manual_seed(0)
    torch.save(VGG16Features((8, 16, 16, 16)).state_dict(), root / "vgg.pth")
    return root / "vgg.pth"
