"""Mixing: weight-space style blends, content/style strength, and colour preservation.

All image maths here works on float tensors in 0–255, shape (N, 3, H, W).
"""
from __future__ import annotations

import torch

# ITU-R BT.601 full-range RGB ↔ YCbCr (the JPEG convention): preserve-colour keeps the
# stylized luminance and the photo's chroma (Gatys et al. 2016, "luminance-only transfer").
_RGB_TO_YCBCR = torch.tensor([[0.299, 0.587, 0.114],
                              [-0.168736, -0.331264, 0.5],
                              [0.5, -0.418688, -0.081312]])
_YCBCR_TO_RGB = torch.linalg.inv(_RGB_TO_YCBCR)


def blend_state_dicts(weighted: list[tuple[dict[str, torch.Tensor], float]]) -> dict[str, torch.Tensor]:
    """Σ wᵢ·θᵢ with weights normalised to sum to 1 (all styles share one architecture)."""
    total = sum(w for _, w in weighted)
    if total <= 0:
        raise ValueError("blend weights must sum to a positive number")
    keys = weighted[0][0].keys()
    return {k: sum(sd[k].float() * (w / total) for sd, w in weighted) for k in keys}


def apply_strength(content: torch.Tensor, stylized: torch.Tensor, strength: float) -> torch.Tensor:
    if strength >= 1.0:
        return stylized
    if strength <= 0.0:
        return content
    return torch.lerp(content, stylized, strength)


def _apply_matrix(x: torch.Tensor, matrix: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    return torch.einsum("ij,njhw->nihw", matrix.to(x), x) + offset.to(x).view(1, 3, 1, 1)


def preserve_color(content: torch.Tensor, stylized: torch.Tensor) -> torch.Tensor:
    """Stylized luminance with the content's chroma, back in RGB, clamped to 0–255."""
    chroma_offset = torch.tensor([0.0, 128.0, 128.0])
    ycc_content = _apply_matrix(content, _RGB_TO_YCBCR, chroma_offset)
    ycc_stylized = _apply_matrix(stylized, _RGB_TO_YCBCR, chroma_offset)
    mixed = torch.cat([ycc_stylized[:, :1], ycc_content[:, 1:]], dim=1) - chroma_offset.to(content).view(1, 3, 1, 1)
    return _apply_matrix(mixed, _YCBCR_TO_RGB, torch.zeros(3)).clamp(0, 255)
