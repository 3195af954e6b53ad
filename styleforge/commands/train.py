"""`styleforge train --style-image PAINTING --content-dir DIR --out NAME.safetensors [...]`.

Parses flags into one `TrainConfig` (every flag is a field) and calls `styleforge.training.train`.
The loop, losses and checkpoints live in `styleforge.training`; this module only parses and
reports. Exit codes: 0 trained, 2 bad input (missing files, VGG weights, bad settings).
"""
from __future__ import annotations

import argparse

from ..training.config import DEVICES, PRECISIONS, SLIM_INITS, STYLE_REDUCTIONS, TrainConfig

_D = TrainConfig()


def _style_size(text: str) -> int | None:
    if text.lower() in ("none", "0", "original"):
        return None
    return int(text)


def layer_weights(text: str) -> tuple[str, ...]:
    """'1,1,1,0.25' → its parts; TrainConfig checks them (count, numbers, ≥ 0)."""
    return tuple(part.strip() for part in text.split(","))


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train", help="train a style network on a painting",
        description="Train a Johnson et al. style network (perceptual losses on VGG16).")
    p.add_argument("--style-image", required=True, metavar="PAINTING", help="the style image")
    p.add_argument("--content-dir", required=True, metavar="DIR", help="folder of training photos")
    p.add_argument("--out", required=True, metavar="NAME.safetensors", help="final weights (fp16)")
    p.add_argument("--vgg-weights", metavar="PATH",
                   help="VGG16 state dict with torchvision key names (default: torchvision's download)")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, default=_D.steps, help=f"optimizer steps (default {_D.steps})")
    length.add_argument("--epochs", type=float, help="passes over the content set (overrides --steps)")
    p.add_argument("--batch-size", type=int, default=_D.batch_size)
    p.add_argument("--image-size", type=int, default=_D.image_size, help="training crop side")
    p.add_argument("--lr", type=float, default=_D.lr)
    p.add_argument("--content-weight", type=float, default=_D.content_weight)
    p.add_argument("--style-weight", type=float, default=_D.style_weight)
    p.add_argument("--style-reduction", choices=STYLE_REDUCTIONS, default=_D.style_reduction,
                   help="per Gram layer: mean of the squared differences (pytorch/examples, default) or "
                        "frobenius: their sum ÷ 64², so relu3_3/relu4_3 weigh 16×/64× more; pair it with a "
                        "smaller --style-weight (docs/training.md)")
    p.add_argument("--style-layer-weights", default=",".join(f"{w:g}" for w in _D.style_layer_weights),
                   metavar="W1,W2,W3,W4",
                   help="× each Gram layer's term, relu1_2,relu2_2,relu3_3,relu4_3 (default 1,1,1,1), e.g. "
                        "1,1,1,0.25 to quieten relu4_3's large motifs")
    p.add_argument("--jpeg-style", type=float, default=_D.jpeg_style, metavar="SHARE",
                   help="share (0–1) of the style term computed on a JPEG round trip of the output, so the "
                        "style survives the files users save (0 = off; one more VGG pass per step)")
    p.add_argument("--jpeg-quality", type=int, default=_D.jpeg_quality,
                   help=f"that JPEG's quality (default {_D.jpeg_quality}, what the CLI writes)")
    p.add_argument("--tv-weight", type=float, default=_D.tv_weight, help="total variation (0 = off)")
    p.add_argument("--grid-weight", type=float, default=_D.grid_weight,
                   help="penalty on the output's fixed 4-px lattice beyond the photo's (0 = off)")
    p.add_argument("--stability-weight", type=float, default=_D.stability_weight,
                   help="video stability: output of a shifted/zoomed/noised photo ≈ the shifted output "
                        "(0 = off; costs one more style-network pass per step; see docs/temporal.md)")
    p.add_argument("--stability-shift", type=float, default=_D.stability_shift, metavar="PX",
                   help=f"largest shift of the stability perturbation (default {_D.stability_shift:g})")
    p.add_argument("--stability-zoom", type=float, default=_D.stability_zoom,
                   help=f"largest ± zoom of the stability perturbation (default {_D.stability_zoom:g})")
    p.add_argument("--stability-rotate", type=float, default=_D.stability_rotate, metavar="DEG",
                   help=f"largest ± rotation of the stability perturbation (default {_D.stability_rotate:g})")
    p.add_argument("--stability-noise", type=float, default=_D.stability_noise, metavar="STD",
                   help=f"noise std (0–255) of the stability perturbation (default {_D.stability_noise:g})")
    p.add_argument("--model", choices=("full", "slim"), default=_D.model,
                   help="full (default) or slim: the half-width network for CPUs (docs/cpu.md)")
    p.add_argument("--teacher", metavar="STYLE|FILE", default=_D.teacher,
                   help="a trained full network to distil from (a built-in name or weights file)")
    p.add_argument("--distill-weight", type=float, default=_D.distill_weight, metavar="W",
                   help="weight of (output − teacher's output)² in [0, 1] units (0 = off; "
                        "dev/device/distill_slim.sh uses 1e7)")
    p.add_argument("--slim-init", choices=SLIM_INITS, default=None,
                   help="how a slim network starts: teacher = the teacher's own channels, chosen and refit "
                        "(default with --model slim --teacher), random = PyTorch's init (docs/cpu.md)")
    p.add_argument("--style-size", type=_style_size, default=_D.style_size, metavar="PX",
                   help=f"painting's longer side in training; 'none' = its own size (default {_D.style_size})")
    p.add_argument("--seed", type=int, default=_D.seed)
    p.add_argument("--checkpoint-every", type=int, default=_D.checkpoint_every, metavar="N")
    p.add_argument("--checkpoint-dir", metavar="DIR", help="default: OUT without suffix + .train/")
    p.add_argument("--keep-checkpoints", type=int, default=_D.keep_checkpoints, metavar="K")
    p.add_argument("--resume", metavar="STEP.pt", help="continue a run exactly from its checkpoint")
    p.add_argument("--sample-every", type=int, default=_D.sample_every, metavar="N")
    p.add_argument("--sample-photo", dest="sample_photos", action="append", default=[], metavar="PHOTO",
                   help="photo for the sample sheets (repeatable; default: the shipped assets)")
    p.add_argument("--log-every", type=int, default=_D.log_every, metavar="N")
    p.add_argument("--device", choices=DEVICES, default=_D.device)
    p.add_argument("--precision", choices=PRECISIONS, default=_D.precision,
                   help="auto = bf16 autocast on CUDA, fp32 on CPU")
    p.add_argument("--no-channels-last", dest="channels_last", action="store_false")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile the loss computation (default: on CUDA; 608 vs 405 images/s on an H200, "
                        "after ~1 min of compiling)")
    p.add_argument("--deterministic", action="store_true", help="deterministic CUDA kernels (slower)")
    p.add_argument("--max-seconds", type=float, metavar="S", help="stop cleanly after S seconds")
    p.add_argument("--max-content", type=int, metavar="N", help="use only the first N photos")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out and the checkpoint folder's earlier run")
    meta = p.add_argument_group("metadata written into the weights file")
    for flag in ("name", "painting", "artist", "year", "licence"):
        meta.add_argument(f"--{flag}", dest=f"meta_{flag}", default=None, metavar="TEXT")


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    metadata = {("style" if k == "name" else k): getattr(args, f"meta_{k}")
                for k in ("name", "painting", "artist", "year", "licence") if getattr(args, f"meta_{k}")}
    return TrainConfig(
        style_image=args.style_image, content_dir=args.content_dir, out=args.out,
        vgg_weights=args.vgg_weights, steps=args.steps, epochs=args.epochs, batch_size=args.batch_size,
        image_size=args.image_size, lr=args.lr, content_weight=args.content_weight,
        style_weight=args.style_weight, style_reduction=args.style_reduction,
        style_layer_weights=layer_weights(args.style_layer_weights), jpeg_style=args.jpeg_style,
        jpeg_quality=args.jpeg_quality, tv_weight=args.tv_weight,
        grid_weight=args.grid_weight,
        stability_weight=args.stability_weight,
        stability_shift=args.stability_shift, stability_zoom=args.stability_zoom,
        stability_rotate=args.stability_rotate,
        stability_noise=args.stability_noise, model=args.model, teacher=args.teacher,
        distill_weight=args.distill_weight, slim_init=args.slim_init, style_size=args.style_size,
        seed=args.seed, checkpoint_every=args.checkpoint_every, checkpoint_dir=args.checkpoint_dir,
        keep_checkpoints=args.keep_checkpoints, resume=args.resume, sample_every=args.sample_every,
        sample_photos=tuple(args.sample_photos), log_every=args.log_every, device=args.device,
        precision=args.precision, channels_last=args.channels_last, compile=args.compile,
        deterministic=args.deterministic, max_seconds=args.max_seconds, max_content=args.max_content,
        progress=args.progress, overwrite=args.overwrite, metadata=metadata)


def training_console():
    """stderr console for a training command's one-line errors; the library's log lines go
    through rich's global console, on which the progress bar draws (so they print above it)."""
    import logging

    from rich import get_console
    from rich.console import Console
    from rich.logging import RichHandler

    logger = logging.getLogger("styleforge")
    if not logger.handlers:
        logger.addHandler(RichHandler(console=get_console(), show_path=False))
        logger.setLevel(logging.INFO)
    return Console(stderr=True, highlight=False, soft_wrap=True)  # one error = one line


def run(args: argparse.Namespace) -> int:
    from ..models.vgg import VGGWeightsError
    from ..training import train

    console = training_console()
    try:
        config = config_from_args(args)
        result = train(config)
    except (VGGWeightsError, FileNotFoundError, FileExistsError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    losses = "  ".join(f"{k} {v:.4g}" for k, v in result.losses.items())
    stop = " (stopped at the time budget)" if result.stopped_early else ""
    console.print(f"wrote {result.out}: {result.steps} steps in {result.seconds:.0f} s, "
                  f"{result.images_per_s:.0f} images/s{stop}; {losses}")
    return 0
