"""`styleforge.stylize_video` and `styleforge video`: tiny generated H.264 + AAC clips (PyAV).

Checks: frames stylized like the image path, audio packets bit-identical, start/duration,
crf, temp + rename, broken streams as one-line errors, the frame filter hook, the CLI.
"""
from fractions import Fraction

import numpy as np
import pytest

av = pytest.importorskip("av")

from styleforge.cli import main  # noqa: E402

FPS = 12


def make_video(path, width=32, height=24, frames=12, audio=True, codec="libx264", fps=FPS, pan=False):
    """Random frames, or with `pan` one smooth picture moving 1 px a frame (flow can follow it)."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width + frames]
    scene = (127 + 100 * np.stack([np.sin(x / 5), np.cos(y / 4), np.sin((x + y) / 7)], -1)).astype(np.uint8)
    with av.open(str(path), "w") as out:
        video = out.add_stream(codec, rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.options = {"preset": "ultrafast", "crf": "10"}
        if audio:
            sound = out.add_stream("aac", rate=8000)
            sound.layout = "mono"
        out.metadata["title"] = "tiny test clip"
        for i in range(frames):
            pixels = (np.ascontiguousarray(scene[:, i:i + width]) if pan
                      else rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, fps)
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        if audio:
            samples = 8000 * frames // fps
            tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(samples) / 8000)).astype(np.float32)[None]
            for start in range(0, samples, 1024):
                chunk = av.AudioFrame.from_ndarray(tone[:, start:start + 1024].copy(), format="flt",
                                                   layout="mono")
                chunk.sample_rate, chunk.pts, chunk.time_base = 8000, start, Fraction(1, 8000)
                for packet in sound.encode(chunk):
                    out.mux(packet)
            for packet in sound.encode(None):
                out.mux(packet)
    return path


def audio_packets(path):
    with av.open(str(path)) as container:
        return [(bytes(p), p.pts) for p in container.demux(container.streams.audio[0]) if p.size]


def video_frames(path):
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


@pytest.fixture
def clip(tmp_path):
    return make_video(tmp_path / "clip.mp4")


@pytest.mark.slow
def test_frames_stylized_audio_bit_identical_metadata_kept(styles_env, clip, tmp_path):
    import styleforge
    seen = []
    result = styleforge.stylize_video(clip, tmp_path / "out.mp4", device="cpu", crf=0, preset="ultrafast",
                                      progress=lambda done, total: seen.append((done, total)))
    assert result.frames == 12 and seen[-1] == (12, 12)
    assert audio_packets(tmp_path / "out.mp4") == audio_packets(clip)
    with av.open(str(tmp_path / "out.mp4")) as out, av.open(str(clip)) as src:
        assert out.metadata.get("title") == "tiny test clip"
        assert out.streams.video[0].average_rate == src.streams.video[0].average_rate
        assert out.streams.video[0].codec_context.name == "h264"
    # Each output frame is the stylized input frame, up to the encoder's (crf 0) YUV round trip.
    inputs, outputs = video_frames(clip), video_frames(tmp_path / "out.mp4")
    for content, got in zip(inputs[::5], outputs[::5]):
        want = styleforge.stylize(content, device="cpu")
        assert np.abs(got.astype(int) - want).mean() < 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4", "out.mp4"]


def test_start_duration_and_frame_filter_in_order(styles_env, clip, tmp_path):
    import styleforge
    order = []

    def invert(content, stylized):
        order.append(int(content[0, 0, 0]))
        return 255 - stylized
    result = styleforge.stylize_video(clip, tmp_path / "cut.mkv", device="cpu", start=0.25,
                                      duration=0.5, frame_filter=invert, codec="h265")
    assert result.frames == 6
    with av.open(str(tmp_path / "cut.mkv")) as out:
        assert out.streams.video[0].codec_context.name == "hevc"
        assert out.streams.video[0].frames in (0, 6)
        assert float(out.duration / av.time_base) < 0.8
    firsts = [int(f[0, 0, 0]) for f in video_frames(clip)[3:9]]
    assert np.abs(np.array(order) - firsts).max() <= 12   # the same frames, in order
    kept = [p for p, _ in audio_packets(tmp_path / "cut.mkv")]
    assert kept and set(kept) <= {p for p, _ in audio_packets(clip)}


def test_broken_and_missing_inputs_are_one_line_errors(styles_env, clip, tmp_path):
    import styleforge
    from styleforge.media import VideoError
    (tmp_path / "junk.mp4").write_bytes(b"\x00" * 4000)
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(clip.read_bytes()[: len(clip.read_bytes()) // 3])
    for bad in ("junk.mp4", "truncated.mp4", "missing.mp4"):
        with pytest.raises(VideoError) as info:
            styleforge.stylize_video(tmp_path / bad, tmp_path / "o.mp4", device="cpu")
        assert bad in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(VideoError, match="suffix"):
        styleforge.stylize_video(clip, tmp_path / "o.xyz", device="cpu")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4", "junk.mp4", "truncated.mp4"]


def test_a_stylization_error_is_chained_whole_with_its_traceback(clip, tmp_path):
    """A CUDA error is several lines long and says little without the call that raised it: the
    VideoError keeps the engine's message whole and is raised from that exception, whose
    traceback (frames' locals dropped, so no batch tensor stays alive) names the raising call."""
    import traceback

    from styleforge.engine.options import StylizeOptions
    from styleforge.media import VideoError
    from styleforge.media.video import stylize_video
    text = "CUDA error: operation not permitted when stream is capturing\nCompile with `TORCH_USE_CUDA_DSA`"

    def engine_that_breaks(x):
        if x.shape[0] and x.float().mean() >= 0:   # every frame: raise from inside the call
            raise RuntimeError(text)
        return x

    with pytest.raises(VideoError) as info:
        stylize_video(clip, tmp_path / "o.mp4", engine_that_breaks, StylizeOptions())
    assert f"stylization failed (RuntimeError: {text})" in str(info.value)
    cause = info.value.__cause__
    assert isinstance(cause, RuntimeError) and str(cause) == text
    assert "engine_that_breaks" in "".join(traceback.format_exception(info.value))
    frames = traceback.walk_tb(cause.__traceback__)
    assert not any(frame.f_locals.get("x") is not None for frame, _ in frames)
    assert not (tmp_path / "o.mp4").exists()


def test_video_command(styles_env, clip, tmp_path, capsys):
    assert main(["video", str(clip), "-o", str(tmp_path / "o.mp4"), "--device", "cpu",
                 "--crf", "30", "--preset", "veryfast"]) == 0
    assert "12 frames" in capsys.readouterr().err
    assert main(["video", str(clip), "-o", str(tmp_path / "o.mp4"), "--device", "cpu"]) == 0   # as stylize
    assert "o.mp4 exists (--overwrite" in capsys.readouterr().err
    (tmp_path / "bad.mp4").write_bytes(b"nope")
    assert main(["video", str(tmp_path / "bad.mp4"), "-o", str(tmp_path / "p.mp4"), "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert "bad.mp4" in err and "Traceback" not in err


@pytest.mark.slow
def test_long_video_keeps_memory_bounded(tmp_path):
    """Ten minutes of frames through a 4-deep pipeline: frames in flight stay bounded, and this
    call's own peak memory (not the process's lifetime peak) stays under half of what keeping
    every frame's float tensor would take, so a pipeline that held its frames would fail."""
    from conftest import peak_rss_growth_mb

    from styleforge.engine.options import StylizeOptions
    from styleforge.media.options import PipelineOptions, VideoOptions
    from styleforge.media.pipeline import Stats
    from styleforge.media.video import stylize_video
    frames, width, height = 2 * 600, 128, 96
    long_clip = make_video(tmp_path / "long.mp4", width, height, frames=frames, fps=2, pan=True)   # 10 min, 2 fps
    stats = Stats()
    result, grown_mb = peak_rss_growth_mb(lambda: stylize_video(
        long_clip, tmp_path / "o.mp4", lambda x: 255 - x, StylizeOptions(),
        VideoOptions(preset="ultrafast", pipeline=PipelineOptions(depth=4)), stats=stats))
    assert result.frames == frames and stats.peak_in_flight <= 2 * 4 + 1 + 4
    assert audio_packets(tmp_path / "o.mp4") == audio_packets(long_clip)
    every_frame_mb = frames * width * height * 3 * 4 / 2**20      # float32 frames: 169 MB
    assert grown_mb < every_frame_mb / 2, f"this call's peak rose {grown_mb:.0f} MB"


def test_plain_transcode_passes_frames_through(tmp_path):
    """Without a stylizer (the bench's codec floor) decoded frames go to the encoder as they are:
    same pictures at crf 0, same timestamps, and x264 picks its own frame types."""
    from styleforge.engine.options import StylizeOptions
    from styleforge.media.options import VideoOptions
    from styleforge.media.video import stylize_video
    clip = make_video(tmp_path / "smooth.mp4", width=64, height=48, pan=True)
    stylize_video(clip, tmp_path / "out.mp4", None, StylizeOptions(), VideoOptions(crf=0))
    with av.open(str(clip)) as a, av.open(str(tmp_path / "out.mp4")) as b:
        src = [(f.pts, f.to_ndarray()) for f in a.decode(video=0)]
        out = [(f.pts, f.to_ndarray()) for f in b.decode(video=0)]
    assert [p for p, _ in out] == [p for p, _ in src]
    assert all(np.array_equal(x, y) for (_, x), (_, y) in zip(src, out))
    assert audio_packets(tmp_path / "out.mp4") == audio_packets(clip)


def test_cuda_decoder_where_there_is_none_is_a_one_line_error(clip, tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has NVIDIA's decoder")
    from styleforge.engine.options import StylizeOptions
    from styleforge.media.options import VideoOptions
    from styleforge.media.video import VideoError, stylize_video
    with pytest.raises(VideoError, match="--decoder cpu"):
        stylize_video(clip, tmp_path / "out.mp4", None, StylizeOptions(), VideoOptions(decoder="cuda"))
    assert not list(tmp_path.glob("*out.mp4*"))
    with pytest.raises(ValueError, match="video decoder"):
        VideoOptions(decoder="nvdec")


@pytest.mark.gpu
@pytest.mark.parametrize("decoder", ["cpu", "cuda"])
def test_cuda_planar_path_matches_the_image_path(styles_env, tmp_path, decoder):
    """On CUDA frames cross as YUV planes (yuv420p from FFmpeg's decoders, NV12 from NVDEC),
    converted on the GPU (media.yuv): each output frame is still the stylized input frame, up to
    the 4:2:0 round trip, with audio bit-identical."""
    import styleforge
    clip = make_video(tmp_path / "smooth.mp4", width=64, height=48)
    styleforge.stylize_video(clip, tmp_path / "out.mp4", device="cuda", crf=0, preset="ultrafast",
                             decoder=decoder)
    assert audio_packets(tmp_path / "out.mp4") == audio_packets(clip)
    inputs, outputs = video_frames(clip), video_frames(tmp_path / "out.mp4")
    assert len(outputs) == len(inputs)
    for content, got in zip(inputs[::5], outputs[::5]):
        want = styleforge.stylize(content, device="cuda")
        assert np.abs(got.astype(int) - want).mean() < 8


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_temporal_flag_blends_frames_and_rejects_bad_strengths(styles_env, tmp_path, capsys):
    clip = make_video(tmp_path / "pan.mp4", width=64, height=48, pan=True)
    plain, steady = tmp_path / "plain.mp4", tmp_path / "steady.mp4"
    assert main(["video", str(clip), "-o", str(plain), "--device", "cpu", "--crf", "0"]) == 0
    assert main(["video", str(clip), "-o", str(steady), "--device", "cpu", "--crf", "0", "--temporal"]) == 0
    a, b = video_frames(plain), video_frames(steady)
    assert len(a) == len(b) == 12
    assert np.array_equal(a[0], b[0])                               # nothing to blend with yet
    assert any(not np.array_equal(x, y) for x, y in zip(a[1:], b[1:]))
    # The backward flow alone (no forward-backward test) blends too.
    backward = tmp_path / "backward.mp4"
    assert main(["video", str(clip), "-o", str(backward), "--device", "cpu", "--crf", "0", "--temporal",
                 "--no-temporal-flow-check"]) == 0
    c = video_frames(backward)
    assert len(c) == 12 and np.array_equal(a[0], c[0])
    assert any(not np.array_equal(x, y) for x, y in zip(a[1:], c[1:]))
    capsys.readouterr()
    assert main(["video", str(clip), "-o", str(tmp_path / "x.mp4"), "--device", "cpu", "--temporal", "1"]) == 2
    assert "temporal strength" in capsys.readouterr().err
