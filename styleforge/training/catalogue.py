"""The built-in styles: which painting each is trained on, what is known about it, the recipe
they share and the per-style training tweaks.

Titles, artists, years and licence status are exactly what `shared/data/SOURCES.md` states
("unclear", "in copyright", "public domain"); where it states no year, none is given. The
painting files are looked up in a folder given at run time (`data/styles/` on the training
machine): the paintings are training data and do not ship with the package. This module is
data only; `dev/train_builtin.py` trains from it and the shipped files carry the same fields as
safetensors metadata.

The five added in v2 come from Debian's `stellarium-data` 0.22.2-1 (sky-culture artwork;
`dev/prepare_new_styles.py` extracts, crops and downscales them into `data/styles/`): the
artworks are public domain by age; the package as a whole is GPL-2+ (its debian/copyright,
`Files: *`), which is what `source_licence` records (each sky culture's info.ini names a licence
for that sky culture as a whole: CC BY-ND 4.0 for the Dendera, Aratea and al-Sufi folders). Only
trained weights ship, never the images. aratea was first the Eridanus figure on parchment
(`aratea.jpg`); its flat half made every recipe either wipe the photo or leave it, so it is now
the book's Draco miniature (docs/training.md, round 14).

`RECIPE` (v2) is what every style shares: the grid penalty (training/grid.py; docs/training.md
"The 4-px grid"), the stability term for video, and a real budget (Johnson et al. trained 40k
steps of batch 4; 20k of batch 8 here). Tweaks: udnie and shipwreck barely stylized at the default
weights (content distance 0.7, issue 44), so shipwreck's style weight is tripled and udnie's,
still grey at 1,800 steps, is 5×; candy painted pink "eye" blobs, the painting's large spirals
matched at relu4_3 on 256-px crops, so its painting is seen smaller (style_size 384 still left
rings at 1,800 steps; 256 put its textures at the wrong scale, a Gram style ratio of 0.84–0.91
against 0.19, so it is back at 384) to make those features smaller than a blob; great_wave was a
cream-and-blue wash, and mosaic and the_scream stayed at a style ratio of 0.20 at 1,800 steps, so
they get twice the style weight. shipwreck's 3× style weight outweighed the grid penalty (its PNGs
scored a grid of 34–43 at 4,700 steps), so its grid weight is tripled with it.

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
    tweaks: dict = field(default_factory=dict)    # TrainConfig fields that differ from RECIPE
    source: str = ""                              # where the painting file comes from, if not shared/data
    source_licence: str = ""                      # the licence of that source (package), if any

    def metadata(self) -> dict[str, str]:
        meta = {"style": self.name, "painting": self.title, "artist": self.artist, "year": self.year,
                "licence": self.licence, "painting_file": self.painting_file}
        if self.source:
            meta.update(source=self.source, source_licence=self.source_licence)
        return meta

    def config(self, styles_dir: str | Path, recipe: bool = True, **settings) -> TrainConfig:
        """A TrainConfig for this style: RECIPE (unless recipe=False), then the tweaks, then
        `settings` (paths, steps…), each winning over the one before."""
        merged = {**(RECIPE if recipe else {}), **self.tweaks, **settings}
        merged.setdefault("out", f"{self.name}.safetensors")
        return TrainConfig(style_image=str(Path(styles_dir) / self.painting_file),
                           metadata=self.metadata(), **merged)


UNCLEAR, IN_COPYRIGHT, PUBLIC_DOMAIN = "unclear", "in copyright", "public domain"

RECIPE = {"steps": 20000, "batch_size": 8, "image_size": 256, "grid_weight": 1e10,
          "stability_weight": 1e8, "style_size": 512}

STELLARIUM = "Debian stellarium-data 0.22.2-1, /usr/share/stellarium/skycultures/"
GPL2 = "GPL-2+ (stellarium-data debian/copyright, Files: *)"

BUILTIN_STYLES: tuple[BuiltinStyle, ...] = (
    BuiltinStyle("candy", "candy.jpg", "Candy", "unknown artist (pytorch/examples)", "", UNCLEAR,
                 {"style_size": 384}),
    BuiltinStyle("mosaic", "mosaic.jpg", "Mosaic", "unknown artist (pytorch/examples)", "", UNCLEAR,
                 {"style_weight": 2e10}),
    BuiltinStyle("udnie", "udnie.jpg", "Udnie", "Francis Picabia", "1913", PUBLIC_DOMAIN,
                 {"style_weight": 5e10}),
    BuiltinStyle("rain_princess", "rain-princess.jpg", "Rain Princess", "Leonid Afremov", "", IN_COPYRIGHT),
    BuiltinStyle("starry_night", "starry_night.jpg", "The Starry Night", "Vincent van Gogh", "1889",
                 PUBLIC_DOMAIN),
    BuiltinStyle("great_wave", "wave_crop.jpg", "The Great Wave off Kanagawa", "Hokusai", "c. 1831",
                 PUBLIC_DOMAIN, {"style_weight": 2e10}),
    BuiltinStyle("the_scream", "the_scream.jpg", "The Scream", "Edvard Munch", "1893", PUBLIC_DOMAIN,
                 {"style_weight": 2e10}),
    BuiltinStyle("composition_vii", "composition_vii.jpg", "Composition VII", "Wassily Kandinsky", "1913",
                 PUBLIC_DOMAIN),
    BuiltinStyle("shipwreck", "the_shipwreck_of_the_minotaur.jpg", "The Shipwreck of the Minotaur",
                 "J. M. W. Turner", "c. 1810", PUBLIC_DOMAIN, {"style_weight": 3e10, "grid_weight": 3e10}),
    # v2: five more, for variety of medium (ink print, relief, illumination, ink-and-wash, codex).
    BuiltinStyle("song_star_chart", "song_star_chart.jpg", "Song-dynasty star map (woodblock print)",
                 "unknown Song-dynasty cartographer", "11th c. (data of 1052)", PUBLIC_DOMAIN,
                 source=STELLARIUM + "chinese_medieval/xyxfy.png", source_licence=GPL2),
    BuiltinStyle("dendera", "dendera.jpg", "Dendera zodiac (bas-relief, Louvre)", "unknown Egyptian sculptor",
                 "c. 50 BC", PUBLIC_DOMAIN,
                 source=STELLARIUM + "egyptian_dendera/Dendera_zodiac_Louvre.jpg (photo: Public Domain/CC0; cropped)",
                 source_licence=GPL2),
    BuiltinStyle("aratea", "aratea_draco.jpg", "Leiden Aratea: Draco and the Bears (illuminated manuscript, fol. 3v)",
                 "unknown Carolingian illuminator", "c. 816", PUBLIC_DOMAIN,
                 source=STELLARIUM + "greek_leidenAratea/descr_pics/Aratea fol. 3v und 4r.jpg (the miniature, cropped)",
                 source_licence=GPL2),
    BuiltinStyle("al_sufi", "al_sufi.jpg", "Book of Fixed Stars: Argo (ink and wash)",
                 "after al-Sufi, Ulugh Beg manuscript", "c. 1430", PUBLIC_DOMAIN,
                 source=STELLARIUM + "arabic_al-sufi/Arg.png (cropped)", source_licence=GPL2),
    BuiltinStyle("primeros_memoriales", "primeros_memoriales.jpg", "Primeros Memoriales: star groups (codex)",
                 "Bernardino de Sahagún's informants", "c. 1560", PUBLIC_DOMAIN,
                 source=STELLARIUM + "aztec/Primeros_Memoriales.png", source_licence=GPL2),
)

BY_NAME = {s.name: s for s in BUILTIN_STYLES}


def get(name: str) -> BuiltinStyle:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown built-in style {name!r}; known: {', '.join(BY_NAME)}") from None
