"""Careless use of the command line: fast help, outputs that never clobber or recurse, early
refusals with one line (bad -o, empty folders, unwritable targets, paintings as styles, bad
blends), and warnings for what is handled but surprising (multi-frame files, fp16 on a CPU)."""
import os
import re
import subprocess
import sys
import time

import pytest
from cli_photos import write
from PIL import Image

from styleforge.cli import main

SUMMARY = re.compile(r"^(\d+) done, (\d+) skipped, (\d+) failed in [\d.]+ s$", re.M)


def cli(capsys, *argv):
    code = main(["stylize", *map(str, argv), "--device", "cpu", "--precision", "fp32"])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    counts = SUMMARY.search(text)
    return code, text, tuple(map(int, counts.groups())) if counts else None


def test_help_and_parsing_import_no_torch():
    probe = ("import sys, time; t = time.perf_counter(); from styleforge.cli import build_parser; "
             "build_parser().parse_args(['stylize', 'a.jpg', '--blend', 'alpha:1']); "
             "print('torch' in sys.modules, time.perf_counter() - t)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    loaded, seconds = done.stdout.split()
    assert loaded == "False", "parsing the command line imported torch"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "styleforge", "--help"], capture_output=True, timeout=60, check=True)
    assert time.perf_counter() - start < 3.0      # ≈0.15 s idle; the bar is loose for a busy CI box


def test_second_style_into_one_folder_and_reruns_do_not_collide(styles_env, tmp_path, capsys):
    for name in ("a.png", "sub/b.png"):
        write(tmp_path / "dir" / name)
    out = tmp_path / "dir" / "styled"
    assert cli(capsys, tmp_path / "dir", "-r", "-o", out)[2] == (2, 0, 0)
    assert cli(capsys, tmp_path / "dir", "-r", "-o", out, "--style", "beta")[2] == (2, 0, 0)
    code, _, counts = cli(capsys, tmp_path / "dir", "-r", "-o", out)         # a rerun: nothing new
    assert code == 0 and counts == (0, 2, 0)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.png")) == [
        "a_alpha.png", "a_beta.png", "sub/b_alpha.png", "sub/b_beta.png"]
    same = tmp_path / "flat"
    write(same / "c.png")
    cli(capsys, same, "-o", same)
    code, _, counts = cli(capsys, same, "-o", same)
    assert code == 0 and counts == (0, 1, 0) and sorted(os.listdir(same)) == ["c.png", "c_alpha.png"]


def test_bad_output_names_are_refused_before_any_work(styles_env, tmp_path, capsys):
    src = write(tmp_path / "a.png")
    code, text, _ = cli(capsys, src, "-o", tmp_path / "out.xyz")
    assert code == 2 and ".xyz is not an image format" in text and not (tmp_path / "out.xyz").exists()
    assert cli(capsys, src, "-o", f"{tmp_path / 'v.d'}/")[0] == 0 and (tmp_path / "v.d" / "a_alpha.png").is_file()
    (tmp_path / "blocker").write_text("a file")
    code, text, counts = cli(capsys, src, "-o", tmp_path / "blocker" / "deeper" / "x.png")
    assert code == 1 and counts == (0, 0, 1) and "is a file, not a folder" in text and ".tmp" not in text
    assert "style alpha" not in text                        # refused before the style was loaded


def test_empty_folder_is_an_error_with_a_hint(styles_env, tmp_path, capsys):
    (tmp_path / "empty" / "nested").mkdir(parents=True)
    write(tmp_path / "empty" / "nested" / "deep.png")
    (tmp_path / "empty" / "notes.txt").write_text("no images")
    code, text, _ = cli(capsys, tmp_path / "empty")
    assert code == 1 and "no images in this folder" in text and "add -r" in text


def test_long_file_names_fit(styles_env, tmp_path, capsys):
    src = write(tmp_path / ("p" * 246 + ".png"))
    code, _, counts = cli(capsys, src)
    outs = [p for p in tmp_path.iterdir() if p.name.endswith("_alpha.png")]
    assert code == 0 and counts == (1, 0, 0) and len(outs) == 1 and len(outs[0].name) <= 255


def test_paintings_and_bad_blends_are_one_line(styles_env, tmp_path, capsys):
    src = write(tmp_path / "a.png")
    painting = write(tmp_path / "painting.jpg")
    for flags in (("--style", painting), ("--checkpoint", painting), ("--style", "other.jpg")):
        code, text, _ = cli(capsys, src, *flags)
        assert code == 2 and "is an image, not a style" in text and "--style-image" in text
        assert "Traceback" not in text and "Weights only" not in text
    for spec, message in (("alpha:nan", "use a finite number"), ("alpha:inf", "use a finite number"),
                          ("alpha:1e308,beta:1", "weights are relative")):
        with pytest.raises(SystemExit) as info:
            cli(capsys, src, "--blend", spec)
        assert info.value.code == 2 and message in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["a.png", "painting.jpg"]


def test_surprises_are_warned_on_one_line(styles_env, tmp_path, capsys):
    frames = [Image.new("RGB", (16, 16), c) for c in ("red", "blue")]
    frames[0].save(tmp_path / "anim.gif", save_all=True, append_images=frames[1:])
    code, text, counts = cli(capsys, tmp_path / "anim.gif")
    assert code == 0 and counts == (1, 0, 0)
    assert re.search(r"^note: .*anim.gif: has 2 frames or pages; only the first is used", text, re.M)
    code = main(["stylize", str(tmp_path / "anim.gif"), "-o", str(tmp_path / "h.png"), "--device", "cpu",
                 "--precision", "fp16"])
    assert code == 0 and "warning: fp16 on the CPU is emulated" in capsys.readouterr().err


def test_bench_says_where_it_writes(tmp_path, capsys, monkeypatch):
    from styleforge.bench import suite
    monkeypatch.setattr(suite, "run_suite", lambda config, log: (_ for _ in ()).throw(ValueError("stop")))
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--device", "cpu"]) == 2
    out = capsys.readouterr().out
    assert f"results go to {tmp_path / 'benchmarks' / 'results'} (a new folder" in out
    assert not (tmp_path / "benchmarks").exists()


def test_a_style_that_outputs_nan_writes_nothing(styles_env, tmp_path, capsys):
    import torch
    from conftest import random_style_state

    from styleforge.models.checkpoint import save_checkpoint
    state = random_style_state(4)
    state["conv1.conv2d.weight"] = torch.full_like(state["conv1.conv2d.weight"], 3e38)  # inf → NaN in the norm
    wild = save_checkpoint(tmp_path / "wild.safetensors", state, {"style": "wild"}, dtype=torch.float32)
    src = write(tmp_path / "a.png")
    Image.new("RGB", (20, 16), "white").save(src)
    code, text, counts = cli(capsys, src, "--checkpoint", wild, "-o", tmp_path / "out.png")
    assert code == 1 and counts == (0, 0, 1) and "holds NaN or inf" in text
    assert not (tmp_path / "out.png").exists()
