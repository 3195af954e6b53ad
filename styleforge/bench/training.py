"""Training benchmark: images/s of `styleforge train` steps, as a results row.

The measuring itself belongs to the training package
(`styleforge.training.benchmark.measure_training_throughput`, imported lazily so the bench works
without it); this module only calls it, turns its dict into a `Row`, and reports a missing or
failing trainer as a skipped or failed row instead of a traceback.
"""
from __future__ import annotations

from typing import Callable

from .harness import describe_error
from .results import Row

MEASURE = "styleforge.training.benchmark.measure_training_throughput"


def _default_measure() -> Callable[..., dict]:
    from ..training.benchmark import measure_training_throughput
    return measure_training_throughput


def run_training(device: str, batch_size: int = 8, image_size: int = 256, steps: int = 50,
                 warmup: int = 10, compile: bool = False, vgg_weights: str | None = None,
                 measure: Callable[..., dict] | None = None) -> Row:
    row = Row("training", "compile" if compile else "eager", op="train_step", batch=batch_size,
              shape=f"{batch_size}x3x{image_size}x{image_size}", size=str(image_size))
    if measure is None:
        try:
            measure = _default_measure()
        except ImportError as exc:
            row.status, row.error = "skipped", f"{MEASURE} is unavailable ({describe_error(exc)})"
            return row
    try:
        result = measure(device=device, batch_size=batch_size, image_size=image_size, steps=steps,
                         warmup=warmup, vgg_weights=vgg_weights, compile=compile)
    except Exception as exc:  # report, don't crash the rest of the suite
        row.status, row.error = "failed", describe_error(exc)
        return row
    result = dict(result)
    if result.get("loss_finite") is False:   # a fast step that diverges is not a result
        row.status, row.error = "failed", "training loss was not finite"
        return row
    images_per_s = float(result.pop("images_per_s"))
    ms_per_step = float(result.pop("ms_per_step", batch_size / images_per_s * 1e3))
    row.fps, row.median_ms, row.reps = images_per_s, ms_per_step, steps
    row.dtype = str(result.pop("dtype", result.pop("precision", ""))).removeprefix("torch.")
    for key in ("p20_ms", "p80_ms"):
        if key in result:
            setattr(row, key, float(result.pop(key)))
    peak_gb = result.pop("peak_memory_gb", None)
    if isinstance(peak_gb, (int, float)):
        row.peak_mb = peak_gb * 1024
    row.timer = "measure_training_throughput"
    row.notes = {k: v for k, v in result.items() if isinstance(v, (int, float, str, bool))}
    return row
