"""The arbitrary-style model on the CPU: time and quality of each way to run it, rows to cpu.csv.

`python -m styleforge.bench.cpu_arbitrary --photos P... --paintings Q...` runs each variant (a
backend, precision, number of passes and internal size) on every photo × painting pair, scores
each output with the shared `style_metrics.py` (Gram style ratio, content distance, palette
distance, grid score: medians over the pairs) and times one 512-px photo (the first photo,
longer side 512) with the first painting's code cached, as a user's frames after the first (the
row says so, `painting_code: cached`, and carries the painting's one-off encoding as
`painting_encode_cpu_ms`):
`reps` calls, the minimum and median wall time kept, and the median CPU time of the process (all
threads; on a shared machine it grows far less with the others' load than the wall time does).
Each variant is the engine's own path: on OpenVINO two passes run the first at
`OPENVINO_EARLY_PASS_SCALE` of the size (the label names both sizes, e.g. `2pass-320-512`) with
the painting's keys merged to `arbitrary_openvino.STYLE_TOKENS` per head (`-k256`), and on the
CPU the palette transport and degrid run in their NumPy forms.
The full path (PyTorch fp32, two passes, 512-px internal) is the quality reference. One row per
variant, kind `cpu`, op `stylize-arbitrary`, with the load average, since the CPU may be shared.
Each row is appended to cpu.csv as soon as its variant is measured (a device run may be killed).
The photos and paintings are the caller's (held-out data, never committed). Not the built-in styles (`bench.cpu`).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from .cpu import load_metrics
from .cpu_host import load_average
from .results import DEFAULT_OUTPUT, Row, append_rows, new_run_id

SIDE = 512


@dataclass(frozen=True)
class Variant:
    backend: str          # reference | openvino
    precision: str        # fp32 | int8
    passes: int
    internal: int         # the longer side the model runs at (512: native)

    @property
    def first_pass(self) -> int:
        """The longer side of the first pass: on OpenVINO every pass but the last runs smaller."""
        from ..engine.arbitrary import OPENVINO_EARLY_PASS_SCALE
        early = self.backend == "openvino" and self.passes > 1
        return round(self.internal * OPENVINO_EARLY_PASS_SCALE) if early else self.internal

    @property
    def style_tokens(self) -> dict[str, int]:
        """The painting's keys per head per level where the path merges them (OpenVINO), else {}."""
        if self.backend != "openvino":
            return {}
        from ..engine.arbitrary_openvino import STYLE_TOKENS
        return dict(STYLE_TOKENS)

    @property
    def label(self) -> str:
        """e.g. torch-fp32-2pass-512, openvino-int8-2pass-320-512-k256 (first pass, then the rest;
        k: the painting's keys per head where merged, one number when all levels have it)."""
        sizes = str(self.internal) if self.first_pass == self.internal else f"{self.first_pass}-{self.internal}"
        tokens = sorted(set(self.style_tokens.values()))
        merged = f"-k{'-'.join(map(str, tokens))}" if tokens else ""
        return (f"{'torch' if self.backend == 'reference' else self.backend}-{self.precision}-"
                f"{self.passes}pass-{sizes}{merged}")


VARIANTS = (
    Variant("reference", "fp32", 2, 512),
    Variant("reference", "fp32", 1, 512),
    Variant("openvino", "fp32", 1, 512),
    Variant("openvino", "int8", 2, 512),
    Variant("openvino", "int8", 1, 512),
    Variant("openvino", "int8", 1, 384),
    Variant("openvino", "int8", 1, 320),
    Variant("openvino", "int8", 1, 256),
)

def load_photo(path: Path, side: int = SIDE) -> torch.Tensor:
    """Longer side `side` (bicubic), float (1, 3, H, W) in 0–255."""
    image = Image.open(path).convert("RGB")
    scale = side / max(image.size)
    image = image.resize((round(image.width * scale), round(image.height * scale)), Image.BICUBIC)
    return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)[None].float()


def stroke_scale(variant: Variant) -> float:
    """The stroke scale that makes the model run at `variant.internal` on a SIDE-px photo."""
    return SIDE / variant.internal


def engine_for(variant: Variant, weights: str | None = None):
    from ..engine.arbitrary import ArbitraryStylizer
    from ..engine.options import StylizeOptions
    return ArbitraryStylizer(StylizeOptions(device="cpu", backend=variant.backend, precision=variant.precision,
                                            passes=variant.passes, stroke_scale=stroke_scale(variant),
                                            arbitrary_weights=weights))


def score(metrics, photo: torch.Tensor, out: torch.Tensor, painting: Path, folder: Path) -> dict[str, float]:
    style = metrics.load(str(painting), SIDE)
    ratio, content = metrics.metrics(photo, out, style)
    path = folder / "out.png"
    Image.fromarray(out[0].permute(1, 2, 0).round().clamp(0, 255).byte().numpy()).save(path)
    return {"style_ratio": ratio, "content_dist": content,
            "palette_dist": metrics.palette_dist(str(path), str(painting)), "grid_score": metrics.grid_score(str(path))}


def measure(variant: Variant, photos: list[Path], paintings: list[Path], metrics, reps: int,
            weights: str | None = None, log=print) -> Row:
    start = time.perf_counter()
    engine = engine_for(variant, weights)
    ready_s = time.perf_counter() - start
    # The timed painting's code, made once (a new painting's first frame pays this; the timed
    # calls below do not: they are the per-photo cost with the code cached, as a user's frames).
    c0 = time.process_time()
    engine.style_code(str(paintings[0]))
    encode_cpu_ms = (time.process_time() - c0) * 1e3
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        for photo_path in photos:
            photo = load_photo(photo_path)
            for painting in paintings:
                out = engine.stylize(photo, [(str(painting), 1.0)])
                pairs.append(score(metrics, photo, out, painting, Path(tmp)))
    timed = engine.bind([(str(paintings[0]), 1.0)])
    photo = load_photo(photos[0])
    timed(photo)
    samples, cpu = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        timed(photo)
        samples.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    quality = {key: round(statistics.median(p[key] for p in pairs), 4) for key in pairs[0]}
    row = Row(kind="cpu", provider=f"ours-arbitrary-{variant.label}", op="stylize-arbitrary", size=str(SIDE),
              dtype=variant.precision, shape=f"{photo.shape[-1]}x{photo.shape[-2]}", batch=1,
              median_ms=round(statistics.median(samples), 1), reps=reps, timer="perf_counter",
              notes={"threads": torch.get_num_threads(), "min_ms": round(min(samples), 1),
                     "cpu_ms_median": round(statistics.median(cpu), 1),
                     "load_avg": load_average(), "passes": variant.passes, "internal": variant.internal,
                     "first_pass_px": variant.first_pass, "style_tokens": variant.style_tokens,
                     "painting_code": "cached", "painting_encode_cpu_ms": round(encode_cpu_ms, 1),
                     "backend": engine.backend, "ready_s": round(ready_s, 2), "pairs": len(pairs), **quality})
    log(f"{row.provider:42} per photo, painting code cached: min {min(samples):7.0f} ms  median "
        f"{row.median_ms:7.0f} ms  CPU {row.notes['cpu_ms_median']:7.0f} ms  (painting's encoding, once: CPU "
        f"{encode_cpu_ms:.0f} ms)  load {row.notes['load_avg']}"
        f"  " + "  ".join(f"{k} {v}" for k, v in quality.items()))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m styleforge.bench.cpu_arbitrary",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--photos", nargs="+", type=Path, required=True)
    parser.add_argument("--paintings", nargs="+", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--variants", nargs="*", default=None, help="labels to run (default: all)")
    parser.add_argument("--weights", default=None, help="arbitrary weights file (default: the shipped one)")
    parser.add_argument("--style-metrics", default=None, metavar="PATH")
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT))
    args = parser.parse_args(argv)
    metrics = load_metrics(args.style_metrics)
    if metrics is None:
        parser.error("style_metrics.py not found: pass --style-metrics PATH")
    unknown = sorted(set(args.variants or ()) - {v.label for v in VARIANTS})
    if unknown:
        parser.error(f"--variants: unknown {', '.join(unknown)}; choose from {', '.join(v.label for v in VARIANTS)}")
    torch.set_num_threads(args.threads)
    chosen = [v for v in VARIANTS if args.variants is None or v.label in args.variants]
    run_id, files = new_run_id(), set()
    for variant in chosen:      # each row appended when measured: a run killed later keeps it
        print(f"{variant.label} …", flush=True)
        row = measure(variant, args.photos, args.paintings, metrics, args.reps, args.weights,
                      log=lambda line: print(line, flush=True))
        files.update(append_rows([row.stamp(run_id, "cpu")], args.output))
    for path in sorted(files):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
