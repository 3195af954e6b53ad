"""Output names (`jobs.naming`): default settings keep the plain `photo_<style>.jpg`; a setting
that changes the picture adds its token, one that does not (device, precision, quality) does
not; long names keep the label whole."""
import dataclasses

import pytest

from styleforge.engine.options import StylizeOptions
from styleforge.jobs import NAME_MAX, output_label, styled_name


def label(**fields) -> str:
    return output_label(StylizeOptions(style="candy", **fields))


def test_default_settings_keep_the_plain_style_name():
    assert label() == "candy"
    assert styled_name("photo.jpg", label()) == "photo_candy.jpg"
    assert styled_name("sub/photo.jpg", label()) == "sub/photo_candy.jpg"
    assert output_label(StylizeOptions(blend=(("candy", 0.5), ("mosaic", 0.5)))) == "candy+mosaic"
    assert output_label(StylizeOptions(style_images=(("art/monet.png", 1.0),))) == "monet"


@pytest.mark.parametrize("fields,expected", [
    ({"strength": 0.5}, "candy-s0.5"),
    ({"preserve_color": True}, "candy-pc"),
    ({"model": "slim"}, "candy-slim"),
    ({"max_side": 1024}, "candy-max1024"),
    ({"stroke_scale": 2.0}, "candy-x2"),
    ({"strength": 0.25, "preserve_color": True, "max_side": 64}, "candy-s0.25-pc-max64"),
])
def test_picture_changing_settings_add_a_token(fields, expected):
    assert label(**fields) == expected


def test_mix_weights_and_painting_settings():
    blend = StylizeOptions(blend=(("candy", 3.0), ("mosaic", 1.0)))
    assert output_label(blend) == "candy+mosaic-w0.75_0.25"
    paintings = StylizeOptions(style_images=(("a.jpg", 0.7), ("b.jpg", 0.3)), alpha=0.8, passes=1,
                               degrid=False, palette="none", style_size=256)
    assert output_label(paintings) == "a+b-w0.7_0.3-a0.8-p1-nodegrid-palnone-ss256"
    stronger = StylizeOptions(style_images=(("a.jpg", 1.0),), palette_strength=0.5)
    assert output_label(stronger) == "a-ps0.5"
    aimed = dataclasses.replace(stronger, palette_strength=0.25, palette_target=9.0, palette_cap=0.25)
    assert output_label(aimed) == "a-pt9-pcap0.25"
    # the strength moves nothing when there is no transport after the last pass
    assert output_label(dataclasses.replace(stronger, palette="between")) == "a-palbetween"
    assert output_label(dataclasses.replace(aimed, palette="between")) == "a-palbetween"


def test_settings_that_keep_the_picture_keep_the_name():
    same = [label(device="cpu", precision="fp16", backend="reference", batch_size=8, tiling="exact",
                  max_memory="1G", quality=10, chroma="420", overwrite=True, max_pixels=10)]
    assert same == ["candy"]


def test_long_names_are_cut_in_the_stem_and_unknown_suffixes_become_png():
    name = styled_name("p" * 300 + ".jpg", label(strength=0.5))
    assert len(name.encode()) <= NAME_MAX and name.endswith("_candy-s0.5.jpg")
    assert styled_name("layers.psd", "candy") == "layers_candy.png"
