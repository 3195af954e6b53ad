"""The pipeline's engine stage: a batch of decoded items → stylized uint8 pixels, on one device.

On CPU it stacks the items' uint8 (H, W, 3) arrays, calls the `Stylizer` and rounds back to
uint8 (the same rounding as `io.image.tensor_to_array`, so outputs equal the one-image path).
On CUDA decode workers stage pixels in pinned host memory (`stage`), and the engine works on
two streams of its own: a copy stream uploads a batch (or decodes its JPEGs with nvJPEG) and
later downloads the uint8 result into pinned memory, while the compute stream runs the network;
events order them, so the download of batch k overlaps the upload and compute of batch k+1. The
encode worker waits on the item's event (`host_pixels`) before reading. This module does not
read or write files, and batches only what the pipeline hands it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from .codecs import EncodedImage, JpegData, decode_jpegs, encode_jpegs


@dataclass
class DeviceResult:
    """Stylized pixels on their way to pinned host memory; `ready` fires when they are there."""
    host: torch.Tensor            # uint8 (H, W, 3), pinned
    ready: Any                    # torch.cuda.Event

    @property
    def shape(self) -> tuple:
        return tuple(self.host.shape)


def host_pixels(out: Any) -> np.ndarray:
    """The engine's result for one item as a uint8 (H, W, 3) array (waits for the copy)."""
    if isinstance(out, DeviceResult):
        out.ready.synchronize()
        return out.host.numpy()
    if isinstance(out, torch.Tensor):
        return out.cpu().numpy()
    return out


class EngineStage:
    """Callable on a list of pipeline items of one shape; sets each item's `out`."""

    def __init__(self, stylizer: Callable[[torch.Tensor], torch.Tensor], *,
                 device: torch.device | None = None, jpeg_quality: int = 95):
        self.stylizer = stylizer
        self.device = torch.device(device or getattr(stylizer, "device", "cpu"))
        self.cuda = self.device.type == "cuda"
        self.jpeg_quality = jpeg_quality
        if self.cuda:
            self.compute = torch.cuda.Stream(self.device)
            self.copy = torch.cuda.Stream(self.device)

    def stage(self, pixels: np.ndarray) -> Any:
        """Called by decode workers: pixels into pinned memory on CUDA, as they are on CPU."""
        if not self.cuda:
            return pixels
        pinned = torch.empty(pixels.shape, dtype=torch.uint8, pin_memory=True)
        pinned.numpy()[...] = pixels
        return pinned

    def __call__(self, batch: list) -> None:
        (self._run_cuda if self.cuda else self._run_cpu)(batch)

    def _network(self, content: torch.Tensor) -> torch.Tensor:
        on_device = getattr(self.stylizer, "on_device", None)
        out = on_device(content) if on_device is not None else self.stylizer(content)
        return out.to(self.device)

    def _run_cpu(self, batch: list) -> None:
        content = torch.from_numpy(np.stack([item.pixels for item in batch])).permute(0, 3, 1, 2)
        out = self.stylizer(content.float())
        pixels = out.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()
        for item, image in zip(batch, pixels):
            item.out = image

    def _run_cuda(self, batch: list) -> None:
        with torch.inference_mode():
            with torch.cuda.stream(self.copy):
                inputs = self._upload(batch)
                uploaded = torch.cuda.Event()
                uploaded.record()
            self.compute.wait_event(uploaded)
            with torch.cuda.stream(self.compute):
                for tensor in inputs:
                    tensor.record_stream(self.compute)
                content = torch.stack(inputs).permute(0, 3, 1, 2).float()
                out = self._network(content).round_().clamp_(0, 255).to(torch.uint8)
                gpu_encode = [i for i, item in enumerate(batch) if getattr(item.meta, "gpu_encode", False)]
                if gpu_encode:
                    for i, data in zip(gpu_encode, encode_jpegs(out[gpu_encode], self.jpeg_quality)):
                        batch[i].out = EncodedImage(data)
                hwc = out.permute(0, 2, 3, 1).contiguous()
                computed = torch.cuda.Event()
                computed.record()
            self.copy.wait_event(computed)
            with torch.cuda.stream(self.copy):
                hwc.record_stream(self.copy)
                host = torch.empty(hwc.shape, dtype=torch.uint8, pin_memory=True)
                host.copy_(hwc, non_blocking=True)
                ready = torch.cuda.Event()
                ready.record()
        for i, item in enumerate(batch):
            if item.out is None:
                item.out = DeviceResult(host[i], ready)

    def _upload(self, batch: list) -> list[torch.Tensor]:
        """Each item's pixels as uint8 (H, W, 3) on the device, issued on the current stream."""
        inputs: list[Any] = [None] * len(batch)
        jpegs = [i for i, item in enumerate(batch) if isinstance(item.pixels, JpegData)]
        if jpegs:
            for i, image in zip(jpegs, decode_jpegs([batch[i].pixels for i in jpegs], self.device)):
                inputs[i] = image
        for i, item in enumerate(batch):
            if inputs[i] is None:
                pixels = item.pixels if isinstance(item.pixels, torch.Tensor) else torch.from_numpy(item.pixels)
                inputs[i] = pixels.to(self.device, non_blocking=True)
        return inputs
