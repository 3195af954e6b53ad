"""OpenVINO's per-node counters over a few inferences: the part the per-node diags share
(openvino_arbitrary_nodes.py, openvino_style_nodes.py), imported from their own folder (on
sys.path when run as scripts); never imported by the package. The request must come from a
model compiled with `PERF_COUNT`.
"""
from __future__ import annotations

import time


def node_times(request, inputs, reps: int, fastest: bool = False) -> tuple[dict, dict, list[float]]:
    """(node name → ms per inference, node name → (kind, kernel), process CPU ms of each timed
    inference), after one untimed inference. A node's ms is its mean over `reps`, or with
    `fastest` its fastest (on a shared machine the least disturbed)."""
    request.infer(inputs)
    spent: dict[str, float] = {}
    kinds: dict[str, tuple[str, str]] = {}
    cpu: list[float] = []
    for _ in range(reps):
        start = time.process_time()
        request.infer(inputs)
        cpu.append((time.process_time() - start) * 1e3)
        for node in request.profiling_info:
            ms = node.real_time.total_seconds() * 1e3
            name = node.node_name
            spent[name] = min(spent.get(name, ms), ms) if fastest else spent.get(name, 0.0) + ms / reps
            kinds[name] = (node.node_type, node.exec_type)
    return spent, kinds, cpu
