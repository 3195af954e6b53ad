"""`run_camera` and `styleforge webcam` with a tiny generated video file standing in for the
camera, headless (no window), the tiny random-weight styles of conftest."""
from __future__ import annotations

import time

import cv2
import numpy as np
import pytest

from styleforge.cli import main
from styleforge.media.camera import CameraOptions, next_style, run_camera
from styleforge.media.camera_devices import CameraError


def write_video(path, frames: int = 6, size: tuple[int, int] = (24, 16), fps: float = 25.0) -> str:
    width, height = size
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (width, height))
    yy, xx = np.mgrid[0:height, 0:width]
    for t in range(frames):
        frame = np.stack([(xx * 6 + t * 8) % 256, (yy * 7) % 256, np.full_like(xx, 40 + 10 * t)], -1)
        writer.write(frame.astype(np.uint8))
    writer.release()
    return str(path)


@pytest.fixture
def clip(tmp_path):
    return write_video(tmp_path / "camera.avi")


@pytest.mark.slow
def test_every_frame_styled_and_keys_switch_styles(styles_env, clip):
    seen = []
    options = CameraOptions(source=clip, styles=("alpha", "beta"), window=False, realtime=False, device="cpu")
    script = {1: ord("n"), 2: ord("1"), 3: ord("p")}
    stats = run_camera(options, on_frame=lambda rgb, style: seen.append((rgb.shape, style)),
                       keys=lambda i: script.get(i, -1))
    assert stats.frames == 6 and stats.dropped == 0
    assert [s for _, s in seen] == ["alpha", "alpha", "beta", "alpha", "beta", "beta"]
    assert seen[0][0] == (16, 24, 3)


def test_quit_key_and_max_frames_stop(styles_env, clip):
    options = CameraOptions(source=clip, styles=("alpha",), window=False, realtime=False, device="cpu")
    assert run_camera(options, keys=lambda i: 27 if i == 2 else -1).frames == 3
    limited = CameraOptions(source=clip, styles=("alpha",), window=False, realtime=False, max_frames=2, device="cpu")
    assert run_camera(limited).frames == 2


def test_slow_consumer_drops_frames_instead_of_queueing(styles_env, tmp_path):
    fast = write_video(tmp_path / "fast.avi", frames=20, fps=1000.0)
    options = CameraOptions(source=fast, styles=("alpha",), window=False, realtime=True, device="cpu")
    stats = run_camera(options, on_frame=lambda rgb, style: time.sleep(0.03))
    assert stats.dropped > 0 and stats.frames + stats.dropped == 20


def test_temporal_and_max_side_apply(styles_env, tmp_path):
    shapes = []
    big = write_video(tmp_path / "big.avi", frames=3, size=(40, 32))
    options = CameraOptions(source=big, styles=("alpha",), window=False, realtime=False, max_side=20,
                            temporal=0.5, device="cpu")
    run_camera(options, on_frame=lambda rgb, style: shapes.append(rgb.shape))
    assert shapes == [(16, 20, 3)] * 3


def test_next_style_keys():
    assert next_style(ord("3"), 0, 4) == 2 and next_style(ord("9"), 1, 4) == 1
    assert next_style(ord("n"), 3, 4) == 0 and next_style(ord("p"), 0, 4) == 3
    assert next_style(-1, 2, 4) == 2


def test_missing_source_is_a_clear_error(styles_env, tmp_path):
    with pytest.raises(CameraError, match="no such file"):
        run_camera(CameraOptions(source=str(tmp_path / "nope.mp4"), styles=("alpha",), window=False))


@pytest.mark.slow
def test_cli_writes_the_styled_video(styles_env, clip, tmp_path, capsys):
    out = tmp_path / "styled.avi"
    code = main(["webcam", "--source", clip, "--style", "beta", "--no-window", "--every-frame",
                 "--output", str(out), "--device", "cpu", "--temporal"])
    assert code == 0, capsys.readouterr().err
    capture = cv2.VideoCapture(str(out))
    count = 0
    while capture.read()[0]:
        count += 1
    assert count == 6
    assert not list(tmp_path.glob(".*partial*"))
    assert "6 frames" in capsys.readouterr().err


def test_cli_bad_source_exits_2(styles_env, tmp_path, capsys):
    assert main(["webcam", "--source", str(tmp_path / "x.mp4"), "--no-window", "--style", "alpha"]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.slow
def test_a_painting_is_a_style_the_keys_reach(styles_env, clip, tmp_path):
    from PIL import Image
    painting = tmp_path / "painting.png"
    Image.fromarray((np.random.default_rng(3).random((40, 40, 3)) * 255).astype(np.uint8)).save(painting)
    seen = []
    args = ["webcam", "--source", clip, "--style", "alpha", "--style-image", str(painting), "--no-window",
            "--every-frame", "--max-frames", "3", "--device", "cpu"]
    from styleforge.cli import build_parser
    from styleforge.commands.webcam import options_from_args
    options = options_from_args(build_parser().parse_args(args))
    assert options.styles == ("alpha", str(painting))
    stats = run_camera(options, on_frame=lambda rgb, style: seen.append((rgb, style)),
                       keys=lambda i: ord("n") if i == 1 else -1)
    assert stats.frames == 3 and [s for _, s in seen] == ["alpha", "alpha", str(painting)]  # keys act after a frame
    assert seen[2][0].shape == (16, 24, 3) and not np.array_equal(seen[2][0], seen[1][0])
