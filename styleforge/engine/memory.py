"""Memory budgets and the choice between whole-frame, exact tiled and fast tiled execution.

Before any work, `choose_execution` estimates what an image needs and picks, in order: the
whole frame (fastest) when its estimate fits the budget; exact tiling (`engine.tiling`) with
its full-frame stores on the GPU, in host RAM, or in scratch files on disk, whichever is the
first that fits; otherwise it refuses with a `MemoryBudgetError` that says what to do (downscale
with --max-side, raise --max-memory, or --tiling fast). `--tiling fast` (`engine.thumbnail`)
always fits: its memory is one tile's. The budgets: `--max-memory` (CPU RAM, default a share of
what is available now) and `--max-gpu-memory` (default what the device has free, less headroom).
The per-pixel constants are measured (docs/tiling.md); the stores' sizes come from the plan.
"""
from __future__ import annotations

import functools
import math
import os
import shutil
import tempfile
from dataclasses import dataclass

import torch

from .tiling import exact_store_bytes, plan_steps, receptive_halo

# Whole-frame peak per pixel of the padded input, by device type, per byte of element size.
WHOLE_FRAME_BYTES_PER_PIXEL_PER_BYTE = {"cpu": 270, "cuda": 500}
# The full-size copies around the network: decoded uint8 and its tensor, float input, float
# output (tiled: its store), uint8 output and the encoder's image.
IO_BYTES_PER_PIXEL = 48
RAM_SHARE = 0.3               # default --max-memory: this share of total RAM, at most what is free
RAM_HEADROOM = 1 << 30        # left to the rest of the system, and to torch itself
GPU_HEADROOM = 512 << 20      # left to the CUDA context, cuDNN workspaces and fragmentation
MAX_BAND_BYTES = 2 << 30      # larger bands gain nothing: the convolutions are already saturated
MIN_FAST_TILE = 64


class MemoryBudgetError(RuntimeError):
    """An image that cannot be stylized within the memory budget; the message says what to do."""


@dataclass(frozen=True)
class Execution:
    mode: str                   # "whole", "exact" or "fast"
    stores: str | None = None   # exact mode: "device", "host" or "disk"
    band_bytes: int = 0         # exact: working memory per band; fast: per tile
    tile: int = 0               # fast mode: tile core side in pixels
    estimate: int = 0           # bytes the choice is expected to take at its peak

    def describe(self) -> str:
        if self.mode == "whole":
            return "whole frame"
        if self.mode == "fast":
            return f"fast tiles of {self.tile} px (thumbnail statistics)"
        return f"exact tiling, activations in {self.stores} memory" if self.stores != "disk" \
            else "exact tiling, activations in scratch files"


def total_ram() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def available_ram() -> int:
    """MemAvailable from /proc/meminfo (Linux); elsewhere the physical RAM."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return total_ram()


def default_ram_budget() -> int:
    return max(256 << 20, min(int(total_ram() * RAM_SHARE), available_ram() - RAM_HEADROOM))


def default_gpu_budget(device: torch.device) -> int:
    """Free device memory plus what torch's caching allocator holds unused, less headroom."""
    free, _ = torch.cuda.mem_get_info(device)
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return max(0, free + cached - GPU_HEADROOM)


def scratch_free(folder: str | None) -> int:
    return shutil.disk_usage(folder or tempfile.gettempdir()).free


def whole_frame_bytes(pixels: int, device: torch.device, dtype: torch.dtype) -> int:
    item = torch.empty((), dtype=dtype).element_size()
    return pixels * item * WHOLE_FRAME_BYTES_PER_PIXEL_PER_BYTE[device.type]


def fast_tile(band_bytes: int, device: torch.device, dtype: torch.dtype, halo: int) -> int:
    """The largest tile core (multiple of 4) whose tile-plus-halo fits `band_bytes`."""
    side = math.isqrt(max(1, band_bytes // whole_frame_bytes(1, device, dtype))) - 2 * halo
    return max(MIN_FAST_TILE, side // 4 * 4)


def gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def choose_execution(height: int, width: int, device: torch.device, dtype: torch.dtype, *,
                     tiling: str = "auto", ram_budget: int, gpu_budget: int | None = None,
                     scratch_bytes: int = 0, io_pixels: int | None = None) -> Execution:
    """Pick how to run one (padded) height × width image, or raise MemoryBudgetError.

    `io_pixels`: the full-size image's pixels when the network runs on a smaller internal
    image (stroke scale); the caller's copies are that size.
    """
    pixels = height * width
    io = IO_BYTES_PER_PIXEL * (io_pixels or pixels)
    on_gpu = device.type == "cuda"
    if io > ram_budget:
        raise _refusal(height, width, io, ram_budget, "even its full-size copies do not fit")
    room_ram = ram_budget - io
    whole = whole_frame_bytes(pixels, device, dtype)
    if tiling == "off" or (tiling == "auto" and whole <= (gpu_budget if on_gpu else room_ram)):
        return Execution("whole", estimate=whole)
    work = min(MAX_BAND_BYTES, (gpu_budget if on_gpu else room_ram) // 2)
    if tiling == "fast":
        from .thumbnail import STRIDE, THUMBNAIL_SIDE
        halo = -(-receptive_halo(plan_steps_cached()) // STRIDE) * STRIDE
        # The thumbnail pass ends before the first tile starts: the peak is the larger of the two.
        thumb = whole_frame_bytes(min(pixels, THUMBNAIL_SIDE * THUMBNAIL_SIDE), device, dtype)
        return Execution("fast", tile=fast_tile(work, device, dtype, halo), band_bytes=work,
                         estimate=max(work, thumb))
    stores = exact_store_bytes(plan_steps_cached(), height, width, dtype)
    if on_gpu and stores + work // 2 <= gpu_budget:
        band = min(MAX_BAND_BYTES, gpu_budget - stores)
        return Execution("exact", "device", band, estimate=stores + band)
    if stores + work <= room_ram:
        return Execution("exact", "host", work, estimate=stores + work)
    if stores <= scratch_bytes:
        return Execution("exact", "disk", work, estimate=work)
    raise _refusal(height, width, stores + io, ram_budget + scratch_bytes,
                   "its activations fit neither the memory budget nor the scratch disk",
                   " or --scratch-dir on a bigger disk, or use --tiling fast (approximate)")


@functools.cache
def plan_steps_cached():
    """The steps of a (weightless) TransformerNet: only their shapes are needed for estimates."""
    from ..models.transformer_net import TransformerNet
    with torch.device("meta"):
        return plan_steps(TransformerNet())


def _refusal(height: int, width: int, need: int, budget: int, why: str, more: str = "") -> MemoryBudgetError:
    side = max(height, width)
    fit = max(16, int(side * math.sqrt(budget / need) * 0.9) // 16 * 16)
    return MemoryBudgetError(
        f"{width}×{height} needs about {gib(need)} ({why}); the budget is {gib(budget)}. "
        f"Downscale it with --max-side {fit}, raise --max-memory{more}")
