"""YUV 4:2:0 ↔ RGB on the engine's device, so video frames cross PCIe and the CPU as planes.

A decoded H.264/H.265 frame is yuv420p: converting it to RGB on the CPU (swscale) and back
before the encoder costs a core's time per frame each way, which takes the cores the encoder
needs. Here the planes go to the GPU as they are (1.5 bytes a pixel, not 3) and
the conversion runs there: `yuv420_to_rgb` (bilinear chroma upsampling, BT.601 or BT.709
matrix, limited or full range, the same arithmetic as swscale's to a grey level or so) and
`rgb_to_yuv420` (2×2 chroma averaging). The layout is PyAV's `VideoFrame.to_ndarray()` of a
yuv420p frame: (H·3/2, W) uint8, the Y plane, then U, then V, each in raster order; or NV12's
(what NVIDIA's decoder hands over): the Y plane, then U and V interleaved. Pure PyTorch:
it runs on any device, and the CPU tests compare it with PyAV's swscale. Not here: which frames
take this path (`media.video`), other pixel formats (they are converted to yuv420p first).
Output is always planar yuv420p, what the encoders take.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

# (Kr, Kb) of each matrix; AVCOL_SPC_BT709 is 1, and swscale takes anything else as BT.601.
MATRICES = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722)}
_AVCOL_SPC_BT709 = 1
_AVCOL_RANGE_JPEG = 2


@dataclass
class YuvFrame:
    """A frame's yuv420p planes, (H·3/2, W) uint8 (pinned on CUDA), and how to read them."""
    planes: object
    height: int
    width: int
    matrix: str = "bt601"
    full_range: bool = False
    nv12: bool = False        # chroma interleaved (NVDEC's output) rather than planar

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.height, self.width, 3)


def frame_tags(colorspace: int | None, color_range: int | None, pix_fmt: str) -> tuple[str, bool]:
    """(matrix, full_range) for a frame's tags, as FFmpeg reads them."""
    matrix = "bt709" if colorspace == _AVCOL_SPC_BT709 else "bt601"
    return matrix, color_range == _AVCOL_RANGE_JPEG or pix_fmt == "yuvj420p"


def yuv420_to_rgb(planes: torch.Tensor, height: int, width: int, matrix: str = "bt601",
                  full_range: bool = False, nv12: bool = False) -> torch.Tensor:
    """uint8 (N, H·3/2, W), yuv420p or NV12 → float32 (N, 3, H, W) in 0–255."""
    kr, kb = MATRICES[matrix]
    n, area = planes.shape[0], height * width
    flat = planes.reshape(n, -1).float()
    y = flat[:, :area].reshape(n, height, width)
    if nv12:
        chroma = flat[:, area:].reshape(n, height // 2, width // 2, 2).permute(0, 3, 1, 2)
    else:
        chroma = flat[:, area:].reshape(n, 2, height // 2, width // 2)
    chroma = F.interpolate(chroma, scale_factor=2, mode="bilinear", align_corners=False)
    if full_range:
        luma, pb, pr = y, chroma[:, 0] - 128, chroma[:, 1] - 128
    else:
        luma = (y - 16) * (255 / 219)
        pb, pr = (chroma[:, 0] - 128) * (255 / 224), (chroma[:, 1] - 128) * (255 / 224)
    r = luma + 2 * (1 - kr) * pr
    b = luma + 2 * (1 - kb) * pb
    g = (luma - kr * r - kb * b) / (1 - kr - kb)
    return torch.stack([r, g, b], 1).clamp_(0, 255)


def rgb_to_yuv420(rgb: torch.Tensor, matrix: str = "bt601", full_range: bool = False) -> torch.Tensor:
    """float (N, 3, H, W) in 0–255, H and W even → uint8 (N, H·3/2, W)."""
    kr, kb = MATRICES[matrix]
    n, _, height, width = rgb.shape
    r, g, b = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    luma = kr * r + (1 - kr - kb) * g + kb * b
    pb = F.avg_pool2d(((b - luma) / (2 * (1 - kb)))[:, None], 2)[:, 0]
    pr = F.avg_pool2d(((r - luma) / (2 * (1 - kr)))[:, None], 2)[:, 0]
    if full_range:
        y, u, v = luma, pb + 128, pr + 128
    else:
        y, u, v = 16 + luma * (219 / 255), 128 + pb * (224 / 255), 128 + pr * (224 / 255)
    flat = torch.cat([y.reshape(n, -1), u.reshape(n, -1), v.reshape(n, -1)], 1)
    return flat.round_().clamp_(0, 255).to(torch.uint8).reshape(n, height * 3 // 2, width)
