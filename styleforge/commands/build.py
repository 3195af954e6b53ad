"""`styleforge build [--arch MAJOR.MINOR] [--force] [--verbose]`: prebuild the CUDA kernels.

The kernels otherwise compile on first use (`styleforge.kernels.build`, JIT with ninja and
nvcc, about a minute) and are cached; this command does it ahead of time, e.g. in a container
build, and says where the library went. It is a thin layer over `build.build_and_load`; it
does not install anything into the package.
"""
from __future__ import annotations

import argparse


def _arch(text: str) -> tuple[int, int]:
    try:
        major, minor = (int(part) for part in text.split("."))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MAJOR.MINOR, e.g. 9.0") from None
    return major, minor


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "build", help="compile the CUDA kernels now (otherwise they build on first use)",
        description="Compile StyleForge's CUDA kernels into the cache and report where they are.")
    p.add_argument("--arch", type=_arch, default=None, metavar="MAJOR.MINOR",
                   help="GPU compute capability to build for (default: the current GPU's)")
    p.add_argument("--force", action="store_true", help="rebuild even if a cached build exists")
    p.add_argument("--verbose", action="store_true", help="show the compiler's output")


def run(args) -> int:
    import torch
    from rich.console import Console

    from ..kernels import build

    console = Console(soft_wrap=True)
    if args.arch is None and not torch.cuda.is_available():
        console.print("[red]No CUDA device is visible, so there is nothing to build for.[/red] "
                      "The reference (PyTorch) path needs no build; pass --arch 9.0 (for example) "
                      "to build for a GPU this machine cannot see.")
        return 1
    try:
        path = build.build_and_load(capability=args.arch, verbose=args.verbose, force=args.force)
    except Exception as exc:  # the compiler's and the loader's errors vary; all mean the build failed
        console.print(f"[red]building the StyleForge CUDA kernels failed:[/red] {exc}")
        if not args.verbose:
            console.print("run `styleforge build --verbose` for the full compiler output")
        return 1
    console.print(f"StyleForge CUDA kernels ready: [bold]{path}[/bold]")
    console.print(f"cache folder: {build.cache_root()} (set STYLEFORGE_CACHE_DIR to move it)")
    return 0
