"""On CUDA, the arbitrary-style model's attention and FFN run on styleforge's kernels (not the
twins), and its bf16 output stays close to the fp32 reference path. Skipped without CUDA."""
from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from conftest import cuda_kernel_names
from styleforge import kernels
from styleforge.bench.arbitrary import random_model


@pytest.mark.gpu
def test_arbitrary_attention_and_ffn_kernels_run(loaded):
    model = random_model().cuda().to(torch.bfloat16)
    x = (torch.rand(1, 3, 272, 208, device="cuda") * 255).to(torch.bfloat16)
    s = (torch.rand(1, 3, 256, 320, device="cuda") * 255).to(torch.bfloat16)
    with torch.inference_mode():
        code = model.encode_style(s)
        run = lambda: model.stylize(x, [(code, 1.0)])  # noqa: E731
        run()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run()
        ops = [e.name for e in prof.events()]
        assert ops.count("styleforge::attention") == 2 and ops.count("styleforge::ffn") == 2
        names = " ".join(cuda_kernel_names(run))
        assert "attention" in names                                     # our flash kernel
        assert "softmax" not in names.lower()                          # not the twin's matmul–softmax
        with kernels.using("reference"):
            ref = random_model().cuda().float().stylize(x.float(), [(random_model().cuda().float().encode_style(s.float()), 1.0)])
        out = run().float()
    err = float((out - ref).norm() / ref.norm())
    assert err < 3e-2, f"bf16 kernels vs fp32 reference: relative error {err:.3g}"
