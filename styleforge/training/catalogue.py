"""The nine built-in styles: which painting each is trained on, what is known about it, and the
per-style training tweaks.

Titles, artists, years and licence status are exactly what `shared/data/SOURCES.md` states
("unclear", "in copyright", "public domain"); where it states no year, none is given. The
painting files are looked up in a folder given at run time (`data/styles/` on the training
machine): the paintings are training data and do not ship with the package. This module is
data only; `dev/train_builtin.py` trains from it and the shipped files carry the same fields as
safetensors metadata.

great_wave uses `wave_crop.jpg`, not `wave.jpg`: the full print's right third is flat beige sky,
which pulls the Gram statistics towards a plain wash; the crop is mostly the wave's blue curls
and white foam, the strokes users expect from this style.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .config import TrainConfig


@dataclass(frozen=True)
class BuiltinStyle:
    name: str
    painting_file: str
    title: str
    artist: str
    year: str
    licence: str
    tweaks: dict = field(default_factory=dict)    # TrainConfig fields that differ from the defaults

    def metadata(self) -> dict[str, str]:
        return {"style": self.name, "painting": self.title, "artist": self.artist, "year": self.year,
                "licence": self.licence, "painting_file": self.painting_file}

    def config(self, styles_dir: str | Path, **settings) -> TrainConfig:
        """A TrainConfig for this style; `settings` (paths, steps…) win over the tweaks."""
        merged = {**self.tweaks, **settings}
        merged.setdefault("out", f"{self.name}.safetensors")
        return TrainConfig(style_image=str(Path(styles_dir) / self.painting_file),
                           metadata=self.metadata(), **merged)


UNCLEAR, IN_COPYRIGHT, PUBLIC_DOMAIN = "unclear", "in copyright", "public domain"

BUILTIN_STYLES: tuple[BuiltinStyle, ...] = (
    BuiltinStyle("candy", "candy.jpg", "Candy", "unknown artist (pytorch/examples)", "", UNCLEAR),
    BuiltinStyle("mosaic", "mosaic.jpg", "Mosaic", "unknown artist (pytorch/examples)", "", UNCLEAR),
    BuiltinStyle("udnie", "udnie.jpg", "Udnie", "Francis Picabia", "1913", PUBLIC_DOMAIN),
    BuiltinStyle("rain_princess", "rain-princess.jpg", "Rain Princess", "Leonid Afremov", "", IN_COPYRIGHT),
    BuiltinStyle("starry_night", "starry_night.jpg", "The Starry Night", "Vincent van Gogh", "1889",
                 PUBLIC_DOMAIN),
    BuiltinStyle("great_wave", "wave_crop.jpg", "The Great Wave off Kanagawa", "Hokusai", "c. 1831",
                 PUBLIC_DOMAIN),
    BuiltinStyle("the_scream", "the_scream.jpg", "The Scream", "Edvard Munch", "1893", PUBLIC_DOMAIN),
    BuiltinStyle("composition_vii", "composition_vii.jpg", "Composition VII", "Wassily Kandinsky", "1913",
                 PUBLIC_DOMAIN),
    BuiltinStyle("shipwreck", "the_shipwreck_of_the_minotaur.jpg", "The Shipwreck of the Minotaur",
                 "J. M. W. Turner", "c. 1810", PUBLIC_DOMAIN),
)

BY_NAME = {s.name: s for s in BUILTIN_STYLES}


def get(name: str) -> BuiltinStyle:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown built-in style {name!r}; known: {', '.join(BY_NAME)}") from None
