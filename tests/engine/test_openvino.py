"""The OpenVINO CPU backend: choice rules, calibration data, the threads it is asked for and
reports, fp32 equal to the reference, INT8 close to it and cached on disk, and the tiling and
stroke-scale paths on it.

Export and INT8 calibration cost seconds to a minute on a 2-core machine, so those tests are
`slow`; they are skipped where openvino/nncf are not installed (the CI installs `.[test]` only).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from styleforge.engine.backends import resolve_engine
from styleforge.engine.openvino_runner import CALIBRATION_SIDES, calibration_images, openvino_available
from tests.conftest import psnr, random_net, rel_error

CPU = torch.device("cpu")
needs_openvino = pytest.mark.skipif(not openvino_available("int8")[0], reason="openvino/nncf not installed")


@needs_openvino
def test_auto_picks_openvino_int8_on_a_cpu_unless_switched_off(monkeypatch):
    monkeypatch.setenv("STYLEFORGE_OPENVINO", "1")
    assert resolve_engine("auto", "auto", CPU) == ("openvino", torch.float32, "int8")
    assert resolve_engine("auto", "int8", CPU) == ("openvino", torch.float32, "int8")
    assert resolve_engine("openvino", "fp32", CPU) == ("openvino", torch.float32, "fp32")
    # An explicit PyTorch precision stays on PyTorch.
    assert resolve_engine("auto", "fp32", CPU)[0] == "reference"
    from styleforge import switches
    monkeypatch.setenv("STYLEFORGE_OPENVINO", "0")
    switches.reset()
    assert resolve_engine("auto", "auto", CPU)[0] == "reference"
    assert resolve_engine("auto", "int8", CPU)[0] == "openvino"   # asked for by name


def test_impossible_pairs_say_why():
    with pytest.raises(RuntimeError, match="OpenVINO backend"):
        resolve_engine("reference", "int8", CPU)
    with pytest.raises(RuntimeError, match="runs on the CPU"):
        resolve_engine("openvino", "auto", torch.device("cuda"))
    with pytest.raises(RuntimeError, match="int8 or fp32"):
        resolve_engine("openvino", "bf16", CPU)


def test_calibration_set_is_the_shipped_photos_varied_deterministically():
    images = calibration_images()
    assert len(images) == 3 * len(CALIBRATION_SIDES) * 4          # 3 assets × sizes × 4 variants
    for image in images:
        assert image.dtype.name == "float32" and image.shape[:2] == (1, 3)
        assert image.shape[2] % 4 == 0 and image.shape[3] % 4 == 0
        assert max(image.shape[2:]) in CALIBRATION_SIDES
        assert 0 <= image.min() and image.max() <= 255
    again = calibration_images()
    assert all((a == b).all() for a, b in zip(images, again))
    assert not (images[0] == images[3]).all()                    # the jitter changed the photo


def test_threads_are_capped_at_the_cpus_and_siblings_all_run():
    from styleforge.engine.openvino_runner import thread_config
    one_core = {2: "2-3", 3: "2-3"}.get                 # two logical CPUs of one physical core
    assert thread_config(2, {2, 3}, one_core) == {"INFERENCE_NUM_THREADS": 2, "ENABLE_HYPER_THREADING": True}
    assert thread_config(2, {2, 3}, str) == {"INFERENCE_NUM_THREADS": 2}     # two cores: OpenVINO's default
    assert thread_config(8, {0, 1}, str) == {"INFERENCE_NUM_THREADS": 2}     # never more than the mask
    assert thread_config(1, {2, 3}, one_core) == {"INFERENCE_NUM_THREADS": 1}


@pytest.mark.parametrize("cap, f32", [("", False), ("AVX512_CORE_AMX", False), ("AVX2_VNNI", True),
                                      ("AVX512_CORE_VNNI", True)])
def test_int8_float_layers_stay_f32_below_a_bf16_cap(monkeypatch, cap, f32):
    """OpenVINO picks bf16 for INT8's float layers from the CPU's flags; under a oneDNN cap below
    bf16 (a laptop's ISA on an AMX machine) that would be emulated, so f32 is asked for."""
    from styleforge.engine.openvino_runner import compile_config
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap) if cap else monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert ("INFERENCE_PRECISION_HINT" in compile_config("int8", 2)) == f32
    assert compile_config("fp32", 2)["INFERENCE_PRECISION_HINT"] == "f32"


@needs_openvino
def test_threading_reports_what_openvino_compiled():
    import os

    import openvino as ov
    import openvino.opset13 as ops

    from styleforge.engine.openvino_runner import OpenVINORunner, compile_config
    x = ops.parameter([1, 3, 8, 8], np.float32)
    runner = OpenVINORunner.__new__(OpenVINORunner)     # the report only reads the compiled model
    runner.compiled = ov.Core().compile_model(ov.Model([ops.relu(x)], [x]), "CPU", compile_config("fp32", 64))
    report = runner.threading()
    assert report["inference_num_threads"] == len(os.sched_getaffinity(0))
    assert report["num_streams"] == 1 and isinstance(report["enable_cpu_pinning"], bool)
    assert set(report) == {"inference_num_threads", "num_streams", "enable_cpu_pinning", "enable_hyper_threading"}


@pytest.mark.slow
@needs_openvino
def test_fp32_equals_the_reference_at_odd_sizes_and_batch(tmp_path, monkeypatch):
    from styleforge.engine.openvino_runner import OpenVINORunner
    monkeypatch.setenv("STYLEFORGE_CACHE_DIR", str(tmp_path))
    model = random_net(3)
    runner = OpenVINORunner(model, "fp32", threads=2)
    for shape in [(1, 3, 36, 52), (2, 3, 64, 20)]:                 # one model, any size and batch
        x = torch.rand(shape) * 255
        with torch.no_grad():
            want = model(x)
        assert rel_error(runner(x), want) < 1e-4
    assert list((tmp_path / "openvino").glob("*-fp32-*.xml"))


@pytest.mark.slow
@needs_openvino
def test_int8_stays_close_to_fp32_and_is_read_back_from_the_cache(tmp_path, monkeypatch):
    from styleforge.engine import openvino_runner
    from styleforge.models.checkpoint import build_model
    from styleforge.models.registry import load_style
    monkeypatch.setenv("STYLEFORGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(openvino_runner, "CALIBRATION_SIDES", (128,))   # fewer, smaller: faster
    model = build_model(load_style("candy"))
    runner = openvino_runner.OpenVINORunner(model, "int8", threads=2)
    from styleforge.io.image import load_image
    photo = load_image(openvino_runner.ASSETS / "chelsea.jpg").rgb.resize((200, 132))
    x = torch.from_numpy(np.array(photo)).permute(2, 0, 1)[None].float()
    with torch.no_grad():
        want = model(x).clamp(0, 255)
    got = runner(x).clamp(0, 255)
    assert psnr(got, want) > 25          # INT8 of a real style; docs/cpu.md has the full-size numbers

    def fail(*_args, **_kwargs):
        raise AssertionError("the cached INT8 model was rebuilt")
    monkeypatch.setattr(openvino_runner, "quantize", fail)
    monkeypatch.setattr(openvino_runner, "export", fail)
    again = openvino_runner.OpenVINORunner(model, "int8", threads=2)
    assert torch.equal(again(x), runner(x))


@pytest.mark.slow
@needs_openvino
def test_stylizer_on_openvino_runs_the_tiling_and_stroke_scale_paths(styles_env, tmp_path, monkeypatch):
    from styleforge.engine.options import StylizeOptions
    from styleforge.engine.pipeline import Stylizer
    monkeypatch.setenv("STYLEFORGE_CACHE_DIR", str(tmp_path))
    x = torch.rand(1, 3, 90, 70) * 255
    ref = Stylizer(StylizeOptions(style="alpha", device="cpu", backend="reference", precision="fp32"))
    base = dict(style="alpha", device="cpu", backend="openvino", precision="fp32")
    whole = Stylizer(StylizeOptions(**base))
    assert whole.describe().endswith("(fp32, openvino)")
    assert psnr(whole(x), ref(x)) > 60
    scaled = Stylizer(StylizeOptions(**base, stroke_scale=2.0))
    ref_scaled = Stylizer(StylizeOptions(style="alpha", device="cpu", backend="reference",
                                         precision="fp32", stroke_scale=2.0))
    assert psnr(scaled(x), ref_scaled(x)) > 60
    tiled = Stylizer(StylizeOptions(**base, tiling="fast"))
    out = tiled(x)
    assert tiled.last_execution.mode == "fast"
    assert out.shape == x.shape and psnr(out, ref(x)) > 20
