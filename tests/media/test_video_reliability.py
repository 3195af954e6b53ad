"""Videos a careless or hostile user gives: outputs that cannot be written, containers that
refuse the codec, unknown presets, truncated inputs, extra video streams, and a header that
lies about the length (the web app's limit is counted on the decoded frames)."""
from __future__ import annotations

import os

import pytest

av = pytest.importorskip("av")

from video_samples import lying_mkv, write_video  # noqa: E402

import styleforge  # noqa: E402
from styleforge.cli import main  # noqa: E402
from styleforge.io.atomic import FILE_MODE  # noqa: E402
from styleforge.media import VideoError  # noqa: E402


@pytest.fixture
def clip(tmp_path):
    return write_video(tmp_path / "clip.mp4")


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_output_under_a_file_is_one_line_and_leaves_nothing(styles_env, clip, tmp_path, capsys):
    (tmp_path / "blocked").write_text("a file, not a folder")
    with pytest.raises(VideoError, match="blocked is a file, not a folder"):
        styleforge.stylize_video(clip, tmp_path / "blocked" / "x.mp4", device="cpu")
    assert main(["video", str(clip), "-o", str(tmp_path / "blocked" / "x.mp4"), "--device", "cpu"]) == 1
    assert "blocked is a file" in one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocked", "clip.mp4"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_output_in_a_read_only_folder_is_one_line(styles_env, clip, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    assert main(["video", str(clip), "-o", str(locked / "x.mp4"), "--device", "cpu"]) == 1
    assert "not writable" in one_line_error(capsys)


def test_videos_get_the_mode_images_get(styles_env, clip, tmp_path):
    styleforge.stylize_video(clip, tmp_path / "out.mp4", device="cpu")
    assert (tmp_path / "out.mp4").stat().st_mode & 0o777 == FILE_MODE


def test_webm_picks_a_codec_it_can_hold_and_refuses_one_it_cannot(styles_env, clip, tmp_path, capsys):
    result = styleforge.stylize_video(clip, tmp_path / "out.webm", device="cpu")
    assert result.frames == 12
    with av.open(str(tmp_path / "out.webm")) as out:
        # decoder names
        assert out.streams.video[0].codec_context.name in ("av1", "libdav1d", "libaom-av1", "vp9", "libvpx-vp9")
    assert main(["video", str(clip), "-o", str(tmp_path / "h.webm"), "--device", "cpu",
                 "--video-codec", "h264"]) == 1
    assert "cannot hold h264" in one_line_error(capsys)
    assert not (tmp_path / "h.webm").exists()


def test_an_unknown_preset_names_the_preset_not_the_input(styles_env, clip, tmp_path, capsys):
    assert main(["video", str(clip), "-o", str(tmp_path / "o.mp4"), "--device", "cpu",
                 "--preset", "bogus"]) == 1
    line = one_line_error(capsys)
    assert "'bogus' is not a h264 preset" in line and "broken" not in line


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_a_truncated_stream_and_a_dropped_video_stream_are_said(styles_env, tmp_path):
    whole = write_video(tmp_path / "whole.mp4", frames=24, options={"movflags": "faststart"})
    with av.open(str(whole)) as container:
        starts = [p.pos for p in container.demux(video=0) if p.size]
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(whole.read_bytes()[:starts[12]])         # the index still promises 24 frames
    result = styleforge.stylize_video(cut, tmp_path / "o1.mp4", device="cpu")
    assert result.frames == 12
    assert any("ends after 12 of the 24 frames" in note for note in result.notes), result.notes
    two = write_video(tmp_path / "two.mkv", streams=2)
    result = styleforge.stylize_video(two, tmp_path / "o2.mp4", device="cpu")
    assert any("video stream 1 not kept" in note for note in result.notes), result.notes


@pytest.mark.slow
def test_the_length_limit_counts_decoded_frames_not_the_header(styles_env, tmp_path):
    gr = pytest.importorskip("gradio")  # noqa: F841  (video_seconds lives in the app)
    from styleforge.app.handlers import video_seconds
    liar = lying_mkv(tmp_path / "liar.mkv", frames=36, claimed_ms=100.0)    # 3 s that say 0.1 s
    assert video_seconds(liar) < 0.2
    with pytest.raises(VideoError, match="longer than the limit of 1 s"):
        styleforge.stylize_video(liar, tmp_path / "o.mp4", device="cpu", max_seconds=1.0)
    assert not (tmp_path / "o.mp4").exists()
    ok = styleforge.stylize_video(liar, tmp_path / "o.mp4", device="cpu", max_seconds=4.0)
    assert ok.frames == 36


def test_max_pixels_applies_to_video_frames(styles_env, clip, tmp_path):
    with pytest.raises(VideoError, match="over the limit of 500"):
        styleforge.stylize_video(clip, tmp_path / "o.mp4", device="cpu", max_pixels=500)
