"""`ExportOptions`: what `styleforge export` and `styleforge.export.export_model` take (no torch here).

Every CLI flag is a field, checked here whether it came from a flag or from Python, so a bad value
fails before any weights load. The exported graph is fixed at export time: style, stroke scale 1
(the network's native strokes), fp32; for the arbitrary model also the painting's size, alpha 1
and the number of passes. docs/export.md states the files' input and output contract.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..engine.options import MAX_PASSES, StylizeOptions

_STYLIZE = StylizeOptions()   # the engine's defaults: the exported graph matches `stylize`'s

FORMATS = ("onnx", "aoti")
DEVICES = ("cpu", "cuda")
SUFFIX = {"onnx": ".onnx", "aoti": ".pt2"}
# PyTorch's ONNX exporter writes opset-18 ops and converts other opsets with onnx's version
# converter, which has no Pad adapter below 18 (asked for 17, the file silently stays 18). Later
# opsets convert. InstanceNormalization is a native op in all of them.
DEFAULT_OPSET = 18
MIN_OPSET = 18
ARBITRARY_PAINTING_SIZE = _STYLIZE.style_size   # the side the engine encodes paintings at


@dataclass(frozen=True)
class ExportOptions:
    style: str | None = None            # built-in name or checkpoint path (None: the default style)
    format: str = "onnx"                # onnx | aoti
    output: str | None = None           # None: <style>.onnx / <style>.pt2 in the working folder
    arbitrary: bool = False             # export the arbitrary-style model (photo + painting) instead
    arbitrary_weights: str | None = None  # its weights (None: the shipped file)
    style_size: int = ARBITRARY_PAINTING_SIZE  # arbitrary: the painting input is style_size × style_size
    passes: int = _STYLIZE.passes       # arbitrary: times the model is applied
    opset: int = DEFAULT_OPSET          # ONNX opset
    device: str = "cpu"                 # aoti: the device kind the package is compiled for
    check: bool = True                  # run the written file and compare it with the engine's output

    def __post_init__(self):
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {self.format!r}")
        if self.arbitrary and self.style is not None:
            raise ValueError("give a style or arbitrary=True, not both (the arbitrary model takes "
                             "the painting as an input)")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.device != "cpu" and self.format != "aoti":
            raise ValueError("device applies to --format aoti only (an ONNX file runs anywhere)")
        if self.opset < MIN_OPSET:
            raise ValueError(f"opset must be ≥ {MIN_OPSET}, got {self.opset}")
        if not 1 <= self.passes <= MAX_PASSES:
            raise ValueError(f"passes must be in 1..{MAX_PASSES}, got {self.passes}")
        if not 64 <= self.style_size <= 4096:
            raise ValueError(f"style_size must be in 64..4096, got {self.style_size}")

    def output_path(self, style_name: str) -> Path:
        if self.output:
            return Path(self.output).expanduser()
        return Path(f"{style_name}{SUFFIX[self.format]}")
