"""`styleforge stylize` over the media pipeline: stdin/stdout, --json records, order, failures.

In-process through `styleforge.cli.main` on CPU with the tiny random styles of conftest; stdin
and stdout are swapped for byte buffers. Images are ≤ 24 px.
"""
import io
import json
import os
import sys

import numpy as np
import pytest
from PIL import Image

from styleforge.cli import main


def png_bytes(size=(20, 14), seed=0, fmt="PNG"):
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return buffer.getvalue()


class Stdio:
    def __init__(self, monkeypatch, data=b""):
        self.stdout = io.BytesIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(self.stdout, write_through=True))


def test_stdin_to_stdout_equals_the_file_path(styles_env, tmp_path, monkeypatch, capsys):
    data = png_bytes()
    (tmp_path / "a.png").write_bytes(data)
    assert main(["stylize", str(tmp_path / "a.png"), "-o", str(tmp_path / "ref.png"), "--device", "cpu"]) == 0
    io_ = Stdio(monkeypatch, data)
    assert main(["stylize", "-", "-o", "-", "--device", "cpu"]) == 0
    out = Image.open(io.BytesIO(io_.stdout.getvalue()))
    assert out.format == "PNG"
    assert np.array_equal(np.asarray(out), np.asarray(Image.open(tmp_path / "ref.png")))


def test_stdin_jpeg_stays_jpeg_and_file_to_stdout(styles_env, tmp_path, monkeypatch):
    io_ = Stdio(monkeypatch, png_bytes(fmt="JPEG"))
    assert main(["stylize", "-", "--device", "cpu"]) == 0     # no -o: stdin goes to stdout
    assert Image.open(io.BytesIO(io_.stdout.getvalue())).format == "JPEG"
    (tmp_path / "b.png").write_bytes(png_bytes(seed=1))
    io_ = Stdio(monkeypatch)
    assert main(["stylize", str(tmp_path / "b.png"), "-o", "-", "--device", "cpu"]) == 0
    assert Image.open(io.BytesIO(io_.stdout.getvalue())).size == (20, 14)
    assert os.listdir(tmp_path) == ["b.png"]


def test_stdin_errors_are_one_line(styles_env, tmp_path, monkeypatch, capsys):
    Stdio(monkeypatch, b"not an image")
    assert main(["stylize", "-", "-o", "-", "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert "error: stdin: not an image file Pillow can read" in err and "Traceback" not in err
    (tmp_path / "a.png").write_bytes(png_bytes())
    assert main(["stylize", "-", str(tmp_path / "a.png"), "-o", "-", "--device", "cpu"]) == 2
    assert "exactly one image" in capsys.readouterr().err


def test_json_records_in_order_with_errors_and_skips(styles_env, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    names = [f"{i:02d}.png" for i in range(12)]
    for i, name in enumerate(names):
        (folder / name).write_bytes(png_bytes((16 + i % 3, 12), seed=i))
    (folder / "05.png").write_bytes(b"broken")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "07.png").write_bytes(png_bytes())
    io_ = Stdio(monkeypatch)
    code = main(["stylize", str(folder), "-o", str(tmp_path / "out"), "--device", "cpu", "--json",
                 "--workers", "3", "--queue-depth", "2", "--batch-size", "2", "--keep-names"])
    assert code == 1
    records = [json.loads(line) for line in io_.stdout.getvalue().decode().splitlines()]
    assert set(records[0]) == {"input", "output", "size", "seconds", "error", "notes", "skipped"}
    skipped = [r for r in records if r["skipped"]]
    assert [os.path.basename(r["input"]) for r in skipped] == ["07.png"]
    processed = [r for r in records if not r["skipped"]]
    assert [os.path.basename(r["input"]) for r in processed] == [n for n in names if n != "07.png"]
    failed = [r for r in processed if r["error"]]
    assert len(failed) == 1 and "05.png" in failed[0]["error"] and failed[0]["output"] is None
    for r in processed:
        if not r["error"]:
            assert r["size"] == list(Image.open(r["output"]).size) and r["seconds"] > 0
    assert "10 done, 1 skipped, 1 failed" in capsys.readouterr().err


@pytest.mark.slow
def test_pipeline_outputs_equal_the_one_image_api(styles_env, tmp_path):
    import styleforge
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(5):
        (folder / f"{i}.png").write_bytes(png_bytes((18, 10 + i), seed=i))
    assert main(["stylize", str(folder), "-o", str(tmp_path / "out"), "--device", "cpu",
                 "--workers", "2", "--keep-names"]) == 0
    for i in range(5):
        want = np.asarray(styleforge.stylize(folder / f"{i}.png", device="cpu"))
        assert np.array_equal(np.asarray(Image.open(tmp_path / "out" / f"{i}.png")), want)


@pytest.mark.slow
def test_two_thousand_files_keep_memory_bounded(styles_env, tmp_path):
    """2,000 files through a 4-deep queue: this call's own peak memory (not the process's
    lifetime peak) stays under half of what holding every image's input and output tensors
    would take, so a pipeline that kept its items would fail."""
    from conftest import peak_rss_growth_mb
    folder = tmp_path / "many"
    folder.mkdir()
    side, count = 48, 2000
    data = png_bytes((side, side))
    for i in range(count):
        (folder / f"{i:04d}.png").write_bytes(data)
    code, grown_mb = peak_rss_growth_mb(lambda: main([
        "stylize", str(folder), "-o", str(tmp_path / "out"), "--device", "cpu", "--precision", "fp32",
        "--queue-depth", "4"]))
    assert code == 0 and len([p for p in os.listdir(tmp_path / "out") if p.endswith(".png")]) == count
    every_item_mb = count * side * side * 3 * 4 * 2 / 2**20          # float32 in and out: 105 MB
    assert grown_mb < every_item_mb / 2, f"this call's peak rose {grown_mb:.0f} MB over {count} files"
