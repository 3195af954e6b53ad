"""`styleforge train-arbitrary [...]`: train the arbitrary-style model (one GPU, or torchrun DDP).

Parses flags into one `ArbitraryTrainConfig` (every flag a field) and calls
`styleforge.training.arbitrary_trainer.train_arbitrary`. Exit codes: 0 trained, 2 bad input.
"""
from __future__ import annotations

import argparse

from ..training.arbitrary_config import DEVICES, HELD_OUT, PRECISIONS, ArbitraryTrainConfig

_D = ArbitraryTrainConfig()


def register(subparsers) -> None:
    p = subparsers.add_parser("train-arbitrary", help="train the any-painting style model",
                              description="Train the arbitrary-style model (AdaAttN-like, docs/arbitrary.md). "
                                          "Multi-GPU: torchrun --nproc-per-node N -m styleforge train-arbitrary ...")
    p.add_argument("--content-dir", default=_D.content_dir, metavar="DIR")
    p.add_argument("--style-dir", dest="style_dirs", action="append", metavar="DIR",
                   help=f"painting folder (repeatable; default {_D.style_dirs[0]})")
    p.add_argument("--vgg-weights", metavar="PATH", required=True,
                   help="torchvision-key VGG16 state dict up to conv5_1 (vgg16_relu5_1.fp16.pth)")
    p.add_argument("--run-dir", default=_D.run_dir, metavar="DIR", help="checkpoints and sample sheets")
    p.add_argument("--out", metavar="FILE", help="final weights (default RUN_DIR/arbitrary.safetensors)")
    for name in ("steps", "batch_size", "image_size", "content_size", "style_size", "warmup",
                 "checkpoint_every", "keep_checkpoints", "sample_every", "log_every", "seed"):
        p.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(_D, name))
    for name in ("lr", "min_lr_ratio", "content_weight", "style_weight", "gram_weight", "local_weight",
                 "identity_pixel_weight", "identity_feature_weight", "colour_weight", "grid_weight",
                 "hue_jitter", "group_power"):
        p.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(_D, name))
    p.add_argument("--max-content", type=int, metavar="N", help="use only the first N photos")
    p.add_argument("--exclude", nargs="*", default=list(HELD_OUT), metavar="STEM",
                   help="painting name prefixes kept out of training (default: the held-out four)")
    p.add_argument("--max-style-tokens", type=int, default=_D.model.max_style_tokens)
    p.add_argument("--levels", nargs="+", default=list(_D.model.levels), metavar="LEVEL",
                   help=f"VGG levels with a transfer block, consecutive (default {' '.join(_D.model.levels)})")
    p.add_argument("--device", choices=DEVICES, default=_D.device)
    p.add_argument("--precision", choices=PRECISIONS, default=_D.precision)
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=_D.compile,
                   help="torch.compile the model call")
    p.add_argument("--resume", metavar="STEP.pt|auto", help="continue from a checkpoint (auto: the newest)")
    p.add_argument("--init-weights", metavar="FILE", help="start from this weights file (step 0, Adam "
                   "afresh) when --resume finds no checkpoint")
    p.add_argument("--max-seconds", type=float, metavar="S", help="stop cleanly after S seconds")
    p.add_argument("--no-progress", dest="progress", action="store_false")


def config_from_args(args: argparse.Namespace) -> ArbitraryTrainConfig:
    import dataclasses
    fields = {f.name for f in dataclasses.fields(ArbitraryTrainConfig)} - {"model", "style_dirs", "exclude"}
    values = {name: getattr(args, name) for name in fields}
    model = dataclasses.replace(_D.model, max_style_tokens=args.max_style_tokens, levels=tuple(args.levels))
    return ArbitraryTrainConfig(**values, style_dirs=tuple(args.style_dirs or _D.style_dirs),
                                exclude=tuple(args.exclude), model=model)


def run(args: argparse.Namespace) -> int:
    from ..models.vgg import VGGWeightsError
    from ..training.arbitrary_trainer import train_arbitrary
    from .train import training_console

    console = training_console()
    try:
        result = train_arbitrary(config_from_args(args))
    except (VGGWeightsError, FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    if result.out is not None:
        losses = "  ".join(f"{k} {v:.4g}" for k, v in result.losses.items())
        console.print(f"wrote {result.out}: {result.steps} steps in {result.seconds:.0f} s; {losses}")
    return 0
