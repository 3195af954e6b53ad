"""Facts about the CPU a benchmark row runs on: the ISA oneDNN dispatches to, the calling thread's
CPUs, the load average. `bench.cpu` and `bench.cpu_arbitrary` put them in each row's notes. Only
reads; changes no setting. Not the GPU environment (`bench.env`).
"""
from __future__ import annotations

import os
import subprocess
import sys


def cpu_list(cpus) -> str:
    """{2, 3, 4, 7} → "2-4,7": the CPUs a thread may run on, as taskset writes them."""
    cpus, spans = sorted(cpus), []
    for cpu in cpus:
        if spans and cpu == spans[-1][1] + 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def affinity() -> str:
    """The calling thread's CPUs ("" where the OS does not say): a runtime that pins threads must
    not leave the caller's mask narrowed."""
    return cpu_list(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else ""


def onednn_isa() -> str:
    """The ISA oneDNN dispatches to here, from its verbose line in a child process (same env)."""
    # A child process with our environment, so that the ISA cap applies; large enough that
    # PyTorch hands the convolution to oneDNN (tiny ones take its own kernel).
    code = ("import torch; from torch.backends import mkldnn\n"
            "with mkldnn.verbose(mkldnn.VERBOSE_ON):\n"
            "    torch.nn.functional.conv2d(torch.rand(1, 32, 64, 64), torch.rand(32, 32, 3, 3))")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    for line in out.splitlines():
        if ",isa:" in line:
            return line.split(",isa:", 1)[1].strip()
    return "unknown (no oneDNN verbose line)"


def load_average() -> str:
    """The 1-minute load average when the row was taken: the CPU may be shared, so a row says how
    busy it was (the minimum over reps is the figure least disturbed by the other processes)."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return ""
