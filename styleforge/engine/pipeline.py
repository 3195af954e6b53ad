"""The stylization engine: weights → model → runner, and images of any size through it.

`Stylizer` owns one loaded style (or blend) on one device/precision/backend. It takes float
tensors in 0–255, (N, 3, H, W), of any H×W (even 1×1): it pads to a multiple of 4 (and at least
`MIN_SIDE`) with reflection where the image is big enough and edge replication where it is not,
runs the network, crops back to exactly H×W, clamps, then applies strength and colour options.
Before any work it picks how to run within the memory budget (`engine.memory`: whole frame,
exact tiling or fast tiling, or a `MemoryBudgetError` saying what to do), and with a stroke
scale above 1 it runs the network on a downscaled copy and restores detail (`engine.stroke`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..models.checkpoint import Checkpoint, build_model, load_checkpoint
from ..models.registry import default_style, load_style
from . import cuda_warmup
from .backends import backend_for_width, make_runner, resolve_device, resolve_engine
from .blending import apply_strength, blend_state_dicts, preserve_color
from .memory import (
    GPU_IO_BYTES_PER_PIXEL,
    IO_BYTES_PER_PIXEL,
    PRESERVE_COLOR_BYTES_PER_PIXEL,
    STRENGTH_BYTES_PER_PIXEL,
    Execution,
    MemoryBudgetError,
    choose_execution,
    default_gpu_budget,
    default_ram_budget,
    release_freed_memory,
    scratch_free,
)
from .options import StylizeOptions
from .stroke import downscale, internal_size, upscale_styled

MULTIPLE = 4      # two stride-2 convolutions, two ×2 upsamples
MIN_SIDE = 16     # the 9×9 reflection pad needs ≥ 5 px, the 1/4-scale 3×3 pads need ≥ 2 px


def padded_size(height: int, width: int) -> tuple[int, int]:
    def up(v: int) -> int:
        return max(MIN_SIDE, -(-v // MULTIPLE) * MULTIPLE)
    return up(height), up(width)


def pad_for_network(x: torch.Tensor) -> torch.Tensor:
    height, width = x.shape[-2:]
    target_h, target_w = padded_size(height, width)
    pad_h, pad_w = target_h - height, target_w - width
    if pad_h == 0 and pad_w == 0:
        return x
    # Reflection needs the pad smaller than the side; tiny images fall back to replication.
    mode = "reflect" if pad_h < height and pad_w < width else "replicate"
    return F.pad(x, (0, pad_w, 0, pad_h), mode=mode)


def load_weights(options: StylizeOptions) -> Checkpoint:
    if options.blend:
        parts = [(load_style(name, model=options.model), weight) for name, weight in options.blend]
        state = blend_state_dicts([(ck.state_dict, w) for ck, w in parts])
        names = ",".join(f"{name}:{weight:g}" for name, weight in options.blend)
        return Checkpoint(state, {"style": f"blend({names})"})
    if options.checkpoint:  # a path, never looked up among the built-in names
        return load_checkpoint(options.checkpoint)
    return load_style(options.style or default_style(), model=options.model)


@dataclass
class Stylizer:
    options: StylizeOptions

    def __post_init__(self):
        # The CUDA driver and context start on a thread (`cuda_warmup`) while the weights load and
        # the model is built on the CPU: those come before the first CUDA call (resolve_device).
        cuda_warmup.start(self.options.device)
        self.checkpoint = load_weights(self.options)
        model = build_model(self.checkpoint)
        self.device = resolve_device(self.options.device)
        self.backend, self.dtype, self.precision = resolve_engine(
            self.options.backend, self.options.precision, self.device)
        self.backend = backend_for_width(self.backend, self.options.backend, model.width)
        self.runner = make_runner(model, self.device, self.dtype, self.backend, self.precision)
        self._tiling_model = None           # built on first tiled use
        self.last_execution: Execution | None = None
        # Shapes that already ran whole-frame: their memory is now held by the runner (graphs,
        # cached blocks), so a fresh estimate against what is free would wrongly say "tile".
        self._ran_whole: dict[tuple[int, int, int], Execution] = {}
        self._io_fits: dict[int, bool] = {}   # pixels → full-size resampling fits on the device

    @property
    def style_name(self) -> str:
        return self.checkpoint.metadata.get("style", "custom")

    def describe(self) -> str:
        # OpenVINO INT8 may have fallen back, per style, to a partly or wholly float form (style_int8)
        form = getattr(self.runner, "form", self.precision)
        precision = self.precision if form == self.precision else f"{self.precision} as {form}"
        return f"{self.style_name} on {self.device} ({precision}, {self.backend})"

    def _run(self, padded: torch.Tensor) -> torch.Tensor:
        out = self.runner(padded)
        if self.dtype == torch.float16 and not bool(torch.isfinite(out).all()):
            self.fall_back_to_fp32()
            out = self.runner(padded)
        return out

    def fall_back_to_fp32(self) -> None:
        """fp16 tops out at 65504; a checkpoint with unusually large activations can reach it.
        Switch this Stylizer to fp32 for good rather than return garbage."""
        warnings.warn(f"{self.style_name}: fp16 overflowed; running in fp32 from now on", stacklevel=3)
        self.dtype, self.precision = torch.float32, str(torch.float32)
        self.runner = make_runner(build_model(self.checkpoint), self.device, self.dtype, self.backend)

    def execution_for(self, height: int, width: int, batch: int = 1) -> Execution:
        """How an image of this size would run here (no work done); raises MemoryBudgetError
        (a RuntimeError whose message says how to proceed, with a --max-side that it has checked
        fits) when it cannot within the budget."""
        try:
            return self._execution(height, width, batch)
        except MemoryBudgetError as exc:
            raise exc.refined(width, height, self._largest_side(height, width, batch)) from None

    def _largest_side(self, height: int, width: int, batch: int) -> int | None:
        """The largest --max-side (a multiple of 16 where it can be) at which this image runs here."""
        from ..io.image import fitted_size
        fits, too_big = 0, max(height, width)
        while too_big - fits > 1:   # bisection: the estimate only grows with the side
            side = (fits + too_big) // 2
            w, h = fitted_size(width, height, side)
            try:
                self._execution(h, w, batch)
                fits = side
            except MemoryBudgetError:
                too_big = side
        return (fits // 16 * 16 or fits) or None

    def _execution(self, height: int, width: int, batch: int) -> Execution:
        inner_h, inner_w = internal_size(height, width, self.options.stroke_scale)
        padded_h, padded_w = padded_size(inner_h, inner_w)
        if (height, width, batch) in self._ran_whole:
            return self._ran_whole[(height, width, batch)]
        on_gpu = self.device.type == "cuda"
        gpu = (self.options.max_gpu_memory or default_gpu_budget(self.device)) if on_gpu else None
        return choose_execution(
            padded_h, padded_w * batch, self.device, self.dtype, tiling=self.options.tiling,
            ram_budget=self.options.max_memory or default_ram_budget(), gpu_budget=gpu,
            scratch_bytes=scratch_free(self.options.scratch_dir), io_pixels=height * width * batch,
            io_bytes_per_pixel=self._io_bytes_per_pixel())

    def _io_bytes_per_pixel(self) -> int:
        extra = STRENGTH_BYTES_PER_PIXEL if self.options.strength < 1.0 else 0
        if self.options.preserve_color:
            extra += PRESERVE_COLOR_BYTES_PER_PIXEL
        return IO_BYTES_PER_PIXEL + extra

    def _full_size_fits(self, pixels: int) -> bool:
        """Whether the stroke-scale up/downsampling may run on the device at full size."""
        if self.device.type != "cuda":
            return True
        if pixels not in self._io_fits:   # asked once per size: the free-memory query costs a driver call
            budget = self.options.max_gpu_memory or default_gpu_budget(self.device)
            self._io_fits[pixels] = GPU_IO_BYTES_PER_PIXEL * pixels <= budget // 2
        return self._io_fits[pixels]

    def check_size(self, width: int, height: int) -> Execution:
        """`execution_for` in (width, height) order, for callers holding only an image header."""
        return self.execution_for(height, width)

    def _network(self, content: torch.Tensor, execution: Execution,
                 check_overflow: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(the network's output for float (N, 3, h, w), cropped and clamped, float32; a device
        flag saying it stayed finite, where not checked here)."""
        height, width = content.shape[-2:]
        if execution.mode == "whole":
            padded = pad_for_network(content.to(self.device, torch.float32))
            if check_overflow:
                return self._run(padded)[..., :height, :width].clamp(0, 255), None
            raw = self.runner(padded)
            finite = torch.isfinite(raw).all()   # a device flag: read late, never waited for here
            return raw[..., :height, :width].clamp(0, 255), finite
        if self._tiling_model is None:
            self._tiling_model = build_model(self.checkpoint)
        if execution.mode != "fast":
            from .tiling import TiledRunner
            runner = TiledRunner(self._tiling_model, self.device, self.dtype, stores=execution.stores,
                                 band_bytes=execution.band_bytes, scratch=self.options.scratch_dir)
            # uint8 content stays uint8: the exact runner converts each band as it reads it, so
            # the full-size float copy (12 B/px) is never made.
            return runner(pad_for_network(content))[..., :height, :width].clamp_(0, 255), None
        from .thumbnail import ThumbnailTiledRunner
        runner = ThumbnailTiledRunner(self._tiling_model, self.device, self.dtype, tile=execution.tile)
        return runner(pad_for_network(content.float()))[..., :height, :width].clamp_(0, 255), None

    def __call__(self, content: torch.Tensor) -> torch.Tensor:
        """content: float or uint8 (N, 3, H, W) in 0–255 on any device → same shape, float32, on CPU.

        Raises MemoryBudgetError before any work when the image cannot run within the budget.
        """
        return self.on_device(content).cpu()

    @torch.inference_mode()
    def on_device(self, content: torch.Tensor) -> torch.Tensor:
        """As `__call__`, but the result stays on the engine's device (on the CPU for an image
        too large for it), so a caller (the media pipeline) can copy it out on its own stream."""
        out, _ = self._forward(content, check_overflow=True)
        return out

    @torch.inference_mode()
    def on_device_unchecked(self, content: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """As `on_device`, without waiting for the GPU: → (result, finite), where `finite` is a
        device bool that says whether the output stayed finite. A streaming caller reads it a batch
        later and, where False, calls `fall_back_to_fp32` and runs the batch again (fp16), or fails
        the batch (any other precision: the weights are damaged)."""
        return self._forward(content, check_overflow=False)

    def _forward(self, content: torch.Tensor, check_overflow: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        if content.dim() != 4 or content.shape[1] != 3:
            raise ValueError(f"expected (N, 3, H, W) RGB, got shape {tuple(content.shape)}")
        batch, _, height, width = content.shape
        execution = self.last_execution = self.execution_for(height, width, batch)
        inner = internal_size(height, width, self.options.stroke_scale)
        if execution.mode == "whole" and (inner == (height, width) or self._full_size_fits(batch * height * width)):
            content = content.to(self.device)   # its dtype as given: each use converts what it reads
        if inner != (height, width):
            small = downscale(content, inner)
            styled, finite = self._network(small, execution, check_overflow)
            if self.device.type == "cpu":   # the network's freed temporaries, before the full-size output
                release_freed_memory(batch * height * width)
            out = upscale_styled(content, small, styled)
        else:
            out, finite = self._network(content, execution, check_overflow)
        if execution.mode == "whole":
            self._ran_whole[(height, width, batch)] = execution
        if not self.options.preserve_color and self.options.strength >= 1.0:
            return out, finite
        content = content.to(out.device, torch.float32)
        if self.options.preserve_color:
            out = preserve_color(content, out)
        return apply_strength(content, out, self.options.strength), finite
