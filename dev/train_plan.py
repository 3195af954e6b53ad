"""Recipe variants for one device call: `dev/train_builtin.py --plan PLAN.json` trains each as its
own run, so several recipes of one style (or of several) train side by side.

A plan is a JSON file {"variants": [...]} (dev/device/plans/ holds the rounds' plans; JSON rather
than TOML because tomllib needs Python 3.11 and the project supports 3.10). Each variant:

    name                unique, [a-z0-9_]: the run folder, the exported file's name, its log row
    style               a catalogue name: painting, metadata, the recipe and its tweaks
    warm                "shipped" (styleforge/styles/<style>.safetensors), "none" (default), or a path
    painting            another painting file for the style (in the paintings folder), e.g. a new
                        crop tried before the catalogue takes it; trained and scored against it
    style_weight_scale  × the style's own style_weight (its tweak, else the recipe's), or × the
                        variant's style_weight where it sets one
    why                 the hypothesis it tests, kept in the weights' metadata
    any of SETTINGS     TrainConfig fields, e.g. "style_reduction": "frobenius"; they win over the
                        recipe, the style's tweaks and train_builtin's flags

Each variant's weights say which variant they are: `variant` (the name) and `variant_plan` (its
entry) in the safetensors metadata, beside the `training` settings every file records. Checked
here when the plan loads, before any GPU work: a misspelt key or style fails the call at once
rather than after minutes of training. A dev tool, not imported by the package.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from styleforge.training.catalogue import BuiltinStyle, get

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "styleforge" / "styles"
# The TrainConfig fields a variant may set: what shapes the weights, not where files go.
SETTINGS = ("steps", "batch_size", "image_size", "lr", "content_weight", "style_weight", "style_reduction",
            "style_layer_weights", "tv_weight", "grid_weight", "stability_weight", "stability_shift",
            "stability_zoom", "stability_rotate", "stability_noise", "style_size", "jpeg_style", "jpeg_quality",
            "flat_augment")
KEYS = ("name", "style", "warm", "painting", "style_weight_scale", "why")
NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")


@dataclass(frozen=True)
class Variant:
    name: str
    style: str
    warm: str = "none"
    style_weight_scale: float | None = None
    why: str = ""
    settings: dict = field(default_factory=dict)
    painting: str = ""

    def catalogue_style(self) -> BuiltinStyle:
        """The catalogue's style, with this variant's painting file where it names one (its title
        then says so, and the catalogue's source, which is another file's, is left out)."""
        style = get(self.style)
        if self.painting in ("", style.painting_file):
            return style
        return replace(style, painting_file=self.painting, title=f"{self.painting} (a variant's painting for "
                       f"{self.style})", source="", source_licence="")

    def warm_file(self) -> Path | None:
        """The weights this run starts from, or None (PyTorch's init)."""
        if self.warm == "none":
            return None
        return SHIPPED_DIR / f"{self.style}.safetensors" if self.warm == "shipped" else Path(self.warm)

    def describe(self) -> dict:
        """This variant as its plan states it (the weights' `variant_plan` metadata)."""
        plan = {"name": self.name, "style": self.style, "warm": self.warm, **self.settings}
        if self.painting:
            plan["painting"] = self.painting
        if self.style_weight_scale is not None:
            plan["style_weight_scale"] = self.style_weight_scale
        return {**plan, "why": self.why} if self.why else plan


def parse_variant(table: dict) -> Variant:
    unknown = sorted(set(table) - set(KEYS) - set(SETTINGS))
    if unknown:
        raise ValueError(f"variant {table.get('name', '?')!r}: unknown key(s) {unknown}; a variant takes "
                         f"{KEYS} and TrainConfig's {SETTINGS}")
    name = table.get("name", "")
    if not NAME.match(name):
        raise ValueError(f"variant name {name!r}: lower-case letters, digits and _ (it names files)")
    get(table.get("style", ""))       # KeyError naming the catalogue's styles
    scale = table.get("style_weight_scale")
    if scale is not None and not (isinstance(scale, (int, float)) and scale > 0):
        raise ValueError(f"variant {name!r}: style_weight_scale must be a number > 0, got {scale!r}")
    painting = table.get("painting", "")
    if not isinstance(painting, str) or "/" in painting or "\\" in painting:
        raise ValueError(f"variant {name!r}: painting must be a file name in the paintings folder, got {painting!r}")
    variant = Variant(name, table["style"], str(table.get("warm", "none")), scale, table.get("why", ""),
                      {k: table[k] for k in SETTINGS if k in table}, painting)
    variant.catalogue_style().config("paintings", **variant.settings)     # TrainConfig's checks on the values
    warm = variant.warm_file()
    if warm is not None and not warm.is_file():
        raise FileNotFoundError(f"variant {name!r}: warm start {warm} does not exist")
    return variant


def load_plan(path: str | Path) -> list[Variant]:
    """The plan's variants, in file order; names unique."""
    tables = json.loads(Path(path).read_text()).get("variants", [])
    if not tables:
        raise ValueError(f"plan {path} has no \"variants\"")
    variants = [parse_variant(t) for t in tables]
    names = [v.name for v in variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"plan {path}: variant names used twice: {twice} (each names its own files)")
    return variants
