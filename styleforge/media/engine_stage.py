"""The pipeline's engine stage: a batch of decoded items → stylized uint8 pixels, on one device.

On CPU it stacks the items' uint8 (H, W, 3) arrays, calls the `Stylizer` and rounds back to
uint8 (the same rounding as `io.image.tensor_to_array`, so outputs equal the one-image path).
On CUDA decode workers stage pixels in pinned host memory (`stage`) or decode JPEGs with nvJPEG
onto the GPU themselves (`media.codecs`, on the stage's decode stream), and the engine thread
only issues work, never waits for the GPU: a copy stream uploads a batch and later downloads
the uint8 result into pinned memory, the compute stream runs the network, and events order
them, so the download of batch k overlaps the upload and compute of batch k+1. Encode workers
wait on their item's event (`host_pixels`, or nvJPEG's encode from the GPU). fp16's overflow
check is read one batch late (`settle`, called by the pipeline before it hands a batch to the
encoders), so the engine thread never stalls on it. With a `TorchTemporalBlender` (`--temporal`
on CUDA) each item's pair flows (`item.meta.flow`, computed ahead by the decode workers and
staged like the pixels) travel up with its frame and the blend runs on the compute stream right
after the network, in item order; with a `flow_torch.DeviceFlows` (`flows`) the pair flows are
computed there too, on the compute stream from the frame's content, and the workers do none.
Every CUDA call here holds the shared side of the capture lock (`engine.capture`): the workers'
staging and waits, and the engine thread's whole batch (its network's own capture gives the hold
up while it captures), so no capture on any thread races them.
This module does not read or write files, and batches only what the pipeline hands it.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from ..engine.capture import cuda_work
from ..engine.checks import non_finite_output, require_finite_output
from ..engine.memory import release_freed_memory
from .codecs import DeviceImage
from .yuv import YuvFrame, rgb_to_yuv420, yuv420_to_rgb


@dataclass
class DeviceResult:
    """Stylized pixels on their way to pinned host memory; `ready` fires when they are there."""
    host: torch.Tensor            # uint8 (H, W, 3), pinned
    ready: Any                    # torch.cuda.Event

    @property
    def shape(self) -> tuple:
        return tuple(self.host.shape)


def _readonly_tensor(pixels: np.ndarray) -> torch.Tensor:
    """A tensor over a decoded image's array without copying it: arrays from Pillow are read-only,
    which torch warns about; the engine only reads its input."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The given NumPy array is not writable")
        return torch.from_numpy(pixels)


def host_pixels(out: Any) -> np.ndarray:
    """The engine's result for one item as a uint8 (H, W, 3) array (waits for the copy)."""
    if isinstance(out, DeviceResult):
        with cuda_work():
            out.ready.synchronize()
        return out.host.numpy()
    if isinstance(out, torch.Tensor):
        return out.cpu().numpy()
    return out


class EngineStage:
    """Callable on a list of pipeline items of one shape; sets each item's `out`."""

    def __init__(self, stylizer: Callable[[torch.Tensor], torch.Tensor], *,
                 device: torch.device | None = None, temporal: Any = None):
        self.stylizer = stylizer
        self.device = torch.device(device or getattr(stylizer, "device", "cpu"))
        self.cuda = self.device.type == "cuda"
        if temporal is not None and not self.cuda:
            raise ValueError("the engine stage blends on CUDA only; CPU runs use media.temporal as a frame filter")
        self.temporal = temporal      # a TorchTemporalBlender on self.device, or None
        self.flows = None             # a flow_torch.DeviceFlows: the blend's pair flows made here, on the GPU
        if self.cuda:
            with cuda_work():
                self.compute = torch.cuda.Stream(self.device)
                self.copy = torch.cuda.Stream(self.device)
                self.decode = torch.cuda.Stream(self.device)   # nvJPEG decodes' allocations only

    def stage(self, pixels: np.ndarray) -> Any:
        """Called by decode workers: pixels into pinned memory on CUDA, as they are on CPU."""
        if not self.cuda:
            return pixels
        with cuda_work():   # a pinned allocation: never while a graph is captured
            pinned = torch.empty(pixels.shape, dtype=torch.from_numpy(np.empty(0, pixels.dtype)).dtype,
                                 pin_memory=True)
        pinned.numpy()[...] = pixels
        return pinned

    def __call__(self, batch: list) -> Callable[[], None] | None:
        """Stylize a batch; on CUDA returns `settle`, which the pipeline calls before the batch's
        encodes (one batch later, so the engine thread never waits for the GPU)."""
        if not self.cuda:
            self._run_cpu(batch)
            return None
        # The stylizer's resampling, the blend (cuDNN for the feather's one-channel blur, which
        # autotunes where a runner has the process-wide flag on), the colour conversion and the
        # pinned downloads are all CUDA work: none may run beside another thread's capture.
        with cuda_work():
            finite = self._run_cuda(batch)
        if finite is None:
            return None
        return lambda: self._settle(batch, finite)

    def _settle(self, batch: list, finite: tuple[torch.Tensor, Any]) -> None:
        flag, ready = finite
        with cuda_work():   # the wait, and on overflow the fp32 engine's build and the rerun
            ready.synchronize()
            if bool(flag):
                return
            if getattr(self.stylizer, "dtype", None) != torch.float16:
                raise non_finite_output(self._style_name())
            self.stylizer.fall_back_to_fp32()
            if self.temporal is not None:   # the history holds the overflowed frames: restart it
                self.temporal.reset()
            if self.flows is not None:
                self.flows.reset()
            for item in batch:
                item.out = None
            rerun = self._run_cuda(batch)
            if rerun is not None:   # fp32 now: a second non-finite output is the weights' fault
                self._settle(batch, rerun)

    def _style_name(self) -> str:
        return getattr(self.stylizer, "style_name", "the style")

    def _network(self, content: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        unchecked = getattr(self.stylizer, "on_device_unchecked", None)
        if unchecked is not None:
            out, finite = unchecked(content)
        else:
            on_device = getattr(self.stylizer, "on_device", None)
            out, finite = (on_device(content) if on_device is not None else self.stylizer(content)), None
        return out.to(self.device), finite

    @torch.inference_mode()
    def _run_cpu(self, batch: list) -> None:
        # Full-size copies are what bounds the image size a memory budget takes (`engine.memory`):
        # one image is passed as it was decoded (no stacked copy), as uint8 (the engine converts
        # what it needs, band by band where it can), and the result is rounded in place and
        # written once as uint8 (H, W, 3).
        if len(batch) == 1:
            content = _readonly_tensor(batch[0].pixels)[None]
        else:
            content = torch.from_numpy(np.stack([item.pixels for item in batch]))
        out = self.stylizer(content.permute(0, 3, 1, 2))
        del content
        require_finite_output(out, self._style_name())
        pixels = torch.empty((out.shape[0], *out.shape[2:], 3), dtype=torch.uint8)
        pixels.copy_(out.round_().clamp_(0, 255).permute(0, 2, 3, 1))
        del out
        release_freed_memory(pixels.numel() // 3)
        for item, image in zip(batch, pixels.numpy()):
            item.out = image

    def _run_cuda(self, batch: list) -> tuple[torch.Tensor, Any] | None:
        """Issue the batch's work on the stage's streams; → (pinned finite flag, its event) where
        the network reports one."""
        with torch.inference_mode():
            inputs, flows = self._upload(batch)
            with torch.cuda.stream(self.compute):
                for tensor in (*inputs, *(f for f in flows if f is not None)):
                    tensor.record_stream(self.compute)
                frames = [item.pixels for item in batch if isinstance(item.pixels, YuvFrame)]
                if frames and len(frames) != len(batch):
                    raise ValueError("a batch mixes YUV frames and RGB images")
                if frames:
                    content = torch.cat([yuv420_to_rgb(t[None], f.height, f.width, f.matrix, f.full_range, f.nv12)
                                         for t, f in zip(inputs, frames)])
                else:
                    content = torch.stack(inputs).float()          # (N, 3, H, W), contiguous
                out, finite = self._network(content)
                if self.temporal is not None:   # in item order: each blend reads the one before
                    if self.flows is not None:   # from the content, where it already is
                        flows = [self.flows(item.index, content[i]) for i, item in enumerate(batch)]
                    blended = [self.temporal(content[i], out[i], flows[i]) for i in range(len(batch))]
                    out = blended[0][None] if len(blended) == 1 else torch.stack(blended)   # one: no copy
                if frames:   # back to planes: (N, H·3/2, W), downloaded as they are
                    out = torch.cat([rgb_to_yuv420(out[i:i + 1], f.matrix, f.full_range)
                                     for i, f in enumerate(frames)])
                else:
                    out = out.round_().clamp_(0, 255).to(torch.uint8)
                gpu_encode = [i for i, item in enumerate(batch) if getattr(item.meta, "gpu_encode", False)]
                to_host = [i for i in range(len(batch)) if i not in gpu_encode]
                picked = out if len(to_host) == len(batch) else out[to_host]
                hwc = (picked if frames else picked.permute(0, 2, 3, 1).contiguous()) if to_host else None
                flag = None
                if finite is not None:
                    flag = torch.empty((), dtype=torch.bool, pin_memory=True)
                    flag.copy_(finite, non_blocking=True)
                computed = torch.cuda.Event()
                computed.record()
            for i in gpu_encode:
                batch[i].out = DeviceImage(out[i], computed)
            if hwc is not None:
                self.copy.wait_event(computed)
                with torch.cuda.stream(self.copy):
                    hwc.record_stream(self.copy)
                    pinned = torch.empty(hwc.shape, dtype=torch.uint8, pin_memory=True)
                    pinned.copy_(hwc, non_blocking=True)
                    ready = torch.cuda.Event()
                    ready.record()
                for k, i in enumerate(to_host):
                    batch[i].out = DeviceResult(pinned[k], ready)
        return (flag, computed) if flag is not None else None

    def _upload(self, batch: list) -> tuple[list, list]:
        """The items' pixels (and, blending, their pair flows) on the device, issued on the copy
        stream; the compute stream waits for them (and for nvJPEG's decodes)."""
        host = [i for i, item in enumerate(batch) if not isinstance(item.pixels, DeviceImage)]
        inputs: list[Any] = [item.pixels.tensor if i not in host else None for i, item in enumerate(batch)]
        flows: list[Any] = [None] * len(batch)
        pairs = [i for i, item in enumerate(batch)
                 if self.temporal is not None and getattr(item.meta, "flow", None) is not None]
        if host or pairs:
            with torch.cuda.stream(self.copy):
                for i in host:
                    pixels = batch[i].pixels
                    if isinstance(pixels, YuvFrame):   # planes as they are: converted on the GPU
                        inputs[i] = pixels.planes.to(self.device, non_blocking=True)
                        continue
                    pixels = pixels if isinstance(pixels, torch.Tensor) else torch.from_numpy(pixels)
                    inputs[i] = pixels.to(self.device, non_blocking=True).permute(2, 0, 1)
                for i in pairs:
                    flow = batch[i].meta.flow
                    flow = flow if isinstance(flow, torch.Tensor) else torch.from_numpy(flow)
                    flows[i] = flow.to(self.device, non_blocking=True)
                uploaded = torch.cuda.Event()
                uploaded.record()
            self.compute.wait_event(uploaded)
        for item in batch:
            if isinstance(item.pixels, DeviceImage):
                self.compute.wait_event(item.pixels.ready)
        return inputs, flows
