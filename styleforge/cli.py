"""`styleforge` command line: a thin layer that parses flags and calls the library.

Each subcommand lives in `styleforge/commands/<name>.py` with two functions:
`register(subparsers)` adds its parser (cheap: no heavy imports), and `run(args) -> int`
does the work and returns the exit code.
"""
from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = ("stylize", "styles", "train", "bench", "profile", "build")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="styleforge", description="Fast neural style transfer: stylize, train, benchmark.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"styleforge.commands.{name}")
        module.register(sub)
    return parser


def _version() -> str:
    from . import __version__
    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    module = importlib.import_module(f"styleforge.commands.{args.command}")
    try:
        return module.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
