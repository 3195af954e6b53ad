"""The job plan (`jobs.plan`) as the CLI and the API use it: both name every output alike (files,
a folder, a recursive folder into -o), existing outputs are skipped unless overwriting, and
settings that change the picture get their own names instead of a silent skip.

The registry is the tiny random styles of `styles_env` ('alpha' is the default style); images
are generated here, 12-20 px PNGs and JPEGs."""
import os
import shutil

import numpy as np
import pytest
from PIL import Image

import styleforge
from styleforge.cli import main
from styleforge.engine.options import StylizeOptions
from styleforge.jobs import OUTPUT_MARK, plan_jobs

CPU = {"device": "cpu", "precision": "fp32"}


def picture(path, size=(16, 12), seed=0):
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path


def tree(root):
    """Every file under `root` except the run's folder mark, as sorted relative paths."""
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root)
                  for f in files if f != OUTPUT_MARK)


def album(root):
    picture(root / "trip" / "a.png")
    picture(root / "trip" / "b.jpg", seed=1)
    picture(root / "trip" / "sub" / "c.png", seed=2)
    picture(root / "cat.png", seed=3)
    return root


# (CLI arguments, the same call through the API) with paths relative to the album's root
CASES = {
    "files": (["cat.png", "trip/a.png"], {"inputs": ["cat.png", "trip/a.png"]}),
    "folder": (["trip"], {"inputs": "trip"}),
    "recursive into -o": (["trip", "-r", "-o", "out"], {"inputs": ["trip"], "recursive": True, "output": "out"}),
    "keep names, strength": (["trip", "cat.png", "-o", "out/", "--keep-names", "--strength", "0.5"],
                             {"inputs": ["trip", "cat.png"], "output": "out/", "keep_names": True,
                              "strength": 0.5}),
}


@pytest.mark.parametrize("case", CASES)
def test_cli_and_api_write_the_same_names(styles_env, tmp_path, monkeypatch, case):
    argv, call = CASES[case]
    cli_root, api_root = album(tmp_path / "cli"), album(tmp_path / "api")
    monkeypatch.chdir(cli_root)
    assert main(["stylize", *argv, "--device", "cpu", "--precision", "fp32"]) == 0
    monkeypatch.chdir(api_root)
    report = styleforge.stylize_files(**call, **CPU)
    assert not report.failed and not report.skipped
    written = tree(cli_root)
    assert written == tree(api_root)
    assert sorted(os.path.relpath(r.output) for r in report.done) == sorted(
        set(written) - set(tree(album(tmp_path / "bare"))))
    for name in written:   # the same style and settings: the same pixels
        assert np.array_equal(np.asarray(Image.open(cli_root / name)), np.asarray(Image.open(api_root / name)))


def test_plan_names_match_what_the_cli_writes(styles_env, tmp_path, monkeypatch):
    root = album(tmp_path)
    monkeypatch.chdir(root)
    plan = plan_jobs(["trip", "cat.png"], None, StylizeOptions(**CPU), recursive=True)
    expected = sorted(os.path.relpath(job.target) for job in plan.jobs)
    assert expected == ["cat_alpha.png", "trip_alpha/a.png", "trip_alpha/b.jpg", "trip_alpha/sub/c.png"]
    assert all(not job.done for job in plan.jobs) and plan.pending() == plan.jobs
    assert main(["stylize", "trip", "cat.png", "-r", "--device", "cpu"]) == 0
    assert all(job.done for job in plan.jobs) and plan.pending() == [] and plan.pending(True) == plan.jobs


def test_existing_outputs_are_skipped_unless_overwrite(styles_env, tmp_path):
    src = picture(tmp_path / "a.png")
    first = styleforge.stylize_files(src, tmp_path / "out", **CPU)
    assert [os.path.basename(r.output) for r in first.done] == ["a_alpha.png"]
    out = tmp_path / "out" / "a_alpha.png"
    styled = np.asarray(Image.open(out))
    again = styleforge.stylize_files(src, tmp_path / "out", **CPU)
    assert not again.done and [r.output for r in again.skipped] == [str(out)]
    # strength 0 is a different picture: its own name, the full-strength file untouched
    faded = styleforge.stylize_files(src, tmp_path / "out", strength=0.0, **CPU)
    assert [os.path.basename(r.output) for r in faded.done] == ["a_alpha-s0.png"]
    assert np.array_equal(np.asarray(Image.open(tmp_path / "out" / "a_alpha-s0.png")), np.asarray(Image.open(src)))
    assert np.array_equal(np.asarray(Image.open(out)), styled)
    # --overwrite writes the same name again: a file whose content is not a stylization is replaced
    shutil.copy(src, out)
    replaced = styleforge.stylize_files(src, tmp_path / "out", overwrite=True, **CPU)
    assert len(replaced.done) == 1 and np.array_equal(np.asarray(Image.open(out)), styled)


def test_refused_inputs_are_records_and_bad_outputs_raise(styles_env, tmp_path):
    a = picture(tmp_path / "x" / "a.png")
    b = picture(tmp_path / "y" / "a.png", seed=1)
    report = styleforge.stylize_files([a, b, tmp_path / "missing.png"], tmp_path / "out", **CPU)
    assert len(report.done) == 1 and len(report.failed) == 2
    assert any("also the output of" in r.error for r in report.failed)
    assert any("no such file" in r.error for r in report.failed)
    with pytest.raises(ValueError, match="2 inputs"):
        styleforge.stylize_files([a, b], tmp_path / "one.png", **CPU)
    with pytest.raises(ValueError, match="not an image format"):
        styleforge.stylize_files(a, tmp_path / "out.xyz", **CPU)
