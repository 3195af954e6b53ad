"""compute-sanitizer target: every arbitrary glue op once at small shapes (memcheck, racecheck):
    compute-sanitizer --tool memcheck python dev/sanitize_arbitrary_glue.py
"""
import torch

from styleforge import kernels

kernels.register_ops()   # ops are defined on first use (kernels/library.py); this calls them directly

torch.manual_seed(0)
cl = torch.channels_last
x = torch.randn(1, 64, 12, 20, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=cl)
b = torch.randn(64, device="cuda")
for rs, pool in ((0, True), (1, False), (2, True)):
    ho, wo = {0: (12, 20), 1: (6, 10), 2: (24, 40)}[rs]
    skip = torch.randn(1, 64, ho, wo, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=cl)
    kernels.feature_pad(x, b, skip, relu=True, resample=rs, pad=1, keep=True, pool=pool)
kernels.feature_pad(torch.randn(1, 8, 3, 3, device="cuda", dtype=torch.half).contiguous(memory_format=cl), pad=1)
kernels.norm_affine(torch.randn(1, 256, 40, 40, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=cl))
o = torch.rand(1, 8, 100, 128, device="cuda", dtype=torch.bfloat16)
xx = torch.randn(1, 512, 10, 10, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=cl)
v = lambda: torch.rand(1, 512, device="cuda")
kernels.adaattn_stats(o, xx, v(), v(), v(), v(), torch.rand(512, device="cuda"), torch.rand(512, device="cuda"))
kernels.detail_upscale(torch.rand(1, 3, 70, 90, device="cuda"), torch.rand(1, 3, 20, 30, device="cuda"))
torch.cuda.synchronize()
print("glue ops ran")
