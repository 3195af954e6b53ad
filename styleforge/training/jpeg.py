"""A differentiable stand-in for the JPEG round trip the CLI's files go through (4:4:4, quality q).

What it models: JFIF RGB → YCbCr planes rounded to 8 bits, 8×8 block DCT (orthonormal, blocks aligned to the top-left
corner as libjpeg's are), each coefficient rounded to a multiple of the IJG quantisation table
scaled to `quality` (libjpeg's rule, so q95 = the table × 0.1), inverse DCT to 8-bit YCbCr
planes, back to RGB, clamped to 0–255. At q95 the two 8-bit roundings matter as much as the
quantisation (steps of 1–3 at low frequencies). Not modelled: chroma subsampling (the CLI writes
4:4:4), libjpeg's integer DCT, the final rounding to uint8. The rounding passes
the gradient straight through (Bengio et al. 2013's estimator), so the network is trained on
what survives the quantisation while every coefficient still receives a gradient; Shin & Song
2017 ("JPEG-resistant adversarial images") use a cubic rounding instead, whose gradient vanishes
near every multiple, i.e. exactly where sub-step grain sits.

Why: the style loss rewards a faint grain (amplitudes under q95's step in the high-frequency
coefficients) that every JPEG of the output removes (docs/training.md "Round 7: JPEG"); the
style term computed on this proxy of the output (`TrainConfig.jpeg_style`) prices that in.
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

# ITU-T T.81 Annex K tables (the IJG's, which Pillow and every libjpeg use), row-major 8×8.
LUMA_TABLE = (16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
              14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
              18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
              49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99)
CHROMA_TABLE = (17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99,
                24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
                *(99,) * 32)
BLOCK = 8


def quant_tables(quality: int) -> torch.Tensor:
    """(3, 8, 8) steps for Y, Cb, Cr at IJG `quality` 1–100 (libjpeg's jpeg_quality_scaling)."""
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be 1–100, got {quality}")
    scale = 5000 // quality if quality < 50 else 200 - 2 * quality
    def table(base):
        return [min(255, max(1, (b * scale + 50) // 100)) for b in base]
    luma, chroma = table(LUMA_TABLE), table(CHROMA_TABLE)
    return torch.tensor([luma, chroma, chroma], dtype=torch.float32).view(3, BLOCK, BLOCK)


@functools.lru_cache(maxsize=4)
def dct_matrix(device: torch.device) -> torch.Tensor:
    """(8, 8) orthonormal DCT-II: row u is basis u, so D @ block @ D.T gives JPEG's coefficients."""
    n = torch.arange(BLOCK, dtype=torch.float64)
    d = torch.cos((2 * n[None, :] + 1) * n[:, None] * math.pi / (2 * BLOCK)) * math.sqrt(2 / BLOCK)
    d[0] /= math.sqrt(2)
    return d.float().to(device)


# JFIF (ITU-T T.871) full-range YCbCr, in 0–255 units with chroma centred on 128.
TO_YCBCR = torch.tensor([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]])


def block_dct(planes: torch.Tensor) -> torch.Tensor:
    """(B, C, H, W), H and W multiples of 8 → (B, C, H/8, W/8, 8, 8) coefficients per block."""
    b, c, h, w = planes.shape
    blocks = planes.reshape(b, c, h // BLOCK, BLOCK, w // BLOCK, BLOCK).transpose(3, 4)
    d = dct_matrix(planes.device)
    return d @ blocks @ d.T


def block_idct(coeffs: torch.Tensor) -> torch.Tensor:
    b, c, hb, wb = coeffs.shape[:4]
    d = dct_matrix(coeffs.device)
    return (d.T @ coeffs @ d).transpose(3, 4).reshape(b, c, hb * BLOCK, wb * BLOCK)


def straight_round(x: torch.Tensor) -> torch.Tensor:
    """round(x) forward, identity backward."""
    return x + (torch.round(x) - x).detach()


def jpeg_proxy(image: torch.Tensor, quality: int = 95) -> torch.Tensor:
    """(B, 3, H, W) RGB 0–255, any H and W → its JPEG round trip at `quality`, 4:4:4, fp32.

    Edges that are not a multiple of 8 are padded by replication, as libjpeg pads a partial block.
    Runs in fp32 with autocast off: in bf16 the DCT's error would exceed q95's steps of 1–3."""
    with torch.autocast(image.device.type, enabled=False):
        return _round_trip(image.float(), quality)


def _round_trip(x: torch.Tensor, quality: int) -> torch.Tensor:
    h, w = x.shape[-2:]
    x = F.pad(x, (0, -w % BLOCK, 0, -h % BLOCK), mode="replicate")
    to_ycc = TO_YCBCR.to(x.device)
    offset = torch.tensor([0.0, 128.0, 128.0], device=x.device).view(1, 3, 1, 1)
    ycc = straight_round(torch.einsum("ij,bjhw->bihw", to_ycc, x) + offset).clamp(0, 255)
    steps = quant_tables(quality).to(x.device).view(1, 3, 1, 1, BLOCK, BLOCK)
    kept = straight_round(block_dct(ycc - 128.0) / steps) * steps     # level shift, as T.81
    back = straight_round(block_idct(kept) + 128.0).clamp(0, 255) - offset
    rgb = torch.einsum("ij,bjhw->bihw", torch.linalg.inv(to_ycc), back)
    return rgb[..., :h, :w].clamp(0, 255)
