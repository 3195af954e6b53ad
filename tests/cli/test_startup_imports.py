"""What a command imports is what it uses: `stylize --help` loads no torch, and a one-photo CPU
run loads none of the heavy optional modules (web UI, video, plotting, progress bars, the
compiler stack, the CUDA build, torchvision, the exporters, ray, OpenVINO's quantizer) and defines
none of StyleForge's ops, whose registration is deferred to their first use (`kernels/library.py`).
That holds on the PyTorch path and on OpenVINO, the CPU's default where it is installed, once its
model is cached. Each runs in a fresh interpreter, which then reports its own `sys.modules`."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[2]

# Imported by none of these runs (torch itself imports torch.distributed, but not its FSDP).
HEAVY = ("gradio", "av", "cv2", "matplotlib", "rich", "sympy", "triton", "torch._dynamo",
         "torch._inductor", "torch.distributed.fsdp", "setuptools", "torch.utils.cpp_extension",
         "torchvision", "onnx", "onnxruntime", "ray", "nncf", "scipy", "networkx")

_PROBE = """
import json, runpy, sys
import styleforge.cli
styleforge.cli.leave = sys.exit   # the command's own ending (os._exit) would skip this report
sys.argv = ["styleforge", *json.loads(sys.argv[1])]
try:
    runpy.run_module("styleforge", run_name="__main__")
except SystemExit as exc:
    code = exc.code
defined = None
if "torch" in sys.modules:
    import torch
    try:
        torch._C._dispatch_find_schema_or_throw("styleforge::instance_norm", "")
        defined = True
    except RuntimeError:
        defined = False
print(json.dumps({"code": code, "modules": sorted(sys.modules), "ops_defined": defined}), file=sys.__stderr__)
"""


def _run(args: list[str], env: dict[str, str] | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return report


def _loaded(report: dict, names) -> list[str]:
    modules = set(report["modules"])
    return [name for name in names if name in modules]


def test_stylize_help_imports_neither_torch_nor_any_heavy_module():
    report = _run(["stylize", "--help"])
    assert _loaded(report, ("torch", "numpy", "PIL") + HEAVY) == []


@pytest.mark.slow   # a fresh interpreter importing torch: 5-15 s on a shared 2-core machine
def test_a_one_photo_cpu_run_imports_only_what_it_uses(tmp_path):
    photo, out = tmp_path / "photo.jpg", tmp_path / "out.jpg"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 56, 3), dtype=np.uint8)).save(photo)
    report = _run(["stylize", str(photo), "-o", str(out), "--device", "cpu"], {"STYLEFORGE_OPENVINO": "0"})
    assert out.exists() and Image.open(out).size == (56, 40)
    assert "torch" in report["modules"]                      # the probe saw a real run
    assert _loaded(report, HEAVY + ("openvino",)) == []
    assert report["ops_defined"] is False                    # the CPU path calls no torch.ops.styleforge
    plugins = [m for m in report["modules"] if m.startswith("PIL.") and m.endswith("ImagePlugin")]
    assert len(plugins) <= 6, plugins                        # Pillow's common formats, not all forty


_HAS_OPENVINO = all(importlib.util.find_spec(name) is not None for name in ("openvino", "nncf"))


@pytest.mark.slow   # an INT8 export of a tiny style, then a fresh interpreter importing torch
@pytest.mark.skipif(not _HAS_OPENVINO, reason="openvino and nncf are not installed")
def test_a_one_photo_openvino_run_imports_only_what_it_uses(tmp_path, tiny_styles, monkeypatch):
    from styleforge.engine import openvino_runner
    from styleforge.models.checkpoint import build_model, load_checkpoint
    style = tiny_styles / "alpha.safetensors"
    monkeypatch.setenv("STYLEFORGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(openvino_runner, "CALIBRATION_SIDES", (64,))   # the cache key does not hold them
    # The runner the CLI builds, so the cache entry is the one the run reads (same tag and recipe).
    openvino_runner.OpenVINORunner(build_model(load_checkpoint(style)).eval(), "int8")
    photo, out = tmp_path / "photo.jpg", tmp_path / "out.jpg"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 56, 3), dtype=np.uint8)).save(photo)
    report = _run(["stylize", str(photo), "-o", str(out), "--device", "cpu", "--checkpoint", str(style),
                   "--json"], {"STYLEFORGE_OPENVINO": "1", "STYLEFORGE_CACHE_DIR": str(tmp_path / "cache")})
    assert Image.open(out).size == (56, 40)
    assert "openvino" in report["modules"]                   # the probe saw the OpenVINO path
    assert _loaded(report, HEAVY) == []
