"""The twin of the sums hand-off between two fused layers (csrc/norm_sums/norm_sums.h, norm_sums.cuh).

A producer (conv9x9_norm, conv3x3_norm with `affine=False`) leaves fp64 per-(sample, channel) sums
Σx, Σx² of its rounded output in a norm state; the consumer (conv3x3_norm, conv3x3_residual_chain,
conv9x9_from_sums with `in_state`) forms that InstanceNorm's affine from them in its own prologue and
leaves the state zero. The CUDA kernels spread the sums over `NORM_SUM_COPIES` copies (fewer atomics
per address); the twins add to copy 0 and read the sum of all copies, so either side may be a kernel
or a twin. The affine is the kernels' `norm_affine_from_sums`: mean and variance in fp64, then
scale = weight / √(fp32(var) + eps), shift = bias − fp32(mean)·scale in fp32.
"""
from __future__ import annotations

import torch

NORM_STATE_HEADER_BYTES = 256                     # norm_state.h: the CTA counter before the fp64 sums
NORM_SUM_COPIES = 8                               # norm_state.h, kNormSumCopies


def norm_state_bytes(n: int, c: int) -> int:
    """Bytes of a norm state for batch n and c channels (norm_state.h): a CTA counter and fp64
    (copy, Σx | Σx², sample, channel) sums."""
    return NORM_STATE_HEADER_BYTES + NORM_SUM_COPIES * 2 * n * c * 8


def check_state(name: str, arg: str, state: torch.Tensor, x: torch.Tensor, n: int, c: int) -> None:
    """ValueError unless `state` can be a norm state for batch n and c channels on x's device."""
    need = norm_state_bytes(n, c)
    if (not isinstance(state, torch.Tensor) or state.dtype != torch.uint8 or state.device != x.device
            or not state.is_contiguous() or state.numel() < need):
        got = (f"{state.dtype} {tuple(state.shape)} on {state.device}" if isinstance(state, torch.Tensor)
               else type(state))
        raise ValueError(f"{name}: {arg} must be a contiguous uint8 tensor of at least norm_state_bytes({n}, {c}) = "
                         f"{need} bytes on {x.device} (styleforge.kernels.norm_state), got {got}")


def _sums(state: torch.Tensor, n: int, c: int) -> torch.Tensor:
    """The state's sums as a float64 (copies, 2, n, c) view (Σx, then Σx²)."""
    count = NORM_SUM_COPIES * 2 * n * c
    return state[NORM_STATE_HEADER_BYTES:NORM_STATE_HEADER_BYTES + 8 * count].view(torch.float64).view(
        NORM_SUM_COPIES, 2, n, c)


def add_sums(state: torch.Tensor, y: torch.Tensor) -> None:
    """Add y's (N, C, H, W) per-(sample, channel) Σx, Σx² (fp64, of y's values) to the state."""
    n, c = y.shape[:2]
    v = y.detach().double()
    sums = _sums(state, n, c)
    sums[0, 0] += v.sum(dim=(2, 3))
    sums[0, 1] += (v * v).sum(dim=(2, 3))


def take_affine(state: torch.Tensor, n: int, c: int, pixels: int, weight: torch.Tensor | None,
                bias: torch.Tensor | None, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(scale, shift), fp32 (n, c): InstanceNorm over `pixels` values per channel as one affine, from
    the state's sums; the state is left zero (its sums and the CTA counter before them)."""
    total = _sums(state, n, c).sum(dim=0)
    mean = total[0] / pixels
    var = (total[1] / pixels - mean * mean).clamp_min(0.0)
    scale = torch.rsqrt(var.float() + eps)
    if weight is not None:
        scale = weight.float() * scale
    shift = -mean.float() * scale
    if bias is not None:
        shift = bias.float() + shift
    state[:NORM_STATE_HEADER_BYTES + 8 * NORM_SUM_COPIES * 2 * n * c].zero_()
    return scale, shift
