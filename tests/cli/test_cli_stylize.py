"""`styleforge stylize`: every option path, through `styleforge.cli.main` (in-process, CPU).

The registry points at the tiny random styles 'alpha' and 'beta' (no 'candy', so 'alpha' is
the default). Images are generated here, at most 40 px, as lossless PNG unless a test needs JPEG.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge import switches
from styleforge.cli import main

SUMMARY = re.compile(r"^(\d+) done, (\d+) skipped, (\d+) failed in [\d.]+ s$", re.M)



def outputs(folder) -> list[str]:
    """The folder's file names, without the mark a run leaves in output folders it creates."""
    from styleforge.jobs import OUTPUT_MARK
    return sorted(name for name in os.listdir(folder) if name != OUTPUT_MARK)

def write(path, size=(24, 20), mode="RGB", seed=0):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (size[1], size[0], 4), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels, "RGBA").convert(mode).save(path)
    return path


def pixels(path):
    return np.asarray(Image.open(path)).astype(int)


def cli(capsys, *argv):
    code = main(["stylize", *map(str, argv), "--device", "cpu"])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    counts = SUMMARY.search(text)
    return code, text, tuple(map(int, counts.groups())) if counts else None


def test_single_file_default_output_beside_it(styles_env, tmp_path, capsys):
    src = write(tmp_path / "cat.png", (21, 13))
    code, text, counts = cli(capsys, src)
    assert code == 0 and counts == (1, 0, 0)
    out = tmp_path / "cat_alpha.png"
    assert Image.open(out).size == (21, 13)
    assert "alpha on cpu" in text


@pytest.mark.slow
def test_folder_goes_to_sibling_folder_and_recursive(styles_env, tmp_path, capsys):
    for name in ("a.png", "b.jpg", "notes.txt", "sub/c.png"):
        (write(tmp_path / "trip" / name) if not name.endswith(".txt")
         else (tmp_path / "trip" / name).write_text("hi"))
    code, _, counts = cli(capsys, tmp_path / "trip")
    assert code == 0 and counts == (2, 0, 0)
    assert outputs(tmp_path / "trip_alpha") == ["a.png", "b.jpg"]
    code, _, counts = cli(capsys, tmp_path / "trip", "--recursive")
    assert code == 0 and counts == (1, 2, 0)
    assert (tmp_path / "trip_alpha" / "sub" / "c.png").is_file()


@pytest.mark.slow
def test_glob_pattern_expanded_by_us(styles_env, tmp_path, capsys):
    for name in ("x1.png", "x2.png", "y.png"):
        write(tmp_path / name)
    code, _, counts = cli(capsys, f"{tmp_path}/x*.png", "-o", tmp_path / "out")
    assert code == 0 and counts == (2, 0, 0)
    assert outputs(tmp_path / "out") == ["x1_alpha.png", "x2_alpha.png"]
    code, text, _ = cli(capsys, f"{tmp_path}/nothing*.png")
    assert code == 1 and "no files match" in text


def test_output_file_and_folder(styles_env, tmp_path, capsys):
    a, b = write(tmp_path / "a.png"), write(tmp_path / "b.png", seed=1)
    code, _, _ = cli(capsys, a, "-o", tmp_path / "single.jpg")
    assert code == 0 and Image.open(tmp_path / "single.jpg").format == "JPEG"
    code, text, _ = cli(capsys, a, b, "-o", tmp_path / "two.png")
    assert code == 2 and "2 inputs" in text and not (tmp_path / "two.png").exists()
    code, _, counts = cli(capsys, a, b, "-o", tmp_path / "new" / "folder", "--keep-names")
    assert code == 0 and outputs(tmp_path / "new" / "folder") == ["a.png", "b.png"]


@pytest.mark.slow
def test_existing_outputs_skipped_unless_overwrite(styles_env, tmp_path, capsys):
    src = write(tmp_path / "a.png")
    cli(capsys, src, "-o", tmp_path / "o.png")
    first = pixels(tmp_path / "o.png")
    code, text, counts = cli(capsys, src, "-o", tmp_path / "o.png", "--strength", "0")
    assert code == 0 and counts == (0, 1, 0) and "exists" in text
    assert np.array_equal(pixels(tmp_path / "o.png"), first)
    code, _, counts = cli(capsys, src, "-o", tmp_path / "o.png", "--strength", "0", "--overwrite")
    assert code == 0 and counts == (1, 0, 0)
    assert np.array_equal(pixels(tmp_path / "o.png"), pixels(src))  # strength 0 = the photo


@pytest.mark.slow
def test_max_side_and_strength_and_preserve_color(styles_env, tmp_path, capsys):
    src = write(tmp_path / "a.png", (40, 30))
    cli(capsys, src, "-o", tmp_path / "small.png", "--max-side", "20")
    assert Image.open(tmp_path / "small.png").size == (20, 15)
    cli(capsys, src, "-o", tmp_path / "full.png")
    cli(capsys, src, "-o", tmp_path / "half.png", "--strength", "0.5")
    midpoint = (pixels(src)[..., :3] + pixels(tmp_path / "full.png")) / 2
    assert np.abs(pixels(tmp_path / "half.png") - midpoint).max() <= 1
    cli(capsys, src, "-o", tmp_path / "kept.png", "--preserve-color")

    def chroma_gap(path):
        ycc = lambda p: np.asarray(Image.open(p).convert("RGB").convert("YCbCr")).astype(int)  # noqa: E731
        return np.abs(ycc(path)[..., 1:] - ycc(src)[..., 1:]).mean()
    assert chroma_gap(tmp_path / "kept.png") < chroma_gap(tmp_path / "full.png") / 3


@pytest.mark.slow
def test_blend_endpoint_equals_single_style_and_checkpoint(styles_env, tmp_path, capsys):
    src = write(tmp_path / "a.png")
    assert cli(capsys, src, "-o", tmp_path / "blend.png", "--blend", "alpha:1,beta:0")[0] == 0
    assert cli(capsys, src, "-o", tmp_path / "style.png", "--style", "alpha")[0] == 0
    assert cli(capsys, src, "-o", tmp_path / "ckpt.png", "--checkpoint", styles_env / "alpha.safetensors")[0] == 0
    assert np.array_equal(pixels(tmp_path / "blend.png"), pixels(tmp_path / "style.png"))
    assert np.array_equal(pixels(tmp_path / "ckpt.png"), pixels(tmp_path / "style.png"))
    with pytest.raises(SystemExit) as info:
        cli(capsys, src, "--blend", "alpha:x")
    assert info.value.code == 2 and "weight 'x' of 'alpha' is not a number" in capsys.readouterr().err


@pytest.mark.slow
def test_device_precision_backend_and_batch_size(styles_env, tmp_path, capsys):
    for i in range(3):
        write(tmp_path / "in" / f"s{i}.png", (24, 16), seed=i)
    write(tmp_path / "in" / "z.png", (17, 9), seed=9)
    code, _, counts = cli(capsys, tmp_path / "in", "-o", tmp_path / "one", "--precision", "fp32",
                          "--backend", "reference")
    assert code == 0 and counts == (4, 0, 0)
    code, _, counts = cli(capsys, tmp_path / "in", "-o", tmp_path / "two", "--batch-size", "2", "--precision", "fp32")
    assert code == 0 and counts == (4, 0, 0)
    for name in outputs(tmp_path / "one"):
        assert np.abs(pixels(tmp_path / "one" / name) - pixels(tmp_path / "two" / name)).max() <= 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_cuda_without_cuda_is_one_clear_error(styles_env, tmp_path, capsys):
    code = main(["stylize", str(write(tmp_path / "a.png")), "--device", "cuda"])
    err = capsys.readouterr().err
    assert code == 2 and "no CUDA device" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == ["a.png"]


@pytest.mark.slow
def test_quality_and_alpha(styles_env, tmp_path, capsys):
    src = write(tmp_path / "a.png", (40, 40), mode="RGBA")
    cli(capsys, src, "-o", tmp_path / "q10.jpg", "--quality", "10")
    code, text, _ = cli(capsys, src, "-o", tmp_path / "q95.jpg", "--quality", "95")
    assert "transparency dropped" in text
    assert (tmp_path / "q10.jpg").stat().st_size < (tmp_path / "q95.jpg").stat().st_size
    cli(capsys, src, "-o", tmp_path / "kept.png")
    out = Image.open(tmp_path / "kept.png")
    assert out.mode == "RGBA" and np.array_equal(np.asarray(out)[..., 3], np.asarray(Image.open(src))[..., 3])
    with pytest.raises(SystemExit):
        main(["stylize", str(src), "--quality", "101"])
    assert "101 is not in 1..100" in capsys.readouterr().err


def test_jpeg_outputs_keep_full_chroma_unless_asked(styles_env, tmp_path, capsys):
    from styleforge.io.image import jpeg_chroma
    src = write(tmp_path / "a.jpg", (40, 40))
    assert cli(capsys, src, "-o", tmp_path / "full.jpg")[0] == 0
    assert jpeg_chroma(tmp_path / "full.jpg") == "444"
    assert cli(capsys, src, "-o", tmp_path / "sub.jpg", "--chroma", "420")[0] == 0
    assert jpeg_chroma(tmp_path / "sub.jpg") == "420"
    with pytest.raises(SystemExit):
        main(["stylize", str(src), "--chroma", "411"])
    assert "invalid choice" in capsys.readouterr().err


def test_bad_files_fail_alone_and_leave_no_partial_output(styles_env, tmp_path, capsys):
    folder = tmp_path / "mixed"
    write(folder / "good1.png")
    write(folder / "good2.png", seed=1)
    (folder / "empty.png").write_bytes(b"")
    (folder / "text.jpg").write_text("not a picture")
    (folder / "truncated.png").write_bytes((folder / "good1.png").read_bytes()[:80])
    code, text, counts = cli(capsys, folder, tmp_path / "missing.png", "-o", tmp_path / "out",
                             "--keep-names")
    assert code == 1 and counts == (2, 0, 4)
    for name in ("empty.png", "text.jpg", "truncated.png", "missing.png"):
        assert len([line for line in text.splitlines() if name in line and "error" in line]) == 1
    assert "Traceback" not in text
    assert outputs(tmp_path / "out") == ["good1.png", "good2.png"]


def test_outputs_that_collide_or_replace_inputs_are_refused(styles_env, tmp_path, capsys):
    a1, a2 = write(tmp_path / "x" / "a.png"), write(tmp_path / "y" / "a.png", seed=1)
    code, text, counts = cli(capsys, a1, a2, "-o", tmp_path / "out")
    assert code == 1 and counts == (1, 0, 1) and "also the output of" in text
    code, text, _ = cli(capsys, a1, "-o", tmp_path / "x", "--overwrite", "--keep-names")
    assert code == 1 and "would replace an input" in text
    assert np.array_equal(pixels(a1), pixels(write(tmp_path / "z" / "a.png")))


def test_unknown_style_and_no_styles(styles_env, tmp_path, capsys, monkeypatch):
    src = write(tmp_path / "a.png")
    code, text, _ = cli(capsys, src, "--style", "nope")
    assert code == 2 and "unknown style 'nope'" in text
    monkeypatch.setenv("STYLEFORGE_STYLES_DIR", str(tmp_path / "empty"))
    switches.reset()   # the switches are read once per process
    code, text, _ = cli(capsys, src)
    assert code == 2 and "no built-in styles are installed" in text


@pytest.mark.slow
def test_python_dash_m_entry_point():
    done = subprocess.run([sys.executable, "-m", "styleforge", "stylize", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--preserve-color" in done.stdout and "--blend" in done.stdout
