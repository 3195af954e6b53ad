"""Issue 44's video bar on the CPU: each built-in style's warping error on moving-camera clips, its
new weights (trained with the stability loss) against its shipped ones, clip by clip.

    python dev/eval_warp_styles.py --v2-dir runs/builtin/int8 --out out/warp \
        [--v1-dir styleforge/styles] [--size 320] [--frames 16] [--rows benchmarks/results]

Clips: the temporal bench's scenes (`bench.temporal.make_clips`: pan, zoom, rotation and the
moving subject, from the shipped photos, through H.264 and back) at `--size` px wide (16:9) —
the warping error grows with the frame's size, so compare numbers of one size only. Each style
file stylizes every frame on its own (no `--temporal`) through the library's `Stylizer` (CPU,
fp32, strength 1.0); the error is `media/warping_error.py`'s (DIS flows on the inputs, shared by
every style). A style with a file in both folders gets v2/v1 per clip and a verdict against
the bar (v2 ≤ 0.6× v1); one only in `--v2-dir` (a new style) is just reported. Beside it,
"detail": the outputs' mean Sobel magnitude of luminance ÷ the inputs', since a model that
paints flatter frames also flickers less — a low ratio with a much lower detail is a weaker
style, not a steadier one. Writes `warp.md` and `warp.json` to `--out`; `--rows` appends the
per-clip rows to `temporal.jsonl` there in the temporal bench's schema (v1 as `per-frame`, v2
as `stability`). A dev tool, not part of the package; no style ratio (dev/eval_styles.py has it).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from styleforge.bench.temporal import input_flows, make_clips  # noqa: E402
from styleforge.bench.temporal_options import TemporalBenchConfig  # noqa: E402
from styleforge.media.warping_error import step_masks, warping_error  # noqa: E402

BAR = 0.6                                             # issue 44: v2's warping error ≤ 0.6× v1's
SCENES = ("pan", "zoom", "rotation", "subject")       # the moving-camera clips (the cut is not one)
REPO = Path(__file__).resolve().parent.parent


def verdict(ratios: dict[str, float], bar: float = BAR) -> str:
    """'met' when every clip's v2/v1 is within the bar; 'mean only' when the mean over clips is
    but some clip is not; else 'not met'."""
    if not ratios:
        raise ValueError("no clips to judge")
    if all(r <= bar for r in ratios.values()):
        return "met"
    return "mean only" if statistics.fmean(ratios.values()) <= bar else "not met"


def detail(frames: list[np.ndarray]) -> float:
    """Mean Sobel gradient magnitude of the frames' luminance (0–255 scale)."""
    def one(rgb):
        grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
        return float(np.hypot(cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1)).mean())
    return statistics.fmean(one(f) for f in frames)


def stylize(path: Path, frames: list[np.ndarray], batch: int) -> tuple[list[np.ndarray], float]:
    """uint8 frames → styled uint8 frames (each frame on its own; batched only for speed, the
    network's instance norm keeps frames apart) and the wall ms per frame."""
    from styleforge.engine.options import StylizeOptions
    from styleforge.engine.pipeline import Stylizer
    stylizer = Stylizer(StylizeOptions(checkpoint=str(path), device="cpu", precision="fp32", strength=1.0))
    out, start = [], time.perf_counter()
    for i in range(0, len(frames), batch):
        x = torch.from_numpy(np.stack(frames[i:i + batch])).permute(0, 3, 1, 2).float()
        y = stylizer(x).round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).contiguous().numpy()
        out += list(y)
    return out, (time.perf_counter() - start) * 1e3 / len(frames)


def shown(path: Path) -> str:
    """`path` relative to the repository when inside it, else absolute."""
    full = path.resolve()
    return str(full.relative_to(REPO) if full.is_relative_to(REPO) else full)


def describe(path: Path) -> dict:
    """Which weights: the path, SHA-256 and the training steps its metadata records."""
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        steps = (f.metadata() or {}).get("steps")
    return {"path": shown(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "steps": steps}


def evaluate(args: argparse.Namespace, log=print) -> dict:
    v2 = {p.stem: p for p in sorted(args.v2_dir.glob("*.safetensors"))}
    # styles with a v1 first: they carry the verdict
    names = args.styles or sorted(v2, key=lambda n: (not (args.v1_dir / f"{n}.safetensors").is_file(), n))
    missing = [n for n in names if n not in v2]
    if missing:
        raise FileNotFoundError(f"no v2 file for {', '.join(missing)} in {args.v2_dir}")
    config = TemporalBenchConfig(scenes=tuple(args.scenes), size=args.size, frames=args.frames, speed_frames=0,
                                 output=None)
    with tempfile.TemporaryDirectory(prefix="sf-warp-") as tmp:
        clips = make_clips(config, Path(tmp), log=lambda m: None)
    workers = max(1, min(4, os.cpu_count() or 1))
    flows = {c.name: input_flows(c.frames, workers) for c in clips}
    masks = {name: step_masks(f) for name, f in flows.items()}
    input_detail = {c.name: detail(c.frames) for c in clips}
    frames = [f for c in clips for f in c.frames]
    result = {"size": clips[0].name.split("@")[1], "frames": args.frames, "scenes": list(args.scenes), "bar": BAR,
              "strength": 1.0, "precision": "fp32", "device": "cpu",
              "clips": {name: {"masked_fraction": round(statistics.fmean(1.0 - float(m.mean()) for m in ms), 4)}
                        for name, ms in masks.items()}, "styles": {}}
    for name in names:
        versions = {"v1": args.v1_dir / f"{name}.safetensors", "v2": v2[name]}
        versions = {k: p for k, p in versions.items() if p.is_file()}
        entry = {"weights": {k: describe(p) for k, p in versions.items()}, "warp": {}, "detail": {}, "ms_per_frame": {}}
        for version, path in versions.items():
            styled, ms = stylize(path, frames, args.batch)
            entry["ms_per_frame"][version] = round(ms, 1)
            entry["warp"][version], entry["detail"][version] = {}, {}
            for k, clip in enumerate(clips):
                outputs = styled[k * args.frames:(k + 1) * args.frames]
                error = warping_error(outputs, flows[clip.name], masks[clip.name])
                entry["warp"][version][clip.name] = error.mean
                entry["detail"][version][clip.name] = detail(outputs) / input_detail[clip.name]
        if "v1" in versions:
            entry["ratio"] = {c: entry["warp"]["v2"][c] / entry["warp"]["v1"][c] for c in entry["warp"]["v1"]}
            entry["mean_ratio"] = statistics.fmean(entry["ratio"].values())
            entry["verdict"] = verdict(entry["ratio"])
        result["styles"][name] = entry
        log(f"{name}: " + "  ".join(f"{c} {' '.join(f'{v}={e[c]:.5f}' for v, e in entry['warp'].items())}"
                                   for c in entry["warp"]["v2"]) + f"  {entry.get('verdict', 'new style')}")
    return result


def markdown(result: dict) -> str:
    clips = list(result["clips"])
    compared = {n: e for n, e in result["styles"].items() if "ratio" in e}
    new = {n: e for n, e in result["styles"].items() if "ratio" not in e}
    out = [f"Warping error (Lai et al. 2018, `media/warping_error.py`), per-frame stylization, strength 1.0, "
           f"CPU fp32; clips {result['size']}, {result['frames']} frames; bar v2 ≤ {result['bar']}× v1 per clip. "
           "Detail: outputs' mean Sobel magnitude ÷ inputs'.", "",
           "| style | clip | v1 warp | v2 warp | v2/v1 | v1 detail | v2 detail |", "|---|---|---:|---:|---:|---:|---:|"]
    for name, e in compared.items():
        for c in clips:
            out.append(f"| {name} | {c.split('@')[0]} | {e['warp']['v1'][c]:.5f} | {e['warp']['v2'][c]:.5f} | "
                       f"{e['ratio'][c]:.2f} | {e['detail']['v1'][c]:.2f} | {e['detail']['v2'][c]:.2f} |")
    out += ["", "| style | v1 steps | v2 steps | mean v2/v1 | worst clip | verdict |", "|---|---:|---:|---:|---|---|"]
    for name, e in compared.items():
        worst = max(e["ratio"], key=e["ratio"].get)
        out.append(f"| {name} | {e['weights']['v1']['steps']} | {e['weights']['v2']['steps']} | "
                   f"{e['mean_ratio']:.2f} | {worst.split('@')[0]} {e['ratio'][worst]:.2f} | {e['verdict']} |")
    if new:
        out += ["", "New styles (no v1): warping error per clip (detail in brackets).", "",
                "| style | v2 steps | " + " | ".join(c.split("@")[0] for c in clips) + " |",
                "|---|---:|" + "---:|" * len(clips)]
        for name, e in new.items():
            out.append(f"| {name} | {e['weights']['v2']['steps']} | "
                       + " | ".join(f"{e['warp']['v2'][c]:.5f} ({e['detail']['v2'][c]:.2f})" for c in clips) + " |")
    masked = ", ".join(f"{c.split('@')[0]} {v['masked_fraction']:.1%}" for c, v in result["clips"].items())
    return "\n".join(out + ["", f"_Masked share of pixels per clip: {masked}. {result['env_line']}_", ""])


def append_rows(result: dict, folder: Path, args: argparse.Namespace) -> Path:
    """The per-clip rows in `bench/temporal.py`'s schema, one run id for the whole evaluation."""
    from styleforge.bench.results import new_run_id
    run_id, path = new_run_id(), folder / "temporal.jsonl"
    with path.open("a") as f:
        for name, e in result["styles"].items():
            v1 = e["weights"].get("v1")
            config = TemporalBenchConfig(style=v1["path"] if v1 else name,
                                         stability_checkpoint=e["weights"]["v2"]["path"], scenes=tuple(args.scenes),
                                         size=args.size, frames=args.frames, speed_frames=0, output=str(folder))
            for version, method in (("v1", "per-frame"), ("v2", "stability")):
                for clip, error in e["warp"].get(version, {}).items():
                    f.write(json.dumps({
                        "run_id": run_id, "clip": clip, "method": method, "frames": args.frames,
                        "size": result["size"], "warp_error": error,
                        "warp_vs_per_frame": e.get("ratio", {}).get(clip, 1.0 if version == "v1" else None),
                        "style_ratio": None, "stylize_ms": e["ms_per_frame"][version], "blend_ms": 0.0,
                        "strength": 0.0, "style_strength": 1.0, "weights": e["weights"][version],
                        "tool": "dev/eval_warp_styles.py", "config": asdict(config), "env": result["env"]}) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--v2-dir", type=Path, required=True, help="the new style files (<name>.safetensors)")
    p.add_argument("--v1-dir", type=Path, default=REPO / "styleforge" / "styles", help="the shipped style files")
    p.add_argument("--styles", nargs="*", help="names (default: every file in --v2-dir)")
    p.add_argument("--scenes", type=lambda s: s.split(","), default=list(SCENES))
    p.add_argument("--size", type=int, default=320, help="clip width in px (16:9)")
    p.add_argument("--frames", type=int, default=16, help="frames per clip")
    p.add_argument("--batch", type=int, default=8, help="frames per network call")
    p.add_argument("--out", type=Path, required=True, help="folder for warp.md and warp.json")
    p.add_argument("--rows", type=Path, help="also append rows to temporal.jsonl in this folder")
    args = p.parse_args(argv)
    from styleforge.bench.env import capture_environment
    torch.set_grad_enabled(False)
    start = time.perf_counter()
    result = evaluate(args, log=lambda m: print(m, file=sys.stderr))
    env = result["env"] = capture_environment("cpu")
    result["seconds"] = round(time.perf_counter() - start, 1)
    result["env_line"] = (f"{env['device_name']} · torch {env['torch']} · {torch.get_num_threads()} threads · "
                          f"commit {env['commit'][:10]} · {result['seconds']:.0f} s")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "warp.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "warp.md").write_text(markdown(result))
    if args.rows:
        append_rows(result, args.rows, args)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
