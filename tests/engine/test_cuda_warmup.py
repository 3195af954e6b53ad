"""engine/cuda_warmup.py: which runs start the CUDA driver early, that a missing or foreign driver
library is harmless, that the stylize command starts it before torch is imported, and (GPU) that
PyTorch then runs on the context the thread started."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge import switches as switches_module
from styleforge.engine import cuda_warmup
from styleforge.switches import Switches

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch):
    """A process where no warm-up has started yet and the driver defaults are unset."""
    monkeypatch.setattr(cuda_warmup, "_thread", None)
    monkeypatch.delenv("CUDA_MODULE_LOADING", raising=False)
    monkeypatch.setattr(switches_module, "_current", Switches())


@pytest.mark.parametrize("device, ordinal", [("cpu", None), ("auto", 0), ("cuda", 0), ("CUDA:3", 3),
                                             ("cuda:x", None), ("mps", None)])
def test_device_ordinal(device, ordinal):
    assert cuda_warmup.device_ordinal(device) == ordinal


def test_torch_build_read_from_its_version_file_agrees_with_torch(monkeypatch):
    truth = torch.version.cuda is not None
    assert cuda_warmup.torch_has_cuda() is truth
    monkeypatch.delitem(sys.modules, "torch")   # as the CLI asks it: before torch is imported
    assert cuda_warmup.torch_has_cuda() is truth


def test_nothing_starts_without_a_cuda_torch_on_the_cpu_or_when_switched_off(fresh, monkeypatch):
    monkeypatch.setattr(cuda_warmup, "torch_has_cuda", lambda: False)
    assert cuda_warmup.wanted("cuda") is None
    monkeypatch.setattr(cuda_warmup, "torch_has_cuda", lambda: True)
    monkeypatch.setattr(cuda_warmup, "_cuda_initialized", lambda: False)
    assert cuda_warmup.wanted("cuda:1") == 1
    assert cuda_warmup.wanted("cpu") is None
    monkeypatch.setattr(switches_module, "_current", Switches(cuda_warmup=False))
    assert cuda_warmup.wanted("cuda") is None
    assert cuda_warmup.start("cuda") is None and "CUDA_MODULE_LOADING" not in os.environ


def test_already_initialised_cuda_is_left_alone(fresh, monkeypatch):
    monkeypatch.setattr(cuda_warmup, "torch_has_cuda", lambda: True)
    monkeypatch.setattr(cuda_warmup, "_cuda_initialized", lambda: True)
    assert cuda_warmup.wanted("cuda") is None


@pytest.mark.parametrize("library", ["libstyleforge-no-such-driver.so.1", "libc.so.6"])
def test_a_missing_or_foreign_driver_library_ends_the_thread_quietly(fresh, monkeypatch, library):
    if library == "libc.so.6" and not sys.platform.startswith("linux"):
        pytest.skip("glibc stands in for a library without the CUDA entry points")
    monkeypatch.setattr(cuda_warmup, "torch_has_cuda", lambda: True)
    monkeypatch.setattr(cuda_warmup, "_cuda_initialized", lambda: False)
    failures = []
    monkeypatch.setattr("threading.excepthook", failures.append)
    thread = cuda_warmup.start("cuda", library=library)
    if not sys.platform.startswith("linux"):
        assert thread is None
        return
    thread.join(10)
    assert not thread.is_alive() and thread.daemon and failures == []
    assert os.environ["CUDA_MODULE_LOADING"] == "LAZY"    # set before the driver could read it
    assert cuda_warmup.start("cuda", library=library) is None   # once per process


_PROBE = """
import json, runpy, sys
import styleforge.cli
from styleforge.engine import cuda_warmup
calls = []
real = cuda_warmup.start
def start(device, *args, **kwargs):
    calls.append({"device": device, "torch_imported": "torch" in sys.modules})
    return real(device, *args, **kwargs)
cuda_warmup.start = start
styleforge.cli.leave = sys.exit
sys.argv = ["styleforge", *json.loads(sys.argv[1])]
try:
    runpy.run_module("styleforge", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "calls": calls}), file=sys.__stderr__)
"""


@pytest.mark.slow   # a fresh interpreter importing torch: 5-15 s on a shared 2-core machine
def test_stylize_starts_the_driver_before_importing_torch(tmp_path):
    photo, out = tmp_path / "photo.jpg", tmp_path / "out.jpg"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 56, 3), dtype=np.uint8)).save(photo)
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(["stylize", str(photo), "-o", str(out),
                                                                     "--device", "cpu"])],
                          cwd=REPO, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "STYLEFORGE_OPENVINO": "0"})
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    assert out.exists()
    # The command's call comes first, before torch; the Stylizer's own call follows (a no-op).
    assert report["calls"][0] == {"device": "cpu", "torch_imported": False}
    assert [c["device"] for c in report["calls"]] == ["cpu", "cpu"]


_GPU_PROBE = """
import ctypes, json
from styleforge.engine import cuda_warmup
thread = cuda_warmup.start("cuda")
thread.join(60)
import torch
x = torch.arange(6.0, device="cuda")
driver = ctypes.CDLL(cuda_warmup.DRIVER_LIBRARY)
current, primary, handle = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
driver.cuCtxGetCurrent(ctypes.byref(current))
driver.cuDeviceGet(ctypes.byref(handle), torch.cuda.current_device())
driver.cuDevicePrimaryCtxRetain(ctypes.byref(primary), handle)
print(json.dumps({"sum": float(x.sum()), "same": current.value == primary.value}))
"""


@pytest.mark.gpu
@pytest.mark.slow   # a fresh interpreter importing torch
def test_torch_runs_on_the_context_the_thread_started():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    done = subprocess.run([sys.executable, "-c", _GPU_PROBE], cwd=REPO, capture_output=True, text=True,
                          timeout=180, env={k: v for k, v in os.environ.items() if k != "STYLEFORGE_CUDA_WARMUP"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"sum": 15.0, "same": True}
