"""Exact separable Gaussian blurs for the GPU blend, without PyTorch's depthwise convolution.

What it is: G * x for x (C, H, W) float32 with a symmetric 1-D kernel `taps` (K = 2r + 1,
cv2.getGaussianKernel's) and reflect-101 borders (cv2's default), the same sums as a 1×K then
K×1 depthwise convolution (`conv_blur`, the reference form, kept for planes too small to block)
up to float rounding. Not here: which σ a blend uses or on which pyramid level (temporal_torch).

Why: on CUDA a float32 depthwise `conv2d` takes PyTorch's own generic kernel (cuDNN takes
contiguous depthwise convolutions only in half precision), one thread per output looping over the taps, and a
one-channel `conv2d` goes to cuDNN's implicit GEMM; together they were the GPU blend's costliest
ops. `gemm_blur` writes each pass as ONE batched matrix product instead: along a row, each block
of B outputs is its (B + 2r)-wide window of the padded row times a (B + 2r, B) band matrix (the
taps on its diagonals), the same matrix for every block, and the windows of all blocks are one
strided view of the padded plane (overlapping, no copy). The row pass runs over every row of
every channel at once; the column pass needs one stride from block to block across channels,
so each channel's padded height is a whole number of blocks (the pad's bottom reaches down to
it; those rows' outputs are computed and never shown). B + 2r multiply-adds per output instead
of K, on the library's tuned GEMM. One pad, two GEMMs: the convolution's launch count.

`SeparableBlur` runs a fixed kernel (the feather's 5 taps included) as the GEMMs on full-size
planes and as the convolution on planes under SMALL_PLANE pixels, where the GEMMs' fixed cost
outweighs the depthwise kernel's per-tap loop (docs/temporal.md: the blur micro-bench on the
device).

Precision: float32 GEMMs follow PyTorch's matmul precision, exact float32 by default (the
package never turns on TF32 matmuls at inference; a caller who does gets ~1e-3 relative error
here, as in every other float32 matmul).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

BLOCK = 64   # outputs per GEMM block: B + 2r MACs an output against K = 2r + 1
SMALL_PLANE = 1 << 16   # H·W below which `SeparableBlur` keeps the convolution (a pyramid level's plane)


def conv_blur(image: torch.Tensor, taps: torch.Tensor) -> torch.Tensor:
    """(C, H, W) blurred by the separable kernel `taps` (K,), reflect-101 borders: a 1×K then
    K×1 depthwise convolution of the padded plane (the form `gemm_blur` replaces)."""
    channels, radius = image.shape[0], taps.numel() // 2
    taps = taps if taps.dtype == image.dtype else taps.to(image.dtype)   # the float64 reference's
    x = F.pad(image[None], (radius, radius, radius, radius), mode="reflect")
    x = F.conv2d(x, taps.view(1, 1, 1, -1).expand(channels, 1, 1, -1), groups=channels)
    return F.conv2d(x, taps.view(1, 1, -1, 1).expand(channels, 1, -1, 1), groups=channels)[0]


def _blocks(size: int, radius: int, block: int) -> tuple[int, int]:
    """(blocks covering `size` outputs, padded length a whole number of blocks ≥ blocks·B + 2r)."""
    count = -(-size // block)
    return count, (count + -(-2 * radius // block)) * block


def fits(shape, radius: int, block: int = BLOCK) -> bool:
    """Whether `gemm_blur` can pad a (…, H, W) plane: reflect padding reaches at most H − 1 / W − 1."""
    height, width = shape[-2:]
    _, padded = _blocks(height, radius, block)
    count = -(-width // block)
    return padded - height - radius < height and radius + count * block - width < width and radius < min(height, width)


def band_matrix(taps, block: int = BLOCK) -> torch.Tensor:
    """(B + 2r, B) on the CPU from the taps (K,) (a sequence or a CPU tensor): column j holds
    them at rows j … j + 2r, so a (…, B + 2r) window of a padded row times it gives the row's B
    blurred outputs. Made once per blur and uploaded (reading taps back per call would sync)."""
    values = torch.as_tensor(taps, dtype=torch.float32).flatten()
    radius = values.numel() // 2
    matrix = torch.zeros(block + 2 * radius, block, dtype=torch.float32)
    for j in range(block):
        matrix[j:j + 2 * radius + 1, j] = values
    return matrix


def gemm_blur(image: torch.Tensor, taps: torch.Tensor, band: torch.Tensor) -> torch.Tensor:
    """`conv_blur(image, taps)` (up to float rounding) from two batched GEMMs, `band` being
    `band_matrix(taps)` on the image's device: (C, H, W) float32 → (C, H, W), a view of a
    slightly larger buffer (its rows and channels lie further apart). Planes too small for the
    blocks' padding and other dtypes take `conv_blur`."""
    radius = taps.numel() // 2
    block = band.shape[1]
    if image.dtype != torch.float32 or not fits(image.shape, radius, block):
        return conv_blur(image, taps)
    channels, height, width = image.shape
    columns, _ = _blocks(width, radius, block)
    rows, padded = _blocks(height, radius, block)
    span, wide = block + 2 * radius, columns * block            # a window; the row pass's output width
    # (C, padded, wide + 2r): reflect-101 by r on the left and top; the right and bottom reach
    # on to whole blocks (their outputs are computed and dropped).
    x = F.pad(image[None], (radius, radius + wide - width, radius, padded - height - radius), mode="reflect")[0]
    lines = channels * padded
    # Row pass: batch = block of columns; each (lines, span) window is every row's, at stride B.
    across = torch.empty((lines, wide), device=image.device)
    torch.bmm(x.as_strided((columns, lines, span), (block, wide + 2 * radius, 1)),
              band.expand(columns, span, block),
              out=across.as_strided((columns, lines, block), (block, wide, 1)))
    # Column pass: batch = block of rows, channels one after another (padded rows apiece); the
    # last channel's blocks past its outputs are left out, so no window reads past the buffer.
    count = (channels - 1) * (padded // block) + rows
    out = torch.empty((lines, wide), device=image.device)
    torch.bmm(band.t().expand(count, block, span),
              across.as_strided((count, span, wide), (block * wide, wide, 1)),
              out=out[:count * block].view(count, block, wide))
    return out.view(channels, padded, wide)[:, :height, :width]


class SeparableBlur:
    """A blur by fixed taps on one device: the GEMMs, or the convolution for planes under
    SMALL_PLANE pixels. Everything per kernel is made here, once, from the taps on the CPU; a
    call only issues work (no read-back)."""

    def __init__(self, taps, device, block: int = BLOCK):
        cpu = torch.as_tensor(taps, dtype=torch.float32).flatten()
        self.radius = cpu.numel() // 2
        self.taps = cpu.to(device)
        self.band = band_matrix(cpu, block).to(device)

    def gemm(self, shape) -> bool:
        """Whether a (…, H, W) plane takes the GEMMs (else the convolution)."""
        return shape[-2] * shape[-1] >= SMALL_PLANE and fits(shape, self.radius, self.band.shape[1])

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        if self.gemm(image.shape):
            return gemm_blur(image, self.taps, self.band)
        return conv_blur(image, self.taps)
