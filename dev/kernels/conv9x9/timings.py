"""conv9x9 op vs cuDNN on the network's two 9×9 layers, timed with CUDA events.

    python3 dev/kernels/conv9x9/timings.py --out timings.json

For conv1 (3→32, no bias) and deconv3 (32→3, bias; the op also with fp32 output, as the engine
calls it) at 512², 1080p and 4K, bf16 and fp16, channels_last, padding=0 on a pre-padded input:
warm-up, then the median of 20 timed calls per provider; prints ms, achieved TFLOP/s (2·Cin·81·
Cout per output pixel) and the speedup, and checks each op output against cuDNN's. Writes the
rows as JSON. Not a pytest module (run_device.sh runs it).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # run from a checkout, not installed
from styleforge import kernels
from styleforge.engine.choices import median_ms

OP = torch.ops.styleforge.conv9x9.default
RESOLUTIONS = {"512": (512, 512), "1080p": (1080, 1920), "4k": (2160, 3840)}
LAYERS = {"conv1": (3, 32), "deconv3": (32, 3)}
REPS = 20


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("conv9x9_timings.json"))
    args = parser.parse_args()
    ok, reason = kernels.cuda_kernels_available()
    if not ok:
        sys.stderr.write(f"CUDA kernels unavailable: {reason}\n")
        return 2
    torch.backends.cudnn.benchmark = True
    rows = []
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  cudnn {torch.backends.cudnn.version()}")
    print(f"{'layer':8} {'res':6} {'dtype':9} {'variant':10} {'cudnn ms':>9} {'op ms':>8} {'op TF/s':>8} "
          f"{'speedup':>8} {'rel diff':>9}")
    for dtype in (torch.bfloat16, torch.float16):
        for res, (h, w) in RESOLUTIONS.items():
            for layer, (cin, cout) in LAYERS.items():
                g = torch.Generator(device="cuda").manual_seed(0)
                x = (torch.rand(1, cin, h + 8, w + 8, generator=g, device="cuda") * (255 if cin == 3 else 2))
                x = x.to(dtype).contiguous(memory_format=torch.channels_last)
                weight = (torch.randn(cout, cin, 9, 9, generator=g, device="cuda") / (cin * 81) ** 0.5).to(dtype)
                weight = weight.contiguous(memory_format=torch.channels_last)
                bias = torch.randn(cout, generator=g, device="cuda") if cout == 3 else None
                bias_t = None if bias is None else bias.to(dtype)
                flops = 2 * cin * 81 * cout * h * w
                variants = [("native", False)] + ([("fp32-out", True)] if cout == 3 else [])
                for variant, fp32 in variants:
                    cudnn = ((lambda: F.conv2d(x, weight, bias_t).float()) if fp32
                             else (lambda: F.conv2d(x, weight, bias_t)))
                    op = (lambda: OP(x, weight, bias, fp32))
                    want, got = cudnn().double(), op().double()
                    diff = float((got - want).norm() / want.norm())
                    t_cudnn, t_op = median_ms(cudnn, REPS, warmup=3), median_ms(op, REPS, warmup=3)
                    row = dict(layer=layer, res=res, dtype=str(dtype).removeprefix("torch."), variant=variant,
                               cudnn_ms=t_cudnn, op_ms=t_op, op_tflops=flops / t_op / 1e9,
                               cudnn_tflops=flops / t_cudnn / 1e9, speedup=t_cudnn / t_op, rel_diff=diff)
                    rows.append(row)
                    print(f"{layer:8} {res:6} {row['dtype']:9} {variant:10} {t_cudnn:9.3f} {t_op:8.3f} "
                          f"{row['op_tflops']:8.1f} {row['speedup']:7.2f}x {diff:9.2e}", flush=True)
                del x
                torch.cuda.empty_cache()
    args.out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                                        rows=rows), indent=1))
    bad = [r for r in rows if not r["rel_diff"] <= 2e-2]
    for r in bad:
        print("MISMATCH vs cuDNN:", r)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
