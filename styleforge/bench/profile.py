"""`styleforge profile`: a torch.profiler trace of one stylization, and its top kernels.

The network runs a few times to warm up (compile, CUDA-graph capture, cuDNN algorithm search),
then exactly one frame is recorded inside an NVTX range named `styleforge.profile` (so Nsight
Compute / Systems can be told to look only there) and written as a Chrome trace
(chrome://tracing or https://ui.perfetto.dev). The table lists the kernels by their own device
time (CPU ops by their own CPU time on CPU). The input is a random image already on the device:
decode, host-to-device copies and padding are outside the recorded region. Not a benchmark:
profiling adds overhead; use `styleforge bench` for numbers.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from ..engine.backends import (
    make_runner,
    resolve_backend,
    resolve_device,
    resolve_dtype,
)
from ..models.checkpoint import build_model
from .endtoend import Size, load_bench_style
from .harness import random_images, synchronize

NVTX_RANGE = "styleforge.profile"


@dataclass(frozen=True)
class KernelTime:
    name: str
    calls: int
    total_ms: float
    share: float          # of the summed time of all rows of this kind


@dataclass
class ProfileResult:
    trace: Path
    kernels: list[KernelTime]
    time_kind: str        # "device" (CUDA kernels) or "cpu" (CPU ops)
    description: str
    note: str = ""


def _self_time_us(event, device_side: bool) -> float:
    if device_side:
        return float(getattr(event, "self_device_time_total", getattr(event, "self_cuda_time_total", 0.0)))
    return float(event.self_cpu_time_total)


def top_kernels(prof, device_side: bool, top: int) -> list[KernelTime]:
    wanted = DeviceType.CUDA if device_side else DeviceType.CPU
    # On CUDA the profiler also reports our own range as a "gpu_user_annotation" spanning the
    # whole frame, with a large "share"; it is not a kernel, so it is left out.
    events = [e for e in prof.key_averages() if e.device_type == wanted and e.key != NVTX_RANGE]
    times = [(e, _self_time_us(e, device_side)) for e in events]
    total = sum(t for _, t in times) or 1.0
    times.sort(key=lambda pair: pair[1], reverse=True)
    return [KernelTime(e.key, int(e.count), t / 1e3, t / total) for e, t in times[:top] if t > 0]


def profile_stylization(size: Size, device: str = "auto", backend: str = "auto",
                        precision: str = "auto", batch: int = 1, style: str | None = None,
                        output: str | Path = "trace.json", warmup: int = 3, top: int = 15) -> ProfileResult:
    dev = resolve_device(device)
    dtype = resolve_dtype(precision, dev)
    chosen = resolve_backend(backend, dev, dtype)
    checkpoint, note = load_bench_style(style)
    runner = make_runner(build_model(checkpoint), dev, dtype, chosen)
    x = random_images(1, batch, size.height, size.width, dev, seed=7)[0]
    with torch.inference_mode():
        for _ in range(warmup):
            runner(x)
        synchronize(dev)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
        nvtx = torch.cuda.nvtx.range(NVTX_RANGE) if dev.type == "cuda" else nullcontext()
        with profile(activities=activities, record_shapes=True) as prof:
            with nvtx, record_function(NVTX_RANGE):
                runner(x).clamp(0, 255)
            synchronize(dev)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(output))
    device_side = dev.type == "cuda"
    description = (f"{batch}x3x{size.height}x{size.width} ({size.label}) on {dev}, "
                   f"{str(dtype).removeprefix('torch.')}, backend {chosen}, "
                   f"style {checkpoint.metadata.get('style', 'custom')}")
    return ProfileResult(output, top_kernels(prof, device_side, top),
                         "device" if device_side else "cpu", description, note)
