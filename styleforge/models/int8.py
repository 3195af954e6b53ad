"""Int8 storage of weights: symmetric, one fp16 scale per output channel.

A weight of ≥ 2 dimensions (conv kernels, matrices) is stored as int8 `q` with `scale = amax/127`
per output channel, under `<key>` and `<key>.scale`; the rest (biases, norm affines) stay as
they are. Loading multiplies back (`dequantize_int8`) and computes in fp32 as before, so every
backend runs an int8 file unchanged: only the file shrinks (about half of fp16). Used by the
built-in styles (`models.checkpoint`) and the arbitrary model (`models.arbitrary.weights`); the
error each style's file carries is in its metadata (`int8_psnr_db`).
"""
from __future__ import annotations

import torch

SCALE_SUFFIX = ".scale"
INT8_FORMAT = "int8-per-output-channel"


def quantize_int8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-channel int8: (q int8, scale fp16 of shape (C_out,))."""
    w = w.detach().float()
    amax = w.abs().reshape(w.shape[0], -1).amax(1)
    scale = (amax / 127).clamp_min(1e-12).half()
    shape = (-1,) + (1,) * (w.dim() - 1)
    q = (w / scale.float().view(shape)).round().clamp(-127, 127).to(torch.int8)
    return q, scale


def dequantize_int8(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.float() * scale.float().view((-1,) + (1,) * (q.dim() - 1))


def quantize_state(state: dict[str, torch.Tensor], dtype: torch.dtype = torch.float16) -> dict[str, torch.Tensor]:
    """A state dict → the tensors to store: ≥ 2-D weights as int8 + scale, the rest in `dtype`."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if value.dim() >= 2:
            out[key], out[key + SCALE_SUFFIX] = quantize_int8(value)
        else:
            out[key] = value.detach().to("cpu", dtype).contiguous()
    return out
