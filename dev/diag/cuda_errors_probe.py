"""Does an argument error raised inside a CUDA binding (TORCH_CHECK) reach Python as a
RuntimeError? Each call runs in its own process, so a crash shows as a return code.
    PYTHONPATH=$PWD python3 dev/diag/cuda_errors_probe.py
"""
from __future__ import annotations

import subprocess
import sys

CALLS = {
    "norm_scale_shift 24 channels": "torch.ops.styleforge.norm_scale_shift(z(1, 24, 4, 4), None, None, 1e-5)",
    "norm_scale_shift bad weight":
        "torch.ops.styleforge.norm_scale_shift(z(1, 32, 4, 4), torch.ones(33, device='cuda'), None, 1e-5)",
    "conv9x9 pad 2": "torch.ops.styleforge.conv9x9(z(1, 32, 9, 9), z(3, 32, 9, 9), None, False, None, None, 2)",
    "conv9x9 fp32 weight": "torch.ops.styleforge.conv9x9(z(1, 32, 9, 9), z(3, 32, 9, 9).float(), None, False)",
    "instance_norm 3-D": "torch.ops.styleforge.instance_norm(z(32, 4, 4), None, None, None, 1e-5, False, 0, 1)",
    "conv3x3_norm bad weight": "torch.ops.styleforge.conv3x3_norm(z(1, 128, 4, 4), z(9, 2, 128, 32), None, None, "
                               "None, False, 1, False, None, None, 1e-5, True)",
}
PRELUDE = ("import torch\nfrom styleforge import kernels\nkernels.ensure_cuda_kernels()\n"
           "z = lambda *s: torch.zeros(*s, device='cuda', dtype=torch.bfloat16)\n"
           "try:\n    {call}\n    print('no error')\nexcept RuntimeError as e:\n"
           "    print('RuntimeError:', str(e).splitlines()[0][:120])\n")

for label, call in CALLS.items():
    proc = subprocess.run([sys.executable, "-c", PRELUDE.format(call=call)], capture_output=True, text=True,
                          check=False)
    tail = (proc.stdout.strip() or proc.stderr.strip().splitlines()[-1:] or [""])
    print(f"{label}: rc={proc.returncode} {tail if isinstance(tail, str) else tail[0]}")
