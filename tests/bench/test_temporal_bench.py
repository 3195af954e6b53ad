"""The temporal-consistency benchmark end to end at toy size: random-weight style, a narrow
random VGG, 32-px camera clips and a generated video; rows, the table and the JSON lines."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge.bench.temporal import markdown, run_temporal_bench, summarise
from styleforge.bench.temporal_options import TemporalBenchConfig
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
def test_rows_table_and_file(styles_env, inputs):
    config = TemporalBenchConfig(style="alpha", stability_checkpoint=str(styles_env / "beta.safetensors"),
                                 painting=str(inputs / "painting.png"), vgg_weights=str(inputs / "vgg.pth"),
                                 videos=(str(inputs / "clip.avi"),), photos=(str(inputs / "photo.png"),),
                                 motions=("integer-pan",), size=32, frames=3, output=str(inputs / "out"))
    rows = run_temporal_bench(config, log=lambda m: None)
    methods = {r["method"] for r in rows}
    assert methods == {"per-frame", "temporal", "stability", "stability+temporal"}
    assert {r["clip"] for r in rows} == {"photo/integer-pan", "clip.avi"}
    synthetic = [r for r in rows if r["clip"] == "photo/integer-pan"]
    assert all(r["warp_error_exact"] is not None and r["style_ratio"] > 0 for r in synthetic)
    summary = {s["method"]: s for s in summarise(rows)}
    assert summary["per-frame"]["warp_vs_per_frame"] == pytest.approx(1.0)
    assert summary["temporal"]["warp_vs_per_frame"] < 1.0
    assert "| temporal |" in markdown(rows)
    lines = (inputs / "out" / "temporal.jsonl").read_text().splitlines()
    assert len(lines) == len(rows) and "env" in json.loads(lines[0])


@pytest.mark.slow
def test_cli_temporal_without_style_ratio(styles_env, inputs, capsys):
    code = main(["bench", "--temporal", "--style", "alpha", "--photo", str(inputs / "photo.png"),
                 "--temporal-motions", "zoom", "--temporal-size", "32", "--temporal-frames", "3",
                 "--device", "cpu", "--output", str(inputs / "cli")])
    out = capsys.readouterr().out
    assert code == 0 and "style ratio left out" in out and "| photo/zoom | temporal |" in out


def test_bad_motion_and_missing_file(styles_env, inputs):
    with pytest.raises(ValueError, match="motion"):
        run_temporal_bench(TemporalBenchConfig(style="alpha", photos=(str(inputs / "photo.png"),),
                                               motions=("spin",), output=None), log=lambda m: None)
    with pytest.raises(FileNotFoundError, match="nope"):
        TemporalBenchConfig(videos=(str(inputs / "nope.mp4"),))
