"""The web app without a browser: file safety, limits, the handlers' replies and errors, a
painting as the style, the video tab's call into `styleforge.stylize_video`, and a training job
on toy data (CPU).

Tiny random-weight styles (conftest `styles_env`) and the shipped arbitrary-style weights;
images of a few dozen pixels.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge.app.files import AppFiles, UploadError, safe_stem
from styleforge.app.options import ServeOptions, engine_concurrency
from styleforge.cli import main

# Importing gradio costs about 4 s of CPU (it rewrites its components' .pyi stubs on every import),
# more than the default tier's budget for a test: the tests that need it (the handlers) are `slow`,
# and the module imports it only inside them, so collecting the default tier does not pay for it.
needs_gradio = pytest.mark.slow


@pytest.fixture
def gr():
    return pytest.importorskip("gradio")


@pytest.fixture
def handlers(gr):
    """styleforge.app.handlers: the request handlers and their mode names (WHOLE, INSIDE, TWO_STYLES)."""
    from styleforge.app import handlers
    return handlers


@pytest.mark.parametrize("name, stem", [
    ("../../etc/passwd", "passwd"), ("..\\..\\win.ini", "win"), ("/abs/ph oto.final.JPG", "ph_oto_final"),
    (".hidden", "hidden"), ("", "image"), ("../..", "image"), ("a" * 300 + ".png", "a" * 64),
])
def test_safe_stem_drops_paths_and_odd_characters(name, stem):
    assert safe_stem(name) == stem


def test_uploads_outside_the_cache_or_over_the_limit_are_refused(tmp_path):
    files = AppFiles(tmp_path / "app")
    inside = files.upload_dir / "abc" / "x.png"
    inside.parent.mkdir()
    inside.write_bytes(b"12345")
    assert files.upload({"path": str(inside), "orig_name": "../../x.png"}, 10) == (inside.resolve(), "x.png")
    with pytest.raises(UploadError, match="over the upload limit"):
        files.upload({"path": str(inside)}, 4)
    outside = tmp_path / "secret.txt"
    outside.write_text("no")
    for path in (str(outside), str(files.upload_dir / ".." / ".." / "secret.txt")):
        with pytest.raises(UploadError, match="not an upload"):
            files.upload({"path": path}, 100)
    out = files.new_output("../../evil", ".png")
    assert out.parent.parent == files.root / "outputs" and out.name == "evil.png"
    files.remove()
    assert (tmp_path / "app").exists()       # given folders are the caller's to remove
    own = AppFiles()
    own.remove()
    assert not own.root.exists()


def test_options_and_concurrency():
    assert ServeOptions().host == "127.0.0.1"
    assert engine_concurrency(ServeOptions(), "cuda") == 1
    assert engine_concurrency(ServeOptions(concurrency=3), "cuda") == 3
    with pytest.raises(ValueError, match="max_pixels"):
        ServeOptions(max_pixels=0)
    assert main(["serve", "--concurrency", "0"]) == 2


@pytest.fixture
def app(styles_env, tmp_path, handlers):
    files = AppFiles(tmp_path / "app")
    options = ServeOptions(device="cpu", backend="reference", precision="fp32", max_pixels=64 * 64,
                           max_upload_bytes=100_000)
    return handlers.Handlers(options, files, "cpu")


def upload(app, name: str, data: bytes) -> dict:
    path = app.files.upload_dir / "u" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    return {"path": str(path), "orig_name": name}


def png(array: np.ndarray) -> bytes:
    import io
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "PNG")
    return buf.getvalue()


@pytest.mark.slow
def test_stylize_whole_and_region_keep_the_size(app, handlers):
    photo = np.random.default_rng(0).integers(0, 255, (30, 41, 3), dtype=np.uint8)
    payload = upload(app, "photo.png", png(photo))
    (before, after), download, info = app.stylize(payload, "alpha", "beta", 0.5, 1.0, False, handlers.WHOLE, None)
    assert Image.open(download).size == (41, 30) and after == download
    assert before == str(payload["path"])
    assert download.endswith("photo_alpha.png") and "ms" in info
    assert str(app.files.root) in download
    layer = np.zeros((30, 41, 4), np.uint8)
    layer[5:20, 5:20] = (255, 0, 0, 255)
    editor = {"background": payload, "layers": [upload(app, "layer.png", png(layer))], "composite": None}
    _, download, _ = app.stylize(payload, "alpha", None, 0, 1.0, False, handlers.INSIDE, editor)
    out = np.asarray(Image.open(download))
    assert np.array_equal(out[25:, 30:], photo[25:, 30:])          # far from the brush: untouched
    assert not np.array_equal(out[10:15, 10:15], photo[10:15, 10:15])
    _, two, _ = app.stylize(payload, "alpha", "beta", 0, 1.0, False, handlers.TWO_STYLES, editor)
    two = np.asarray(Image.open(two), np.int16)
    whole = {style: np.asarray(Image.open(app.stylize(payload, style, None, 0, 1.0, False, handlers.WHOLE, None)[1]),
                               np.int16) for style in ("alpha", "beta")}
    inside, outside = np.s_[11:14, 11:14], np.s_[27:, 28:]     # ≥ 6 px (3σ of the feather) from the seam
    assert np.abs(whole["alpha"] - whole["beta"])[inside].max() > 10   # the two styles do differ there
    assert np.abs(two[inside] - whole["alpha"][inside]).max() <= 1     # style A inside the painted mask
    assert np.abs(two[outside] - whole["beta"][outside]).max() <= 1    # style B outside it


@needs_gradio
@pytest.mark.parametrize("name, data, style, mode, message", [
    ("bad.png", b"not an image at all", "alpha", "WHOLE", "not an image"),
    ("big.png", None, "alpha", "WHOLE", "over the limit"),
    ("ok.png", "ok", "../../secret", "WHOLE", "unknown style"),
    ("ok.png", "ok", "alpha", "INSIDE", "paint the region"),
])
def test_bad_requests_raise_one_clear_gr_error(app, gr, handlers, name, data, style, mode, message):
    mode = getattr(handlers, mode)
    if data is None:
        data = png(np.zeros((80, 80, 3), np.uint8))
    elif data == "ok":
        data = png(np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(gr.Error, match=message) as err:
        app.stylize(upload(app, name, data), style, None, 0, 1.0, False, mode, None)
    assert str(app.files.root) not in str(err.value)               # no server paths leak


def photo_payload(app, seed=0):
    photo = np.random.default_rng(seed).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    return upload(app, "photo.png", png(photo))


def painting_payload(app, name="painting.png", seed=1, shape=(64, 64, 3)):
    rng = np.random.default_rng(seed)
    array = rng.integers(0, 255, shape, dtype=np.uint8).repeat(8, axis=0)[:shape[0]]   # stripes
    return upload(app, name, png(array))


def count_arbitrary_builds(monkeypatch) -> list:
    from styleforge.api import clear_cache
    from styleforge.engine.arbitrary import ArbitraryStylizer
    clear_cache()
    built, original = [], ArbitraryStylizer.__post_init__

    def counted(self):
        built.append(self)
        original(self)
    monkeypatch.setattr(ArbitraryStylizer, "__post_init__", counted)
    return built


@pytest.mark.slow
def test_painting_replaces_the_built_in_style_and_keeps_the_size(app, handlers):
    photo = photo_payload(app)
    _, builtin, _ = app.stylize(photo, "alpha", None, 0, 1.0, False, handlers.WHOLE, None)
    painting = painting_payload(app)
    _, painted, info = app.stylize(photo, "alpha", None, 0, 1.0, False, handlers.WHOLE, None, painting)
    assert Image.open(painted).size == (64, 48) and painted.endswith("photo_painting.png")
    assert not np.array_equal(np.asarray(Image.open(painted)), np.asarray(Image.open(builtin)))
    assert "painting painting.png: arbitrary style on cpu" in info


@pytest.mark.slow
def test_a_style_being_prepared_is_said_in_the_page(app, gr, handlers, monkeypatch):
    """What the engine logs while it builds (here a stand-in for OpenVINO's first-use export)
    reaches the page as a Gradio notice; a later request that builds nothing says nothing."""
    import logging

    import styleforge.regions as regions
    shown, real = [], regions.stylize_regions

    def building(*args, **kwargs):
        if not shown:
            logging.getLogger("styleforge.engine.openvino_runner").info("preparing the OpenVINO int8 model")
        return real(*args, **kwargs)
    monkeypatch.setattr(handlers, "stylize_regions", building)
    monkeypatch.setattr(gr, "Info", shown.append)
    photo = photo_payload(app)
    app.stylize(photo, "alpha", None, 0, 1.0, False, handlers.WHOLE, None)
    app.stylize(photo, "alpha", None, 0, 1.0, False, handlers.WHOLE, None)
    assert shown == ["preparing the OpenVINO int8 model"]


@pytest.mark.slow
def test_arbitrary_engine_is_built_once_across_requests(app, gr, handlers, monkeypatch):
    """A bad painting, then three looks of a good one: one model load, three results."""
    built = count_arbitrary_builds(monkeypatch)
    photo, painting = photo_payload(app), painting_payload(app)
    broken = upload(app, "broken.png", b"junk")
    with pytest.raises(gr.Error, match="broken.png: not an image"):      # fails alone
        app.stylize(photo, "alpha", None, 0, 1.0, False, handlers.WHOLE, None, broken)
    outs = []
    for strength, keep in ((1.0, False), (0.5, False), (1.0, True)):
        _, out, _ = app.stylize(photo, "alpha", None, 0, strength, keep, handlers.WHOLE, None, painting)
        outs.append(np.asarray(Image.open(out)))
    assert len(built) == 1                            # sliders do not reload the model
    assert not np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[0], outs[2])


@pytest.mark.slow
def test_odd_paintings_are_taken_as_the_library_takes_them(app, handlers):
    """A tiny grey painting with alpha is composited on white and upscaled, not refused."""
    photo = photo_payload(app)
    _, out, _ = app.stylize(photo, "alpha", None, 0, 1.0, False, handlers.WHOLE, None,
                            painting_payload(app, "tiny.png", shape=(3, 5, 2)))
    assert Image.open(out).size == (64, 48)


@needs_gradio
@pytest.mark.parametrize("data, message", [
    (b"not an image at all", "not an image file Pillow can read"),
    (b"\x89PNG\r\n\x1a\n truncated", "truncated or corrupt image"),
    (None, "over the limit"),
])
def test_bad_painting_is_one_clear_error_and_the_next_request_works(app, gr, handlers, data, message):
    if data is None:
        data = png(np.zeros((80, 80, 3), np.uint8))            # over the app's 64×64 pixel limit
    photo = photo_payload(app)
    with pytest.raises(gr.Error, match=message) as err:
        app.stylize(photo, "alpha", None, 0, 1.0, False, handlers.WHOLE, None, upload(app, "bad.png", data))
    assert "bad.png" in str(err.value) and "painting" in str(err.value)
    assert str(app.files.root) not in str(err.value)
    _, out, _ = app.stylize(photo, "alpha", None, 0, 1.0, False, handlers.WHOLE, None)
    assert Image.open(out).size == (64, 48)


@needs_gradio
def test_painting_with_a_region_mode_is_refused(app, gr, handlers):
    with pytest.raises(gr.Error, match="whole image only"):
        app.stylize(photo_payload(app), "alpha", None, 0, 1.0, False, handlers.INSIDE, None,
                    painting_payload(app))


@pytest.mark.slow
def test_webcam_frame_is_downscaled_and_stylized(app, handlers):
    small = handlers.Handlers(ServeOptions(device="cpu", webcam_max_side=32), app.files, "cpu")
    frame = np.random.default_rng(1).integers(0, 255, (60, 80, 4), dtype=np.uint8)
    out = small.webcam(frame, "alpha", 1.0, False)
    assert out.shape == (24, 32, 3) and out.dtype == np.uint8


@needs_gradio
def test_training_tab_says_it_needs_a_gpu(app, gr):
    assert "needs a CUDA GPU" in app.training_ready()
    with pytest.raises(gr.Error, match="CUDA GPU"):
        app.train_start(None, "x", 100)


def make_video(path, frames=6, size=(32, 24)):
    av = pytest.importorskip("av")
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=12)
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        for i in range(frames):
            img = np.full((size[1], size[0], 3), (i * 40) % 256, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


@needs_gradio
def test_video_tab_returns_a_stylized_video_with_progress(app):
    path = app.files.upload_dir / "v" / "clip.mp4"
    path.parent.mkdir()
    make_video(path)
    seen = []

    class Progress:
        def __call__(self, value, desc=None, unit=None):
            seen.append(value)

    out = app.video({"video": {"path": str(path), "orig_name": "clip.mp4"}}, "alpha", "beta", 0.5,
                    1.0, False, progress=Progress())
    import av
    with av.open(out) as container:
        assert sum(1 for _ in container.decode(video=0)) == 6
    assert seen and seen[-1][0] == 6 and out.endswith("clip_alpha.mp4")


@needs_gradio
def test_video_over_the_length_limit_is_refused(app, gr, handlers, tmp_path):
    path = app.files.upload_dir / "v" / "long.mp4"
    path.parent.mkdir()
    make_video(path, frames=48)
    short = handlers.Handlers(ServeOptions(device="cpu", max_video_seconds=1.0), app.files, "cpu")
    with pytest.raises(gr.Error, match="over this server's limit"):
        short.video({"path": str(path), "orig_name": "long.mp4"}, "alpha", None, 0, 1.0, False)


@pytest.mark.slow
def test_training_job_runs_to_weights_with_preview(tmp_path):
    """The background job on toy data: narrow random VGG, 16² crops, 4 steps on the CPU."""
    from styleforge.app.training_job import TrainingJob
    from styleforge.models.checkpoint import load_checkpoint
    from styleforge.models.vgg import VGG16Features
    from styleforge.training import TrainConfig
    rng = np.random.default_rng(0)
    (tmp_path / "content").mkdir()
    for i in range(4):
        Image.fromarray(rng.integers(0, 255, (20, 20, 3), dtype=np.uint8)).save(tmp_path / "content" / f"{i}.png")
    Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(tmp_path / "painting.png")
    Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)).save(tmp_path / "sample.png")
    torch.manual_seed(0)
    torch.save(VGG16Features((8, 16, 16, 16)).state_dict(), tmp_path / "vgg.pth")
    config = TrainConfig(style_image=str(tmp_path / "painting.png"), content_dir=str(tmp_path / "content"),
                         out=str(tmp_path / "job" / "mine.safetensors"), vgg_weights=str(tmp_path / "vgg.pth"),
                         steps=4, batch_size=2, image_size=16, style_size=24, log_every=2,
                         checkpoint_every=0, sample_every=0, progress=False, device="cpu",
                         sample_photos=(str(tmp_path / "sample.png"),))
    job = TrainingJob(preview_every=2)
    job.start(config)
    with pytest.raises(RuntimeError, match="already running"):
        job.start(config)
    job._thread.join(60)
    status = job.status()
    assert status.state == "done", status.message
    assert status.step == 4 and len(status.history) == 2
    assert load_checkpoint(status.weights).state_dict and status.preview.endswith(".png")
