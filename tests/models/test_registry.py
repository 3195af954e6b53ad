"""The built-in style registry: lookup by name, default choice, damaged files, saved file mode."""
import os
import stat

import pytest

from styleforge.models.checkpoint import CheckpointError
from styleforge.models.registry import default_style, list_styles, resolve_style


def test_lists_and_resolves_by_name(tiny_styles):
    assert [s.name for s in list_styles(tiny_styles)] == ["alpha", "beta"]
    assert resolve_style("beta", tiny_styles) == tiny_styles / "beta.safetensors"
    assert default_style(tiny_styles) == "alpha"  # no 'candy' here: the first one


def test_unknown_name_lists_what_exists(tiny_styles):
    with pytest.raises(CheckpointError, match="alpha, beta"):
        resolve_style("no-such-style", tiny_styles)


def test_damaged_style_file_is_skipped_with_a_warning(tiny_styles, tmp_path):
    folder = tmp_path / "styles"
    folder.mkdir()
    (folder / "good.safetensors").write_bytes((tiny_styles / "alpha.safetensors").read_bytes())
    (folder / "broken.safetensors").write_bytes(b"\x00garbage")
    with pytest.warns(UserWarning, match="broken.safetensors"):
        assert [s.name for s in list_styles(folder)] == ["good"]


def test_saved_checkpoints_are_world_readable(tiny_styles):
    mode = stat.S_IMODE(os.stat(tiny_styles / "alpha.safetensors").st_mode)
    assert mode & stat.S_IROTH
