"""The Blocks layout of `styleforge serve` and the wiring of its events to `Handlers`.

Tabs: Image (upload/paste/drag, style gallery or any painting as the style, strength, colour,
blend, painted regions, before/after slider, download), Video, Webcam, Train a style. Every
event that runs the engine shares one concurrency group (`engine`) sized to the device, so the
GPU sees one request at a time however many users click; the webcam stream has its own single
slot and keeps only the newest frame (`always_last`), dropping frames instead of queueing them.
Inputs arrive unprocessed (`preprocess=False`) so bad uploads reach our checks, not a decoder.
"""
from __future__ import annotations

import gradio as gr

from ..engine.options import DEFAULT_STYLE
from .gallery import Thumbnails, sample_photos
from .handlers import REGION_MODES, WHOLE, Handlers

ENGINE = "engine"


def build_blocks(handlers: Handlers, thumbnails: Thumbnails, concurrency: int) -> gr.Blocks:
    names = handlers.style_names
    default = DEFAULT_STYLE if DEFAULT_STYLE in names else names[0]
    second = next((n for n in names if n != default), default)
    with gr.Blocks(title="StyleForge", analytics_enabled=False) as demo:
        gr.Markdown("# StyleForge\nFast neural style transfer. Pick a style, drop in a photo, "
                    "press **Stylize**.")
        with gr.Row():
            with gr.Column(scale=1):
                gallery = gr.Gallery(thumbnails.items(), label="Built-in styles (click to pick)", columns=3,
                                     height=330, allow_preview=False, elem_id="sf-gallery")
                style = gr.Dropdown(names, value=default, label="Style A", elem_id="sf-style")
                style_b = gr.Dropdown(names, value=second, label="Style B (blend / outside)",
                                      elem_id="sf-style-b")
                blend = gr.Slider(0, 1, value=0, step=0.1, label="Blend: share of style B",
                                  elem_id="sf-blend")
                strength = gr.Slider(0, 1, value=1, step=0.05, label="Strength", elem_id="sf-strength")
                preserve = gr.Checkbox(label="Keep the photo's colours", elem_id="sf-preserve")
                # Cleared with the component's own ✕; while set, Stylize uses it instead of A/B.
                painting = gr.Image(label="Or any painting as the style (upload one)", type="filepath",
                                    sources=["upload", "clipboard"], image_mode=None, height=140,
                                    elem_id="sf-arbitrary")
                gr.Markdown("With a painting, Stylize (Image tab) uses it instead of the styles "
                            "above; strength sets how much of its style replaces the photo's "
                            "features. Whole image only.", elem_id="sf-arbitrary-info")
            with gr.Column(scale=2):
                with gr.Tabs():
                    with gr.Tab("Image", id="image"):
                        with gr.Row():
                            photo = gr.Image(label="Photo (upload, paste or drop)", type="filepath",
                                             sources=["upload", "clipboard"], image_mode=None,
                                             height=320, elem_id="sf-photo")
                            compare = gr.ImageSlider(label="Before / after", height=320, type="filepath",
                                                     elem_id="sf-compare", interactive=False)
                        gr.Examples([[str(p)] for p in sample_photos()], inputs=[photo],
                                    label="Sample photos")
                        with gr.Accordion("Region (paint a mask)", open=False, elem_id="sf-region"):
                            mode = gr.Radio(list(REGION_MODES), value=WHOLE, label="Apply to",
                                            elem_id="sf-mode")
                            editor = gr.ImageEditor(label="Brush over the part to stylize",
                                                    type="filepath", sources=[], height=360,
                                                    transforms=(), layers=False,
                                                    brush=gr.Brush(default_size=24, colors=["#ff3366"],
                                                                   color_mode="fixed"),
                                                    elem_id="sf-editor")
                        run = gr.Button("Stylize", variant="primary", elem_id="sf-run")
                        info = gr.Markdown(elem_id="sf-info")
                        download = gr.DownloadButton("Download full resolution", elem_id="sf-download")
                    with gr.Tab("Video", id="video"):
                        gr.Markdown(f"Up to {handlers.options.max_video_seconds:g} s; the sound is "
                                    "kept. Built-in styles only (a painting is used on the Image tab).")
                        video_in = gr.Video(label="Video", sources=["upload"], elem_id="sf-video-in")
                        video_run = gr.Button("Stylize video", variant="primary", elem_id="sf-video-run")
                        video_out = gr.Video(label="Stylized video", interactive=False,
                                             elem_id="sf-video-out")
                    with gr.Tab("Webcam", id="webcam"):
                        gr.Markdown("Live: frames are stylized at up to "
                                    f"{handlers.options.webcam_max_side} px; late frames are dropped. "
                                    "Built-in styles only.")
                        with gr.Row():
                            cam = gr.Image(sources=["webcam"], streaming=True, type="numpy",
                                           label="Camera", elem_id="sf-cam")
                            cam_out = gr.Image(label="Stylized", elem_id="sf-cam-out")
                    with gr.Tab("Train a style", id="train"):
                        _training_tab(handlers)

        gallery.select(_gallery_select(names), None, style, queue=False, api_visibility="undocumented")
        if not thumbnails.ready.is_set():   # drawn in the background: pages fill in as they come
            _refresh_until_ready(demo, gallery, thumbnails)
        photo.change(handlers.editor_background, [photo], [editor], preprocess=False, queue=False,
                     api_visibility="undocumented")
        run.click(handlers.stylize, [photo, style, style_b, blend, strength, preserve, mode, editor,
                                     painting],
                  [compare, download, info], api_name="stylize", preprocess=False,
                  concurrency_id=ENGINE, concurrency_limit=concurrency)
        video_run.click(handlers.video, [video_in, style, style_b, blend, strength, preserve],
                        [video_out], api_name="stylize_video", preprocess=False,
                        concurrency_id=ENGINE, concurrency_limit=concurrency)
        cam.stream(handlers.webcam, [cam, style, strength, preserve], [cam_out], api_name="webcam",
                   stream_every=0.1, time_limit=600, trigger_mode="always_last",
                   concurrency_limit=1, concurrency_id="webcam", show_progress="hidden")
    return demo


def _gallery_select(names):
    def select(evt: gr.SelectData):
        # The caption is the style's name; a gallery still being drawn may lack earlier styles.
        caption = evt.value.get("caption") if isinstance(evt.value, dict) else None
        return caption if caption in names else names[evt.index]
    return select


def _refresh_until_ready(demo: gr.Blocks, gallery: gr.Gallery, thumbnails: Thumbnails) -> None:
    """On page load and every 2 s: the thumbnails drawn so far; each page's timer stops once all are."""
    timer = gr.Timer(2.0)

    def refresh():
        return thumbnails.items(), gr.Timer(active=not thumbnails.ready.is_set())
    hidden = dict(queue=False, show_progress="hidden", api_visibility="undocumented")
    demo.load(refresh, None, [gallery, timer], **hidden)
    timer.tick(refresh, None, [gallery, timer], **hidden)


def _training_tab(handlers: Handlers) -> None:
    why = handlers.training_ready()
    if why:
        gr.Markdown(f"**{why}**", elem_id="sf-train-why")
        return
    gr.Markdown("Upload a painting; a new style network trains in the background. The preview "
                "shows the sample photos as the network learns.")
    with gr.Row():
        painting = gr.Image(label="Painting", type="filepath", image_mode=None, elem_id="sf-painting")
        with gr.Column():
            name = gr.Textbox(label="Name of the style", value="my_style")
            steps = gr.Slider(100, 20000, value=handlers.options.train_steps, step=100, label="Steps")
            start = gr.Button("Start training", variant="primary")
            cancel = gr.Button("Cancel")
    status = gr.Markdown()
    preview = gr.Image(label="Preview", interactive=False)
    weights = gr.File(label="Trained weights (.safetensors)")
    start.click(handlers.train_start, [painting, name, steps], [status, preview, weights],
                preprocess=False, concurrency_limit=1)
    cancel.click(handlers.train_cancel, None, [status, preview, weights], queue=False,
                 api_visibility="undocumented")
    gr.Timer(2.0).tick(handlers.train_poll, None, [status, preview, weights], queue=False,
                       show_progress="hidden", api_visibility="undocumented")
