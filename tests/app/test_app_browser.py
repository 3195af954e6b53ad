"""The web app in a real headless Chromium (Debian's `chromium`, driven by Playwright).

A `styleforge serve` subprocess with tiny random-weight styles on a free localhost port: the page
loads; upload → Stylize → the before/after slider shows and the download is a PNG of the input's
size; a painting uploaded as the style gives a result of the input's size; a painted mask
changes only the painted region; a corrupt upload shows the error and the
next request still works; SIGTERM stops the server with exit code 0. The screenshot test serves
the shipped styles and writes `app_*.png` into `<basetemp>/screenshots/` (dev/app_screenshots.py
copies them into docs/images/).
"""
from __future__ import annotations

import contextlib
import importlib.util

import numpy as np
import pytest
from app_serving import CHROMIUM, Server, launch_chromium
from PIL import Image

import styleforge

# find_spec, not importorskip: importing gradio costs seconds of every collection, slow tier or not
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install -y chromium"),
              pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="needs playwright"),
              pytest.mark.skipif(importlib.util.find_spec("gradio") is None, reason="needs gradio")]

WAIT_MS = 120_000


@pytest.fixture(scope="module")
def server(tiny_styles, tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("app"), tiny_styles, "--max-pixels", str(400 * 400))
    yield srv
    assert srv.stop() == 0, srv.log.read_text()[-2000:]      # graceful shutdown on SIGTERM


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@contextlib.contextmanager
def fresh_page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url)
    page.wait_for_selector("#sf-run")
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def page(browser, server):
    with fresh_page(browser, server) as page:
        yield page


@pytest.fixture(scope="module")
def photo(tmp_path_factory):
    rng = np.random.default_rng(7)
    array = rng.integers(0, 255, (61, 93, 3), dtype=np.uint8)     # odd sizes on purpose
    path = tmp_path_factory.mktemp("photos") / "my photo.png"
    Image.fromarray(array).save(path)
    return path


def upload_photo(page, path):
    page.locator("#sf-photo input[type=file]").set_input_files(str(path))
    page.wait_for_selector("#sf-photo img")


def stylize_and_wait(page) -> str:
    """Click Stylize on a page that has not stylized yet; wait for the timing line."""
    page.click("#sf-run")
    page.wait_for_function("document.querySelector('#sf-info')?.innerText.includes(' ms ')")
    return page.locator("#sf-info").inner_text()


def download(page, tmp_path) -> Image.Image:
    with page.expect_download() as info:
        page.click("#sf-download")
    target = tmp_path / info.value.suggested_filename
    info.value.save_as(target)
    return Image.open(target)


def test_page_loads_with_gallery_and_controls(page):
    assert page.title() == "StyleForge"
    # The thumbnails are drawn in the background after the server answers: the page fills in.
    page.wait_for_function("document.querySelectorAll('#sf-gallery img').length == 2")
    assert page.locator("#sf-gallery img").count() == 2
    assert page.locator("#sf-arbitrary input[type=file]").count() == 1     # accepts an upload
    for tab in ("Image", "Video", "Webcam", "Train a style"):
        assert page.get_by_role("tab", name=tab).is_visible()


def test_upload_stylize_download_has_the_input_size(page, photo, tmp_path):
    upload_photo(page, photo)
    text = stylize_and_wait(page)
    assert "93×61 px" in text and "ms" in text
    assert page.locator("#sf-compare img").count() >= 2
    result = download(page, tmp_path)
    assert result.size == (93, 61)
    assert not np.array_equal(np.asarray(result.convert("RGB")), np.asarray(Image.open(photo)))


def test_painting_as_the_style_gives_the_input_size(browser, server, photo, tmp_path):
    """Two different paintings, each in a fresh page: both results have the input's size and they
    differ, so the uploaded painting is what styled the photo."""
    rng = np.random.default_rng(3)
    paintings = {"stripes.png": rng.integers(0, 255, (8, 64, 3), dtype=np.uint8).repeat(8, axis=0),
                 "flat.png": np.full((64, 64, 3), (30, 60, 200), np.uint8)}
    results = {}
    for name, pixels in paintings.items():
        Image.fromarray(pixels).save(tmp_path / name)
        with fresh_page(browser, server) as page:
            upload_photo(page, photo)
            page.locator("#sf-arbitrary input[type=file]").set_input_files(str(tmp_path / name))
            page.wait_for_selector("#sf-arbitrary img")
            assert f"{name}: arbitrary style" in stylize_and_wait(page)
            result = download(page, tmp_path)
            assert result.size == (93, 61)
            results[name] = np.asarray(result.convert("RGB"), np.int16)
    assert np.abs(results["stripes.png"] - results["flat.png"]).mean() > 1, "the painting made no difference"


def test_painted_mask_stylizes_only_that_region(page, photo, tmp_path):
    upload_photo(page, photo)
    page.click("text=Region (paint a mask)")
    page.get_by_label("Only the painted region").check()
    canvas = page.locator("#sf-editor canvas").first
    canvas.wait_for()
    page.wait_for_timeout(500)              # the background is drawn after the photo arrives
    box = canvas.bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx - 20, cy)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(cx - 20 + 4 * step, cy, steps=2)
    page.mouse.up()
    stylize_and_wait(page)
    result = np.asarray(download(page, tmp_path).convert("RGB")).astype(int)
    original = np.asarray(Image.open(photo)).astype(int)
    changed = np.abs(result - original).max(axis=2) > 2
    assert result.shape == original.shape
    assert changed.any(), "the painted region was not stylized"
    assert changed[0].sum() == 0 and changed[-1].sum() == 0, "pixels far from the brush changed"
    assert changed.mean() < 0.6


def test_bad_upload_shows_an_error_and_the_app_keeps_serving(page, photo, tmp_path, server):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n this is not really a png")
    page.locator("#sf-photo input[type=file]").set_input_files(str(bad))
    page.wait_for_timeout(1000)
    page.click("#sf-run")
    error = page.get_by_text("not an image file Pillow can read")
    error.first.wait_for()
    assert "broken.png" in page.locator(".toast-body").first.inner_text()
    assert server.alive()
    page.reload()
    page.wait_for_selector("#sf-run")
    upload_photo(page, photo)
    assert "93×61 px" in stylize_and_wait(page)
    assert download(page, tmp_path).size == (93, 61)


def test_screenshots_of_the_app(browser, tmp_path_factory):
    """Shipped styles, sample photo: the pictures the README shows."""
    shots = tmp_path_factory.getbasetemp() / "screenshots"
    shots.mkdir(exist_ok=True)
    srv = Server(tmp_path_factory.mktemp("app_real"), None)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(srv.url)
        page.wait_for_selector("#sf-run")
        names = [s.name for s in styleforge.list_styles()]    # the gallery's order
        page.locator("#sf-gallery .thumbnail-item").nth(len(names) - 1).wait_for()   # all, drawn behind
        page.screenshot(path=shots / "app_start.png")
        page.locator("#sf-photo input[type=file]").set_input_files(_asset("chelsea.jpg"))
        page.wait_for_selector("#sf-photo img")
        page.locator("#sf-gallery .thumbnail-item").nth(names.index("starry_night")).click()
        stylize_and_wait(page)
        page.wait_for_timeout(800)
        page.screenshot(path=shots / "app_image.png")
        page.get_by_role("tab", name="Train a style").click()
        page.wait_for_timeout(300)
        page.screenshot(path=shots / "app_train.png")
        context.close()
    finally:
        assert srv.stop() == 0
    for name in ("app_start.png", "app_image.png", "app_train.png"):
        assert Image.open(shots / name).size == (1280, 900)


def _asset(name: str) -> str:
    from styleforge.app.gallery import ASSETS
    return str(ASSETS / name)
