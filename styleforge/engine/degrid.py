"""Remove a lattice locked to the pixel grid (2- and 4-px periods) from a stylized image.

A decoder that upsamples by nearest ×2 can stamp the same small pattern into every 4×4 block
(docs/arbitrary.md, "The 4-px grid"). Such a pattern is periodic with period 4 in x and y and
has a fixed phase; natural detail is not. The filter estimates it and subtracts it:

    h = x − L(x)          L: separable [1, 2, 2, 2, 1]/8, zero response at periods 2 and 4 and
                          exact on linear ramps, so h holds the lattice and the image's detail
    P = mean of h over the same phase (x mod 4, y mod 4) in a window of `window` × `window`
        blocks around each block, minus its mean over the 16 phases
    out = x − P

Detail that is not phase-locked averages out of P (it changes sign from block to block); a
lattice whose amplitude drifts slowly is followed. Costs a few pooling passes; works on any
size (the borders reflect). A repair for weights that carry a lattice, not a cure: the training
penalty (`training/grid.py`) is.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

PERIOD = 4
WINDOW = 5          # blocks: the lattice is estimated over 20 × 20 px


_TAPS: dict[tuple, torch.Tensor] = {}


def _taps(like: torch.Tensor) -> torch.Tensor:
    """[1, 2, 2, 2, 1]/8 on like's device, made once per device and dtype (the arbitrary engine
    runs degrid twice a frame in a CUDA graph, where making them would be 7 launches each time).
    Made on the device by arithmetic, never copied from the host: a host-to-device copy of a
    pageable tensor is not allowed inside a capture (`k[0] = v` on a CUDA tensor is such a copy),
    and outside inference mode, so autograd may read them too."""
    key = (like.device, like.dtype)
    if key not in _TAPS:
        with torch.inference_mode(False):
            inner = (torch.arange(5, device=like.device) - 2).abs() < 2
            _TAPS[key] = inner.to(like.dtype) * (1.0 / 8) + 1.0 / 8
    return _TAPS[key]


def _lowpass(x: torch.Tensor) -> torch.Tensor:
    c = x.shape[1]
    k = _taps(x)
    x = F.conv2d(F.pad(x, (2, 2, 0, 0), mode="reflect"), k.view(1, 1, 1, 5).expand(c, 1, 1, 5), groups=c)
    return F.conv2d(F.pad(x, (0, 0, 2, 2), mode="reflect"), k.view(1, 1, 5, 1).expand(c, 1, 5, 1), groups=c)


def degrid(image: torch.Tensor, window: int = WINDOW) -> torch.Tensor:
    """(N, C, H, W) float → the same with its 4-px-periodic, phase-locked component removed
    (float32; float64 stays float64, the tests' reference)."""
    n, c, h, w = image.shape
    x = image if image.dtype == torch.float64 else image.float()
    ph, pw = (-h) % PERIOD, (-w) % PERIOD
    if min(h, w) < 8:
        return x
    detail = x - _lowpass(x)
    if ph or pw:
        detail = F.pad(detail, (0, pw, 0, ph), mode="reflect")
    blocks = F.pixel_unshuffle(detail, PERIOD)                      # (N, C·16, H/4, W/4)
    pad = window // 2
    mode = "reflect" if min(blocks.shape[-2:]) > pad else "replicate"
    local = F.avg_pool2d(F.pad(blocks, (pad,) * 4, mode=mode), window, stride=1)
    local = local.view(n, c, PERIOD * PERIOD, *local.shape[-2:])
    local = local - local.mean(2, keepdim=True)
    pattern = F.pixel_shuffle(local.view(n, c * PERIOD * PERIOD, *local.shape[-2:]), PERIOD)
    return x - pattern[..., :h, :w]
