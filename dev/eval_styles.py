"""Held-out style-loss ratios of trained styles: a table on the terminal and a JSON file.

Run from the repository root (paintings and VGG weights in `data/`, as on the GPU machine):

    python dev/eval_styles.py --styles-dir styleforge/styles --json out/eval_styles.json

For every built-in style found in --styles-dir, each shipped asset photo (never trained on) is
stylized and its VGG Gram style loss against the painting is divided by the photo's own
(`styleforge.training.evaluate`). Styles not in the catalogue are evaluated too when their
metadata names a painting file present in --paintings-dir. A dev tool, not part of the package.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from rich.console import Console  # noqa: E402

from styleforge.models.checkpoint import load_checkpoint  # noqa: E402
from styleforge.models.vgg import load_vgg16  # noqa: E402
from styleforge.training.catalogue import BY_NAME  # noqa: E402
from styleforge.training.evaluate import evaluate_style, print_table, report  # noqa: E402
from styleforge.training.samples import default_photos  # noqa: E402


def painting_for(path: Path, paintings_dir: Path) -> Path | None:
    if path.stem in BY_NAME:
        return paintings_dir / BY_NAME[path.stem].painting_file
    checkpoint = load_checkpoint(path)
    name = checkpoint.metadata.get("painting_file") or checkpoint.training_settings().get("style_image")
    return paintings_dir / name if name else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="held-out style-loss ratios of trained styles")
    p.add_argument("--styles-dir", default="styleforge/styles")
    p.add_argument("--paintings-dir", default="data/styles")
    p.add_argument("--vgg-weights", default="data/vgg16_relu4_3.fp16.pth")
    p.add_argument("--photo", dest="photos", action="append", default=[],
                   help="held-out photo (repeatable; default: styleforge/assets/)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--json", default="out/eval_styles.json")
    args = p.parse_args(argv)

    console = Console(stderr=True)
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    vgg = load_vgg16(args.vgg_weights, device, torch.float32)
    photos = [Path(x) for x in args.photos] or default_photos()
    scores = []
    for path in sorted(Path(args.styles_dir).glob("*.safetensors")):
        painting = painting_for(path, Path(args.paintings_dir))
        if painting is None or not painting.is_file():
            console.print(f"skipping {path.name}: painting {painting} not found")
            continue
        scores += evaluate_style(path.stem, path, painting, photos, vgg, device=device)
    if not scores:
        console.print(f"no evaluable styles in {args.styles_dir}")
        return 1
    print_table(scores, console)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report(scores), indent=2))
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
