"""More careless use of `styleforge stylize`: inputs that are not files (FIFO, a device), a
scratch folder that does not exist, flags of the painting model without a painting, --json for
a bad style and for a multi-frame file, a second run racing the first, and a later recursive
run that must not take an earlier run's output folder as input."""
from __future__ import annotations

import json
import os
import re

import pytest
from cli_photos import write
from PIL import Image

from styleforge.cli import main
from styleforge.io.image import ImageError, load_image

SUMMARY = re.compile(r"^(\d+) done, (\d+) skipped, (\d+) failed", re.M)


def cli(capsys, *argv):
    code = main(["stylize", *map(str, argv), "--device", "cpu", "--precision", "fp32"])
    captured = capsys.readouterr()
    counts = SUMMARY.search(captured.err)
    return code, captured, tuple(map(int, counts.groups())) if counts else None


def test_a_fifo_or_a_device_is_named_as_such_not_empty(tmp_path):
    fifo = tmp_path / "photo.png"
    os.mkfifo(fifo)
    with pytest.raises(ImageError, match="is a named pipe"):
        load_image(fifo)                     # returns at once: a FIFO is never opened
    with pytest.raises(ImageError, match="/dev/zero: is a device"):
        load_image("/dev/zero")
    with pytest.raises(ImageError, match="is a folder"):
        load_image(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_input_says_permission_not_corrupt(tmp_path):
    locked = write(tmp_path / "locked.png")
    locked.chmod(0)
    with pytest.raises(ImageError, match="cannot read \\(Permission denied\\)"):
        load_image(locked)


def test_missing_scratch_dir_is_one_error_before_any_work(styles_env, tmp_path, capsys):
    photo = write(tmp_path / "a.png")
    code, captured, _ = cli(capsys, photo, "--scratch-dir", tmp_path / "nowhere")
    assert code == 2 and "--scratch-dir" in captured.err and "nowhere: no such folder" in captured.err
    assert "corrupt" not in captured.err and sorted(os.listdir(tmp_path)) == ["a.png"]


@pytest.mark.parametrize("flags, named", [(["--alpha", "0.5"], "--alpha is"),
                                          (["--passes", "1", "--style-size", "256"], "--passes, --style-size are")])
def test_painting_flags_without_a_painting_are_an_error(styles_env, tmp_path, capsys, flags, named):
    photo = write(tmp_path / "a.png")
    code, captured, _ = cli(capsys, photo, *flags)
    assert code == 2 and named in captured.err and "--style-image" in captured.err
    assert sorted(os.listdir(tmp_path)) == ["a.png"]


def test_json_has_a_record_for_a_bad_style_and_notes_for_a_gif(styles_env, tmp_path, capsys):
    photos = [write(tmp_path / "a.png"), write(tmp_path / "b.png", seed=1)]
    code, captured, _ = cli(capsys, *photos, "--style", "no_such_style", "--json")
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert code == 2 and len(records) == 2
    assert all("unknown style 'no_such_style'" in r["error"] for r in records)
    frames = [Image.new("RGB", (16, 16), c) for c in ("red", "blue")]
    frames[0].save(tmp_path / "anim.gif", save_all=True, append_images=frames[1:])
    code, captured, _ = cli(capsys, tmp_path / "anim.gif", "-o", tmp_path / "anim.png", "--json")
    (record,) = [json.loads(line) for line in captured.out.splitlines()]
    assert code == 0 and any("has 2 frames or pages" in note for note in record["notes"])
    assert captured.err.count("has 2 frames") == 1          # said once, not as a warning too


def test_an_output_written_by_another_run_meanwhile_is_kept(tmp_path):
    from styleforge.engine.options import StylizeOptions
    from styleforge.media.images import ImageJob, stylize_images
    photo, taken = write(tmp_path / "a.png"), write(tmp_path / "a_out.png", seed=7)
    before = taken.read_bytes()
    records = list(stylize_images([ImageJob(photo, taken)], None, StylizeOptions()))  # planned, then raced
    assert records[0].skipped and records[0].error is None and taken.read_bytes() == before
    (record,) = stylize_images([ImageJob(photo, taken)], None, StylizeOptions(overwrite=True))
    assert not record.skipped and taken.read_bytes() != before
    # The write itself does not clobber either: the target appears while the file is written.
    from styleforge.io.atomic import atomic_write
    late = tmp_path / "late.png"

    def racing_write(tmp):
        write(late, seed=9)                  # the other run wins the race
        with open(tmp, "wb") as handle:
            handle.write(b"mine")
    with pytest.raises(FileExistsError, match="late.png: exists"):
        atomic_write(late, racing_write, replace=False)
    assert late.read_bytes() != b"mine"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_recursive_run_skips_an_earlier_runs_output_folder(styles_env, tmp_path, capsys):
    for name in ("a.png", "sub/b.png"):
        write(tmp_path / "d" / name)
    assert cli(capsys, tmp_path / "d", "-r", "-o", tmp_path / "d" / "styled")[2] == (2, 0, 0)
    code, _, counts = cli(capsys, tmp_path / "d", "-r", "--style", "beta")
    assert code == 0 and counts == (2, 0, 0)                 # a.png and sub/b.png, not styled/*
    assert sorted(str(p.relative_to(tmp_path / "d_beta")) for p in (tmp_path / "d_beta").rglob("*.png")) == [
        "a.png", "sub/b.png"]


@pytest.mark.slow
def test_ctrl_c_says_what_was_done_and_what_was_not_started(tiny_styles, tmp_path):
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from sigint_default import sigint_default
    for i in range(60):
        write(tmp_path / "in" / f"{i:02d}.png", size=(384, 288), seed=i)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), STYLEFORGE_STYLES_DIR=str(tiny_styles))
    proc = subprocess.Popen([sys.executable, "-m", "styleforge", "stylize", str(tmp_path / "in"), "--style",
                             "alpha", "--device", "cpu", "--workers", "1", "-o", str(tmp_path / "out")],
                            stderr=subprocess.PIPE, text=True, env=env, cwd=root, preexec_fn=sigint_default)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((tmp_path / "out").glob("*.png")):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    match = re.search(r"interrupted: (\d+) done, 0 skipped, 0 failed, (\d+) not started", err)
    assert match, err[-2000:]
    done, not_started = map(int, match.groups())
    assert done >= 1 and not_started >= 1 and done + not_started <= 60
    assert "Traceback" not in err


def test_an_output_written_before_its_record_arrived_counts_as_done(tmp_path):
    """Ctrl-C can land after the writer renamed an output into place but before its record reached
    the loop: the summary counts it from the folder, not only from the records seen."""
    import time
    from types import SimpleNamespace

    from styleforge.commands.stylize import written_unreported
    start = time.time()
    old = tmp_path / "old.png"
    old.write_bytes(b"x")
    os.utime(old, (start - 60, start - 60))               # there before the run (--overwrite)
    for name in ("seen.png", "unseen.png"):
        (tmp_path / name).write_bytes(b"x")
    jobs = [SimpleNamespace(source=f"in/{n}", target=tmp_path / n)
            for n in ("old.png", "seen.png", "unseen.png", "missing.png")]
    written = written_unreported(jobs, {str(tmp_path / "seen.png")}, start)
    assert [job.target.name for job in written] == ["unseen.png"]
