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

import ctypes
import functools
import math
import os
import shutil
import tempfile
from dataclasses import dataclass

import torch

from .tiling_plan import exact_store_bytes, plan_steps, receptive_halo

# Whole-frame peak per pixel of the padded input, by device type, per byte of element size.
WHOLE_FRAME_BYTES_PER_PIXEL_PER_BYTE = {"cpu": 270, "cuda": 500}
# The full-size copies around the network, per pixel of the full-size image, in host RAM: the
# decoded uint8 (3), one float32 image at a time (12: the downscale's input, then the output or
# the tiled output store), the uint8 result (3), and the band temporaries (measured 18-21 B/px
# above the process's baseline over 12-192 MP, docs/tiling.md). Decoding peaks lower (8-10 B/px).
IO_BYTES_PER_PIXEL = 24
IO_FIXED_BYTES = 64 << 20     # and the resampling bands and allocator slack: up to this much,
IO_FIXED_BYTES_PER_PIXEL = 192   # or this per pixel where the whole image is smaller than a band
# --strength below 1 and --preserve-color mix with the float photo: its copy and their temporaries.
STRENGTH_BYTES_PER_PIXEL = 24
PRESERVE_COLOR_BYTES_PER_PIXEL = 72
# On a GPU the full-size float input, output and resampling temporaries all live on the device.
GPU_IO_BYTES_PER_PIXEL = 48
RAM_SHARE = 0.3               # default --max-memory: this share of total RAM, at most what is free
RAM_HEADROOM = 1 << 30        # left to the rest of the system, and to torch itself
GPU_HEADROOM = 512 << 20      # left to the CUDA context, cuDNN workspaces and fragmentation
MAX_BAND_BYTES = 2 << 30      # larger bands gain nothing: the convolutions are already saturated
MIN_FAST_TILE = 64


class MemoryBudgetError(RuntimeError):
    """An image that cannot be stylized within the memory budget; the message says what to do.

    `need` and `budget` in bytes; `fit_side` the --max-side that fits (None: none does);
    `refined` restates it for the image as the caller sees it (full size, a searched fit)."""

    def __init__(self, width: int, height: int, need: int, budget: int, why: str, more: str = "",
                 fit_side: int | None = None):
        self.size, self.need, self.budget, self.why, self.more = (width, height), need, budget, why, more
        self.fit_side = fit_side
        need_text, budget_text = sizes(need, budget)
        advice = (f"Downscale it with --max-side {fit_side}, raise --max-memory{more}" if fit_side
                  else f"Raise --max-memory{more}")
        super().__init__(f"{width}×{height} needs about {need_text} ({why}); the budget is {budget_text}. "
                         f"{advice}")

    def refined(self, width: int, height: int, fit_side: int | None) -> MemoryBudgetError:
        return MemoryBudgetError(width, height, self.need, self.budget, self.why, self.more, fit_side)


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


TRIM_ABOVE_PIXELS = 4_000_000   # images smaller than this leave too little behind to matter


def release_freed_memory(pixels: int) -> None:
    """Give back to the OS the memory that a large image's freed temporaries leave in glibc's
    heaps, after a phase (decode, network, resampling) ends. glibc keeps freed blocks below its
    (self-raising) mmap threshold, in one heap per thread, so the decode worker's, the network's
    and the resampling's leftovers added up in the resident set, ~40% above the budget at 260 MB.
    A no-op for small images and where the C library has no malloc_trim (not glibc)."""
    if pixels >= TRIM_ABOVE_PIXELS and _malloc_trim() is not None:
        _malloc_trim()(0)


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None


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


_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "bytes"))


def sizes(*amounts: int) -> list[str]:
    """Byte counts in one unit (that of the smallest), with the decimals that tell them apart:
    a refusal must never read "needs about 0.5 GiB; the budget is 0.5 GiB"."""
    scale, unit = next(((s, u) for s, u in _UNITS if min(amounts) >= s), _UNITS[-1])
    for decimals in range(0 if scale == 1 else 3):
        texts = [f"{a / scale:,.{decimals}f} {unit}" for a in amounts]
        if len(set(texts)) == len(set(amounts)) and min(amounts) / scale >= 10 ** (1 - decimals):
            return texts
    return [f"{a / scale:,.{0 if scale == 1 else 2}f} {unit}" for a in amounts]


def gib(n: int) -> str:
    return sizes(n)[0]


def choose_execution(height: int, width: int, device: torch.device, dtype: torch.dtype, *,
                     tiling: str = "auto", ram_budget: int, gpu_budget: int | None = None,
                     scratch_bytes: int = 0, io_pixels: int | None = None,
                     io_bytes_per_pixel: int = IO_BYTES_PER_PIXEL) -> Execution:
    """Pick how to run one (padded) height × width image, or raise MemoryBudgetError.

    `io_pixels`: the full-size image's pixels when the network runs on a smaller internal
    image (stroke scale); the caller's copies are that size, `io_bytes_per_pixel` each
    (more with --strength or --preserve-color). The budgets count what one image takes above
    the process's baseline (interpreter, torch, the model: about 0.3 GB on a CPU).
    """
    pixels = height * width
    full = io_pixels or pixels
    io = io_bytes_per_pixel * full + min(IO_FIXED_BYTES, IO_FIXED_BYTES_PER_PIXEL * full)
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
    """The refusal for this (network-size) image, with a first guess at a side that fits; the
    Stylizer restates it for the full-size image with a side it has checked (`refined`)."""
    side = max(height, width)
    fit = max(16, int(side * math.sqrt(budget / need) * 0.9) // 16 * 16)
    return MemoryBudgetError(width, height, need, budget, why, more, fit)
