"""A captured frame's first and last kernels pointed at each call's own image and output.

The fused engine replays one CUDA graph per input shape, and a graph reads and writes the addresses
it was captured with. Copying each call's image into the graph's static input and cloning its static
output cost two more kernels and their launch gaps per frame. Where conv1 is StyleForge's 9×9 kernel
reading the static input and the head the one writing the static output, `GraphIO` instead rewrites
those two kernel nodes' pointers in the executable graph before a replay (csrc/graph_io.cpp, through
ctypes): the call reads the caller's tensor where it is and writes a fresh output, as an eager call
would.

`STYLEFORGE_GRAPH_IO=0` (`Switches.graph_io`) turns this off: the copy path everywhere.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import torch

from .. import kernels

_IMAGE, _OUTPUT = 1, 2        # sf_graph_io_nodes' bits
_ALIGN = 16                   # the static tensors' alignment the kernels were captured with, at least

_library: ctypes.CDLL | None = None


def _functions() -> ctypes.CDLL:
    global _library
    if _library is None:
        ok, path = kernels.cuda_kernels_available()
        if not ok:
            raise RuntimeError(path)
        library = ctypes.CDLL(path)   # already loaded by the build: this only looks its symbols up
        pointer = ctypes.c_size_t
        library.sf_graph_io_nodes.argtypes = [pointer, pointer, pointer, ctypes.POINTER(pointer),
                                              ctypes.POINTER(pointer)]
        library.sf_graph_io_nodes.restype = ctypes.c_int
        library.sf_graph_io_retarget.argtypes = [pointer, pointer, pointer]
        library.sf_graph_io_retarget.restype = ctypes.c_int
        _library = library
    return _library


def new_graph(enabled: bool = True) -> tuple[torch.cuda.CUDAGraph, bool]:
    """A graph that keeps its captured form after capture (its nodes are what `bind` looks up),
    where enabled and this PyTorch has `keep_graph`; and whether it does."""
    if enabled:
        try:
            return torch.cuda.CUDAGraph(keep_graph=True), True
        except TypeError:
            pass
    return torch.cuda.CUDAGraph(), False


@dataclass
class GraphIO:
    graph: torch.cuda.CUDAGraph
    static_in: torch.Tensor
    static_out: torch.Tensor
    executable: int
    image_node: int
    output_node: int
    image_at: int       # where each node points now
    output_at: int

    @classmethod
    def bind(cls, graph: torch.cuda.CUDAGraph, kept: bool, static_in: torch.Tensor,
             static_out: torch.Tensor) -> GraphIO | None:
        """For a graph captured by `new_graph` (kept) and instantiated: its image and output nodes,
        or None where it lacks either (cuDNN at that end) and the copy path must serve. (kept is
        False where graph I/O was off at capture.)"""
        if not kept:
            return None
        image_node, output_node = ctypes.c_size_t(0), ctypes.c_size_t(0)
        found = _functions().sf_graph_io_nodes(graph.raw_cuda_graph(), static_in.data_ptr(),
                                               static_out.data_ptr(), ctypes.byref(image_node),
                                               ctypes.byref(output_node))
        if found < 0:
            raise RuntimeError(f"graph_io: looking up the graph's nodes failed (CUDA error {-1 - found})")
        if found != _IMAGE | _OUTPUT:
            return None
        return cls(graph, static_in, static_out, graph.raw_cuda_graph_exec(), image_node.value,
                   output_node.value, static_in.data_ptr(), static_out.data_ptr())

    def accepts(self, x: torch.Tensor) -> bool:
        """Whether conv1's captured launch reads x as it read the static input: same device, dtype
        and strides (the shape is the graph's key), aligned as an allocation is."""
        return (x.device == self.static_in.device and x.dtype == self.static_in.dtype
                and x.stride() == self.static_in.stride() and x.data_ptr() % _ALIGN == 0)

    def replay(self, x: torch.Tensor) -> torch.Tensor:
        """One frame from x (accepted) into a new output tensor, which later calls never touch."""
        out = torch.empty_like(self.static_out)
        self._point(x.data_ptr(), out.data_ptr())
        self.graph.replay()
        return out

    def restore(self) -> None:
        """The nodes back on the static tensors, for a replay through the copy path."""
        self._point(self.static_in.data_ptr(), self.static_out.data_ptr())

    def _point(self, image: int, output: int) -> None:
        functions = _functions()
        if image != self.image_at:
            self._check(functions.sf_graph_io_retarget(self.executable, self.image_node, image))
            self.image_at = image
        if output != self.output_at:
            self._check(functions.sf_graph_io_retarget(self.executable, self.output_node, output))
            self.output_at = output

    @staticmethod
    def _check(err: int) -> None:
        if err != 0:
            raise RuntimeError(f"graph_io: updating the graph's kernel node failed (CUDA error {err})")
