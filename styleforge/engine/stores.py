"""Full-frame activation stores for tiled execution: in device or host memory, or on disk.

A store holds one activation of one image, (C, H, W), and hands out row bands as (1, C, rows, W)
tensors on the compute device. `TensorStore` keeps a tensor (on the GPU, or in host RAM);
`DiskStore` keeps a temporary file laid out row by row, (H, C, W), so a band is one contiguous
`pread`/`pwrite`: nothing is memory-mapped, so the pages stay in the OS page cache and never in
the process's resident set (a numpy memmap's touched pages would count there). bfloat16, which
numpy lacks, travels as int16 bits. This module computes nothing; `engine.tiling` does.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np
import torch

from .capture import cuda_work


class TensorStore:
    def __init__(self, channels: int, height: int, width: int, dtype: torch.dtype, device: torch.device,
                 compute: torch.device | None = None):
        """On `device`; `compute` is where its bands are used (default: the same device)."""
        self.shape = (channels, height, width)
        self.dtype = dtype
        self._registered = False
        compute = torch.device(compute or device)
        # channels_last for a GPU: a row band is then one contiguous block, and cuDNN's fastest
        # low-precision convolutions read and write that layout.
        layout = torch.channels_last if compute.type == "cuda" else torch.contiguous_format
        self.data = torch.empty((1, channels, height, width), dtype=dtype, device=device, memory_format=layout)
        if compute.type == "cuda" and self.data.device.type == "cpu":
            self._pin()

    def _pin(self) -> None:
        """Page-lock host memory that feeds a GPU: bands then copy by DMA at PCIe speed (pageable
        copies go through a staging buffer, and a large image's bands then take far longer). Registered, not
        allocated pinned, so the
        pages go back at close instead of staying in torch's pinned-memory cache."""
        nbytes = self.data.numel() * self.data.element_size()
        if nbytes == 0:
            return
        with cuda_work():   # like a pinned allocation: not while a graph is captured
            err = torch.cuda.cudart().cudaHostRegister(self.data.data_ptr(), nbytes, 0)
        self._registered = int(err) == 0   # failing to pin (locked-memory limits) only costs speed

    @classmethod
    def wrap(cls, tensor: torch.Tensor) -> TensorStore:
        """A store over an existing (1, C, H, W) tensor (no copy)."""
        store = cls.__new__(cls)
        store.shape, store.dtype, store.data = tuple(tensor.shape[1:]), tensor.dtype, tensor
        store._registered = False
        return store

    def read(self, r0: int, r1: int, device: torch.device) -> torch.Tensor:
        return self.data[:, :, r0:r1].to(device, non_blocking=True)

    def write(self, r0: int, band: torch.Tensor) -> None:
        self.data[:, :, r0:r0 + band.shape[2]].copy_(band)

    def close(self) -> None:
        if self._registered and self.data is not None:
            with cuda_work():   # a device-wide sync: forbidden while another thread captures (engine.capture)
                torch.cuda.synchronize()      # no copy may still be reading the pages
                torch.cuda.cudart().cudaHostUnregister(self.data.data_ptr())
            self._registered = False
        self.data = None


class DiskStore:
    def __init__(self, channels: int, height: int, width: int, dtype: torch.dtype, folder: str | None):
        self.shape = (channels, height, width)
        self.dtype = dtype
        self._np_dtype = np.int16 if dtype == torch.bfloat16 else torch.empty((), dtype=dtype).numpy().dtype
        self._row_bytes = channels * width * np.dtype(self._np_dtype).itemsize
        handle, self.path = tempfile.mkstemp(prefix="styleforge-tile-", suffix=".act", dir=folder)
        self._fd = handle
        try:
            os.ftruncate(self._fd, self._row_bytes * height)
        except OSError:
            self.close()
            raise
        os.unlink(self.path)  # the open descriptor keeps it; nothing is left behind on a crash

    def read(self, r0: int, r1: int, device: torch.device) -> torch.Tensor:
        channels, _, width = self.shape
        rows = np.empty((r1 - r0, channels, width), dtype=self._np_dtype)
        view = memoryview(rows).cast("B")
        offset, done = r0 * self._row_bytes, 0
        while done < len(view):  # pread may return short on large reads
            got = os.preadv(self._fd, [view[done:]], offset + done)
            if got <= 0:
                raise OSError(f"short read from the tiling scratch file {self.path}")
            done += got
        band = torch.from_numpy(rows)
        if self.dtype == torch.bfloat16:
            band = band.view(torch.bfloat16)
        return band.permute(1, 0, 2).unsqueeze(0).to(device)

    def write(self, r0: int, band: torch.Tensor) -> None:
        rows = band[0].permute(1, 0, 2).to("cpu", self.dtype).contiguous()
        if self.dtype == torch.bfloat16:
            rows = rows.view(torch.int16)
        view = memoryview(rows.numpy()).cast("B")
        offset, done = r0 * self._row_bytes, 0
        while done < len(view):
            done += os.pwritev(self._fd, [view[done:]], offset + done)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def make_store(kind: str, channels: int, height: int, width: int, dtype: torch.dtype,
               device: torch.device, folder: str | None = None):
    """kind: "device" (on the compute device), "host" (CPU RAM) or "disk" (a scratch file)."""
    if kind == "disk":
        return DiskStore(channels, height, width, dtype, folder)
    return TensorStore(channels, height, width, dtype, device if kind == "device" else torch.device("cpu"),
                       compute=device)
