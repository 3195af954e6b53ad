"""`ExportOptions` and the `export` command's flags: bad values fail before any weights load."""
import pytest

from styleforge.cli import build_parser, main
from styleforge.export.options import ExportOptions


@pytest.mark.parametrize("fields,message", [
    ({"format": "tflite"}, "format must be one of"),
    ({"style": "candy", "arbitrary": True}, "not both"),
    ({"opset": 11}, "opset must be"),
    ({"passes": 0}, "passes must be"),
    ({"style_size": 16}, "style_size must be"),
    ({"device": "cuda"}, "aoti only"),
])
def test_bad_fields_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        ExportOptions(**fields)


def test_default_output_is_named_after_the_style():
    assert str(ExportOptions().output_path("candy")) == "candy.onnx"
    assert str(ExportOptions(format="aoti").output_path("mosaic")) == "mosaic.pt2"
    assert str(ExportOptions(output="x/y.onnx").output_path("candy")) == "x/y.onnx"


def test_flags_become_options():
    from styleforge.commands.export import _options
    args = build_parser().parse_args(["export", "--arbitrary", "--format", "aoti", "--style-size", "128",
                                      "--passes", "1", "--device", "cuda", "--no-check", "-o", "a.pt2"])
    assert _options(args) == ExportOptions(format="aoti", output="a.pt2", arbitrary=True, style_size=128,
                                           passes=1, device="cuda", check=False)


def test_unknown_style_fails_with_the_list(styles_env, tmp_path, capsys):
    assert main(["export", "no-such-style", "-o", str(tmp_path / "m.onnx")]) == 1
    assert "unknown style" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def test_unwritable_output_is_refused(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["export", "candy", "-o", str(blocker / "m.onnx")]) == 1
    assert "is a file, not a folder" in capsys.readouterr().out
