"""The stylization engine: weights → model → runner, and images of any size through it.

`Stylizer` owns one loaded style (or blend) on one device/precision/backend. It takes float
tensors in 0–255, (N, 3, H, W), of any H×W (even 1×1): it pads to a multiple of 4 (and at least
`MIN_SIDE`) with reflection where the image is big enough and edge replication where it is not,
runs the network, crops back to exactly H×W, clamps, then applies strength and colour options.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..models.checkpoint import Checkpoint, build_model, load_checkpoint
from ..models.registry import default_style, load_style
from .backends import make_runner, resolve_backend, resolve_device, resolve_dtype
from .blending import apply_strength, blend_state_dicts, preserve_color
from .options import StylizeOptions

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
        parts = [(load_style(name), weight) for name, weight in options.blend]
        state = blend_state_dicts([(ck.state_dict, w) for ck, w in parts])
        names = ",".join(f"{name}:{weight:g}" for name, weight in options.blend)
        return Checkpoint(state, {"style": f"blend({names})"})
    if options.checkpoint:  # a path, never looked up among the built-in names
        return load_checkpoint(options.checkpoint)
    return load_style(options.style or default_style())


@dataclass
class Stylizer:
    options: StylizeOptions

    def __post_init__(self):
        self.device = resolve_device(self.options.device)
        self.dtype = resolve_dtype(self.options.precision, self.device)
        self.backend = resolve_backend(self.options.backend, self.device, self.dtype)
        self.checkpoint = load_weights(self.options)
        self.runner = make_runner(build_model(self.checkpoint), self.device, self.dtype, self.backend)

    @property
    def style_name(self) -> str:
        return self.checkpoint.metadata.get("style", "custom")

    def describe(self) -> str:
        return f"{self.style_name} on {self.device} ({self.dtype}, {self.backend})"

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
        self.dtype = torch.float32
        self.runner = make_runner(build_model(self.checkpoint), self.device, self.dtype, self.backend)

    def __call__(self, content: torch.Tensor) -> torch.Tensor:
        """content: float (N, 3, H, W) in 0–255 on any device → same shape, float32, on CPU."""
        return self.on_device(content).cpu()

    @torch.inference_mode()
    def on_device(self, content: torch.Tensor) -> torch.Tensor:
        """As `__call__`, but the result stays on the engine's device, so a caller (the media
        pipeline) can copy it out on its own stream while the next batch computes."""
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
        height, width = content.shape[-2:]
        content = content.to(self.device, torch.float32)
        padded = pad_for_network(content)
        finite = None
        if check_overflow:
            raw = self._run(padded)
        else:
            raw = self.runner(padded)
            finite = torch.isfinite(raw).all()   # a device flag: read late, never waited for here
        out = raw[..., :height, :width].clamp(0, 255)
        if self.options.preserve_color:
            out = preserve_color(content, out)
        return apply_strength(content, out, self.options.strength), finite
