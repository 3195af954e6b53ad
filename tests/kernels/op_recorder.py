"""The ATen and styleforge ops a block of code dispatches, in order, for the tests that check which
path a switch takes (our op or its PyTorch twin) and what a fused op lowers to."""
from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class OpRecorder(TorchDispatchMode):
    """`with OpRecorder() as rec:` → `rec.ops` ("styleforge.conv9x9.default", "aten.add.Tensor", …)
    and `rec.names`, the same calls by packet name ("conv9x9", "add", …)."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))
