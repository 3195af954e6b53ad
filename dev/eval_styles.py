"""Score every style file with the four measures of shared/tools/style_metrics.py, on the files the
CLI writes (JPEG and PNG), on held-out photos; a table, a JSON file and a contact sheet.

Run from the repository root (paintings and VGG in `.data/`, as dev/device/pack_data.sh lays them):

    python dev/eval_styles.py --styles-dir runs/builtin/int8 --metrics ../shared/tools/style_metrics.py \
        --out out/eval [--photo amber.jpg ...] [--device cuda]

Photos: the shipped assets (styleforge/assets/*.jpg) plus any --photo, none of them training
photos (never pass shared/data/content). Each style stylizes every photo through the library's
image pipeline (`media.images.stylize_images`, what `styleforge stylize` runs) into a .jpg with
the default options (quality 95, 4:4:4) and a .png, and each file is scored against the style's
painting: style_ratio, content_dist, palette_dist, grid_score; medians per style and format are
checked against issue 44's bars (style ratio ≤ 0.12, content distance ≤ 2.0, grid_score ≤ 10).
`--chroma 420` adds 4:2:0 JPEGs (what a video frame keeps). The painting comes from the catalogue
or from the file's `painting_file` metadata. `cli_medians` scores one weights file exactly so
(dev/train_builtin.py --metrics, on the GPU); `heldout_medians` scores it without the CLI, at
512 px in fp32 (the older, optimistic preview). A dev tool, not part of the package.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PIL import Image, ImageDraw  # noqa: E402

from styleforge.engine.options import StylizeOptions  # noqa: E402
from styleforge.models.checkpoint import load_checkpoint  # noqa: E402
from styleforge.training.catalogue import BY_NAME  # noqa: E402
from styleforge.training.samples import default_photos  # noqa: E402

BARS = {"style_ratio": 0.12, "content_dist": 2.0, "grid_score": 10.0}
MEASURES = ("style_ratio", "content_dist", "palette_dist", "grid_score")
METRICS_VGG = "vgg16_relu4_3.fp16.pth"     # what style_metrics.py loads from its ../data/
FORMATS = {"png": "444", "jpg": "444"}     # issue 44's: PNG and JPEG with full chroma (the CLI's default)


def load_metrics(path: Path):
    """The style_metrics module at `path`; it reads its VGG from ../data/ beside its own folder,
    so that file is checked here, before any work, rather than at the first score."""
    vgg = Path(path).resolve().parent.parent / "data" / METRICS_VGG
    if not Path(path).is_file() or not vgg.is_file():
        raise FileNotFoundError(f"--metrics {path}: needs the module and {vgg} (lay it out as "
                                f"DIR/tools/style_metrics.py and DIR/data/{METRICS_VGG})")
    spec = importlib.util.spec_from_file_location("style_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def painting_for(path: Path, paintings_dir: Path) -> Path | None:
    if path.stem in BY_NAME:
        return paintings_dir / BY_NAME[path.stem].painting_file
    checkpoint = load_checkpoint(path)
    name = checkpoint.metadata.get("painting_file") or checkpoint.training_settings().get("style_image")
    return paintings_dir / name if name else None


def write_outputs(style: Path, photos: list[Path], out: Path, device: str, formats: dict, **extra) -> dict:
    """{(photo, format): file} written by the CLI's pipeline for this style; `extra`: more
    StylizeOptions fields (none: the CLI's defaults)."""
    import styleforge.api as api
    from styleforge.media.images import ImageJob, stylize_images
    files = {}
    for fmt, chroma in formats.items():
        options = StylizeOptions(checkpoint=str(style), device=device, overwrite=True, chroma=chroma, **extra)
        suffix = ".png" if fmt == "png" else ".jpg"
        jobs = [ImageJob(p, out / f"{p.stem}_{style.stem}_{fmt}{suffix}") for p in photos]
        for job, record in zip(jobs, stylize_images(jobs, api.get_stylizer(options), options)):
            if record.error is not None:
                raise RuntimeError(f"{style.name} on {job.source}: {record.error}")
            files[(job.source, fmt)] = Path(job.target)
    return files


def score(metrics, photo: Path, output: Path, painting: Path) -> dict:
    p, o = metrics.load(photo, 512), metrics.load(output, 512)
    if o.shape != p.shape:
        import torch.nn.functional as F
        o = F.interpolate(o, size=p.shape[-2:], mode="bilinear")
    ratio, content = metrics.metrics(p, o, metrics.load(painting, 512))
    return {"style_ratio": ratio, "content_dist": content,
            "palette_dist": metrics.palette_dist(output, painting), "grid_score": metrics.grid_score(output)}


def cli_medians(metrics, weights: Path, painting: Path, photos: list[Path], work: Path, device: str = "auto",
                formats: dict = FORMATS, **extra) -> dict:
    """{format: medians of `score` over `photos`} for one weights file, scored as main() scores it:
    the files the CLI's pipeline writes into `work`, each photo at its own size, PNG and JPEG 4:4:4.
    dev/train_builtin.py --metrics, on the device's GPU (`device`)."""
    written = write_outputs(weights, photos, work, device, formats, **extra)
    medians = {}
    for fmt in formats:
        rows = [score(metrics, Path(p), written[(p, fmt)], painting) for p in photos]
        medians[fmt] = {m: statistics.median(r[m] for r in rows) for m in MEASURES}
    return medians


def heldout_medians(metrics, weights: Path, painting: Path, photos: list[Path], device: str = "cpu") -> dict:
    """Medians of `score` over `photos` for one weights file, without the CLI: each photo at a
    longer side of 512 through the engine's Stylizer in fp32 (reference backend, as
    training/evaluate.py's held-out ratio), the output rounded to uint8 and written as a
    temporary PNG, which `score` reads like a CLI output. dev/train_builtin.py --metrics."""
    import tempfile

    import torch

    from styleforge.engine.pipeline import Stylizer
    from styleforge.training.samples import load_photos
    stylizer = Stylizer(StylizeOptions(checkpoint=str(weights), device=device, precision="fp32",
                                       backend="reference"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="heldout_") as work:
        for path, photo in zip(photos, load_photos(photos)):
            out = stylizer(photo)[0].clamp(0, 255).round().to(torch.uint8)      # (3, H, W)
            png = Path(work) / f"{Path(path).stem}.png"
            Image.fromarray(out.permute(1, 2, 0).numpy()).save(png)
            rows.append(score(metrics, Path(path), png, painting))
    return {m: statistics.median(r[m] for r in rows) for m in MEASURES}


def contact_sheet(photos: list[Path], styles: list[str], files: dict, path: Path, cell: int = 224) -> None:
    """Rows = photos, columns = the photo then each style's PNG, labelled."""
    label = 18
    sheet = Image.new("RGB", ((len(styles) + 1) * cell, len(photos) * (cell + label)), "white")
    draw = ImageDraw.Draw(sheet)
    for r, photo in enumerate(photos):
        for c, (name, image_path) in enumerate([("photo", photo)] + [(s, files[(s, photo, "png")]) for s in styles]):
            with Image.open(image_path) as im:
                im = im.convert("RGB")
                im.thumbnail((cell, cell), Image.LANCZOS)
                sheet.paste(im, (c * cell, r * (cell + label) + label))
            draw.text((c * cell + 4, r * (cell + label) + 3), name, fill="black")
    sheet.save(path, quality=92, subsampling=0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--styles-dir", default="styleforge/styles")
    p.add_argument("--paintings-dir", default=".data/styles")
    p.add_argument("--metrics", default="../shared/tools/style_metrics.py",
                   help="shared/tools/style_metrics.py (it finds its VGG in ../data beside it)")
    p.add_argument("--photo", dest="photos", action="append", default=[],
                   help="another held-out photo (repeatable); the asset photos are always used")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--chroma420", action="store_true", help="also score 4:2:0 JPEGs")
    p.add_argument("--out", default="out/eval")
    args = p.parse_args(argv)

    metrics = load_metrics(Path(args.metrics))
    photos = default_photos() + [Path(x) for x in args.photos]
    out = Path(args.out)
    (out / "files").mkdir(parents=True, exist_ok=True)
    formats = {**FORMATS, **({"jpg420": "420"} if args.chroma420 else {})}
    rows, files, failed = [], {}, []
    for style in sorted(Path(args.styles_dir).glob("*.safetensors")):
        painting = painting_for(style, Path(args.paintings_dir))
        if painting is None or not painting.is_file():
            print(f"skipping {style.name}: painting {painting} not found", file=sys.stderr)
            continue
        written = write_outputs(style, photos, out / "files", args.device, formats)
        for (photo, fmt), path in written.items():
            files[(style.stem, Path(photo), fmt)] = path
            rows.append({"style": style.stem, "photo": Path(photo).name, "format": fmt,
                         **score(metrics, Path(photo), path, painting)})
    if not rows:
        print(f"no evaluable styles in {args.styles_dir}", file=sys.stderr)
        return 1
    summary = {}
    print(f"{'style':22s}{'format':>8s}" + "".join(f"{m:>14s}" for m in MEASURES) + "   bars")
    for style in sorted({r["style"] for r in rows}):
        for fmt in formats:
            mine = [r for r in rows if r["style"] == style and r["format"] == fmt]
            medians = {m: statistics.median(r[m] for r in mine) for m in MEASURES}
            ok = all(medians[m] <= bar for m, bar in BARS.items())
            summary[f"{style}/{fmt}"] = {**medians, "meets_bars": ok}
            if not ok:
                failed.append(f"{style}/{fmt}")
            print(f"{style:22s}{fmt:>8s}" + "".join(f"{medians[m]:14.3f}" for m in MEASURES)
                  + ("   met" if ok else "   MISSED"))
    styles = sorted({r["style"] for r in rows})
    contact_sheet(photos, styles, files, out / "sheet.jpg")
    (out / "eval.json").write_text(json.dumps({"bars": BARS, "photos": [str(p) for p in photos],
                                               "medians": summary, "rows": rows}, indent=2))
    print(f"wrote {out / 'eval.json'} and {out / 'sheet.jpg'}; {len(failed)} style/format pairs miss a bar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
