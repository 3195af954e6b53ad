"""The temporal-consistency benchmark end to end at toy size: random-weight styles, a narrow
random VGG, 64-px generated clips and a real video file; rows per clip, the table, the JSON lines."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge.bench.temporal import run_temporal_bench
from styleforge.bench.temporal_options import TemporalBenchConfig
from styleforge.bench.temporal_report import markdown
from styleforge.cli import main
from styleforge.models.vgg import VGG16Features


@pytest.fixture
def inputs(tmp_path):
    import cv2
    rng = np.random.default_rng(0)
    photo = cv2.GaussianBlur(rng.uniform(0, 255, (120, 160, 3)).astype(np.float32), (0, 0), 2) * 3 - 255
    Image.fromarray(np.clip(photo, 0, 255).astype(np.uint8)).save(tmp_path / "photo.png")
    Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(tmp_path / "painting.png")
    torch.manual_seed(0)
    torch.save(VGG16Features((4, 8, 8, 8)).state_dict(), tmp_path / "vgg.pth")
    writer = cv2.VideoWriter(str(tmp_path / "clip.avi"), cv2.VideoWriter_fourcc(*"MJPG"), 25, (40, 32))
    for t in range(4):
        writer.write(np.roll(np.clip(photo[:32, :40], 0, 255).astype(np.uint8), t, axis=1))
    writer.release()
    return tmp_path


@pytest.mark.slow
def test_rows_per_clip_table_and_file(styles_env, inputs):
    config = TemporalBenchConfig(style="alpha", stability_checkpoint=str(styles_env / "beta.safetensors"),
                                 painting=str(inputs / "painting.png"), vgg_weights=str(inputs / "vgg.pth"),
                                 videos=(str(inputs / "clip.avi"),), photos=(str(inputs / "photo.png"),),
                                 scenes=("pan", "cut"), size=64, frames=6, speed_frames=8, repeats=1,
                                 score_every=2, output=str(inputs / "out"))
    rows = run_temporal_bench(config, log=lambda m: None)
    assert {r["clip"] for r in rows} == {"pan@64x36", "cut@64x36", "clip.avi"}
    for clip in ("pan@64x36", "cut@64x36"):
        by = {r["method"]: r for r in rows if r["clip"] == clip}
        assert set(by) == {"per-frame", "temporal", "stability", "stability+temporal"}
        assert by["per-frame"]["warp_vs_per_frame"] == pytest.approx(1.0)
        assert by["temporal"]["warp_error"] < by["per-frame"]["warp_error"]
        assert by["temporal"]["style_ratio"] > 0 and by["temporal"]["style_change"] is not None
        # The video path timed on the same clip, plain and --temporal.
        assert by["per-frame"]["fps_plain"] > 0 and by["temporal"]["fps_temporal"] > 0
        assert by["temporal"]["fps_ratio"] == pytest.approx(
            by["temporal"]["fps_temporal"] / by["temporal"]["fps_plain"])
    table = markdown(rows)
    assert "| pan@64x36 | temporal |" in table and "| cut@64x36 | stability+temporal |" in table
    lines = (inputs / "out" / "temporal.jsonl").read_text().splitlines()
    assert len(lines) == len(rows) and "env" in json.loads(lines[0])


@pytest.mark.slow
def test_cli_without_style_ratio_or_stability_style(styles_env, inputs, capsys):
    code = main(["bench", "--temporal", "--style", "alpha", "--photo", str(inputs / "photo.png"),
                 "--temporal-scenes", "zoom", "--temporal-size", "48", "--temporal-frames", "3",
                 "--temporal-speed-frames", "0", "--no-temporal-flow-check", "--device", "cpu",
                 "--output", str(inputs / "cli")])
    out = capsys.readouterr().out
    assert code == 0 and "style ratio left out" in out and "| zoom@48x28 | temporal |" in out
    assert "| zoom@48x28 | stability | absent" in out
    rows = [json.loads(line) for line in (inputs / "cli" / "temporal.jsonl").read_text().splitlines()]
    assert all(row["config"]["flow_check"] is False for row in rows)   # the backward flow alone, recorded


def test_bad_scene_and_missing_file(styles_env, inputs):
    with pytest.raises(ValueError, match="scene"):
        run_temporal_bench(TemporalBenchConfig(style="alpha", photos=(str(inputs / "photo.png"),),
                                               scenes=("spin",), size=32, frames=3, speed_frames=0, output=None),
                           log=lambda m: None)
    with pytest.raises(FileNotFoundError, match="nope"):
        TemporalBenchConfig(videos=(str(inputs / "nope.mp4"),))
