"""Correctness and speed of the sm_90a attention kernel (csrc/cuda/attention_sm90.cu) against SDPA.

    python3 dev/kernels/attention_sm90/probe.py --out DIR            # build with cpp_extension.load
    python3 dev/kernels/attention_sm90/probe.py --impl capi --out DIR  # use build/ from build_capi.sh
    python3 dev/kernels/attention_sm90/probe.py --quick               # small cases only (sanitizers)

Correctness: random inputs (never zeros), float64 oracle = styleforge/kernels/reference/attention.py
on the same 16-bit values; a case passes when our max abs error is at most 2x that of
F.scaled_dot_product_attention in the same dtype (default backend) + 1e-5, and fully masked rows
(or Nk = 0) are exactly zero; "fp32out" cases ask the kernel for fp32 output (out_fp32). Timing: CUDA
events around 50 back-to-back calls after warm-up, median of 5 such runs (SDPA and ours alternating),
us per call and TFLOP/s (4*B*H*Nq*Nk*D). Writes probe.json (and, for a failing small case, diag.pt
with inputs and outputs) to --out. A dev playground, never imported.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import functools
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CSRC = ROOT / "styleforge" / "kernels" / "csrc"
DEVICE = "cuda"

_spec = importlib.util.spec_from_file_location("reference_attention",
                                               ROOT / "styleforge" / "kernels" / "reference" / "attention.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def load_ext():
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")
    from torch.utils.cpp_extension import load
    build = Path("/tmp/sf_attention_sm90_ext")
    build.mkdir(parents=True, exist_ok=True)
    mod = load(name="sf_attention_sm90", sources=[str(HERE / "binding.cpp"), str(CSRC / "cuda" / "attention_sm90.cu")],
               extra_include_paths=[str(CSRC)], extra_cflags=["-O3", "-std=c++17"],
               extra_cuda_cflags=["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"],
               build_directory=str(build), verbose=False)
    return lambda q, k, v, mask, scale, fp32=False: mod.forward(q, k, v, mask, scale, fp32)


def load_capi(path: Path):
    lib = ctypes.CDLL(str(path))
    fn = lib.sf_attention_sm90_forward
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 4 + [ctypes.c_int, ctypes.c_float,
                                                                                    ctypes.c_int, ctypes.c_void_p]

    def forward(q, k, v, mask, scale, fp32=False):
        out = torch.empty_like(q, dtype=torch.float32 if fp32 else q.dtype)
        b, h, nq, d = q.shape
        err = fn(int(q.dtype == torch.bfloat16), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                 None if mask is None else mask.data_ptr(), out.data_ptr(), b, h, nq, k.shape[2], d, scale,
                 int(fp32), torch.cuda.current_stream().cuda_stream)
        if err != 0:
            kind = "unsupported" if err < 0 else "CUDA error"
            raise RuntimeError(f"sf_attention_sm90_forward returned {err} ({kind})")
        return out
    return forward


def make_inputs(b, h, nq, nk, d, dtype, mask_kind, seed):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    q = torch.randn(b, h, nq, d, generator=g, device=DEVICE).to(dtype)
    k = torch.randn(b, h, nk, d, generator=g, device=DEVICE).to(dtype)
    v = torch.randn(b, h, nk, d, generator=g, device=DEVICE).to(dtype)
    mask = None
    if mask_kind:
        mask = torch.rand(b, nk, generator=g, device=DEVICE) < 0.3
        if mask_kind == "rows" and nk:
            mask[0] = True                 # batch 0: every key masked → zeros
            if b > 1:
                mask[1] = True
                mask[1, nk - 1] = False    # batch 1: only the last key (a tail column) kept
        mask = mask.contiguous()
    return q, k, v, mask


def oracle(q, k, v, mask, scale):
    outs = []
    for i in range(q.shape[0]):            # one batch at a time keeps the float64 N×N small
        m = None if mask is None else mask[i:i + 1]
        outs.append(reference.attention(q[i:i + 1].double(), k[i:i + 1].double(), v[i:i + 1].double(), m, scale))
    return torch.cat(outs)


def sdpa(q, k, v, mask, scale):
    keep = None if mask is None else ~mask[:, None, None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=scale)


CHECKS = [  # label, B, H, Nq, Nk, D, dtype, mask kind (None, "rand", "rows"), scale (None = D^-0.5)
    ("anchor 32x12x197", 32, 12, 197, 197, 64, torch.bfloat16, None, None),
    ("anchor 32x12x577", 32, 12, 577, 577, 64, torch.bfloat16, None, None),
    ("anchor 32x12x1025", 32, 12, 1025, 1025, 64, torch.bfloat16, None, None),
    ("anchor 1x8x4096", 1, 8, 4096, 4096, 64, torch.bfloat16, None, None),
    ("fp16 8x12x577", 8, 12, 577, 577, 64, torch.float16, None, None),
    ("cross 2x4 300<-1000", 2, 4, 300, 1000, 64, torch.bfloat16, None, None),
    ("cross 2x4 77<-197", 2, 4, 77, 197, 64, torch.bfloat16, None, None),
    ("tails 3x2 1<-77", 3, 2, 1, 77, 64, torch.bfloat16, None, None),
    ("tails 3x2 197<-1", 3, 2, 197, 1, 64, torch.bfloat16, None, None),
    ("tails 1x1 1<-1", 1, 1, 1, 1, 64, torch.bfloat16, None, None),
    ("tails 2x3 129<-129 scale=1", 2, 3, 129, 129, 64, torch.bfloat16, None, 1.0),
    ("mask 4x6x197 rows", 4, 6, 197, 197, 64, torch.bfloat16, "rows", None),
    ("mask 2x4x1025 rand fp16", 2, 4, 1025, 1025, 64, torch.float16, "rand", None),
    ("mask 3x2 77<-300 rows", 3, 2, 77, 300, 64, torch.bfloat16, "rows", None),
    ("Nk=0 2x2 5<-0", 2, 2, 5, 0, 64, torch.bfloat16, None, None),
    ("D128 4x8x577", 4, 8, 577, 577, 128, torch.bfloat16, None, None),
    ("D128 2x4 77<-130 fp16", 2, 4, 77, 130, 128, torch.float16, None, None),
    ("D128 4x6x197 rows", 4, 6, 197, 197, 128, torch.bfloat16, "rows", None),
    ("D128 1x8x4096", 1, 8, 4096, 4096, 128, torch.bfloat16, None, None),
    ("long 2x2 250<-2100 rows", 2, 2, 250, 2100, 64, torch.bfloat16, "rows", None),   # Nk >= 2048: ws kernel
    ("long fp16 1x3 256<-2048", 1, 3, 256, 2048, 64, torch.float16, None, None),
    ("fp32out 2x3 129<-129", 2, 3, 129, 129, 64, torch.bfloat16, None, None),
    ("fp32out long 1x2 250<-2100", 1, 2, 250, 2100, 64, torch.bfloat16, None, None),
    ("fp32out 3x2 77<-300 rows", 3, 2, 77, 300, 64, torch.bfloat16, "rows", None),
    ("fp32out D128 2x4 200<-1000", 2, 4, 200, 1000, 128, torch.bfloat16, None, None),
]
QUICK = {"tails 2x3 129<-129 scale=1", "mask 3x2 77<-300 rows", "D128 2x4 77<-130 fp16", "tails 3x2 1<-77",
         "Nk=0 2x2 5<-0", "fp32out 3x2 77<-300 rows", "D128 4x6x197 rows", "long 2x2 250<-2100 rows",
         "fp32out long 1x2 250<-2100"}

TIMES = [  # label, B, H, Nq, Nk, D, mask kind; SDPA anchors from the brief (us) where given
    ("32x12x197", 32, 12, 197, 197, 64, None),
    ("32x12x577", 32, 12, 577, 577, 64, None),
    ("32x12x1025", 32, 12, 1025, 1025, 64, None),
    ("1x8x4096", 1, 8, 4096, 4096, 64, None),
    ("32x12x577 masked", 32, 12, 577, 577, 64, "rand"),
    ("cross 16x8 256<-4096", 16, 8, 256, 4096, 64, None),
    ("4x12x2048", 4, 12, 2048, 2048, 64, None),
    ("D128 32x12x197", 32, 12, 197, 197, 128, None),
    ("D128 32x12x577", 32, 12, 577, 577, 128, None),
    ("D128 8x8x1024", 8, 8, 1024, 1024, 128, None),
    ("D128 1x8x4096", 1, 8, 4096, 4096, 128, None),
]


def check(forward, quick: bool, diag: dict) -> list[dict]:
    rows = []
    for label, b, h, nq, nk, d, dtype, mask_kind, scale in CHECKS:
        if quick and label not in QUICK:
            continue
        scale = d ** -0.5 if scale is None else scale
        q, k, v, mask = make_inputs(b, h, nq, nk, d, dtype, mask_kind, seed=len(rows) + 1)
        fp32 = label.startswith("fp32out")   # the kernel writes fp32 from its accumulators
        ours = forward(q, k, v, mask, scale, fp32)
        torch.cuda.synchronize()
        ref = oracle(q, k, v, mask, scale)
        dead = (torch.zeros(b, 1, 1, 1, dtype=torch.bool, device=DEVICE) if mask is None
                else mask.all(1)[:, None, None, None])
        if nk == 0:
            dead = torch.ones_like(dead)
        err = (ours.double() - ref).abs()
        ours_err = err.max().item() if err.numel() else 0.0
        zeros_ok = bool((ours.masked_select(dead.expand_as(ours)) == 0).all().item())
        finite = bool(torch.isfinite(ours).all().item())
        if nk > 0:
            theirs = sdpa(q, k, v, mask, scale).double()
            live = ~dead.expand_as(theirs)
            sdpa_err = (theirs - ref).abs().masked_select(live).max().item() if live.any() else 0.0
        else:
            sdpa_err = 0.0
        tol = 2 * sdpa_err + 1e-5
        ok = finite and zeros_ok and ours_err <= tol
        rows.append({"case": label, "B": b, "H": h, "Nq": nq, "Nk": nk, "D": d, "dtype": str(dtype).split(".")[-1],
                     "mask": mask_kind, "scale": scale, "ours_max_abs_err": ours_err, "sdpa_max_abs_err": sdpa_err,
                     "tol": tol, "masked_rows_zero": zeros_ok, "finite": finite, "pass": ok})
        print(f"{'PASS' if ok else 'FAIL'}  {label:28} ours {ours_err:.3e}  sdpa {sdpa_err:.3e}  "
              f"zeros {zeros_ok}  finite {finite}", flush=True)
        if not ok and q.numel() + k.numel() <= 2_000_000 and len(diag) < 4:
            diag[label] = {"q": q.cpu(), "k": k.cpu(), "v": v.cpu(), "mask": None if mask is None else mask.cpu(),
                           "scale": scale, "ours": ours.cpu(), "ref": ref.cpu()}
        del q, k, v, mask, ours, ref, err
        torch.cuda.empty_cache()
    return rows


def median_us(fns, reps: int = 50, runs: int = 5) -> list[float]:
    """Per-call us of each fn: median over `runs` rounds of `reps` back-to-back calls; the fns
    take turns within a round, so clock drift hits them alike."""
    for fn in fns:
        for _ in range(10):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            times[i].append(start.elapsed_time(end) * 1e3 / reps)
    return [sorted(t)[runs // 2] for t in times]


def timing(forward) -> list[dict]:
    rows = []
    print(f"\n{'shape':22} {'D':>3} {'sdpa us':>9} {'ours us':>9} {'sdpa TF/s':>9} {'ours TF/s':>9} {'sdpa/ours':>9}")
    for label, b, h, nq, nk, d, mask_kind in TIMES:
        q, k, v, mask = make_inputs(b, h, nq, nk, d, torch.bfloat16, mask_kind, seed=7)
        scale = d ** -0.5
        t_sdpa, t_ours = median_us([functools.partial(sdpa, q, k, v, mask, scale),
                                    functools.partial(forward, q, k, v, mask, scale)])
        flops = 4 * b * h * nq * nk * d
        row = {"shape": label, "B": b, "H": h, "Nq": nq, "Nk": nk, "D": d, "dtype": "bfloat16", "mask": mask_kind,
               "sdpa_us": t_sdpa, "ours_us": t_ours, "sdpa_tflops": flops / t_sdpa / 1e6,
               "ours_tflops": flops / t_ours / 1e6, "speedup_vs_sdpa": t_sdpa / t_ours}
        rows.append(row)
        print(f"{label:22} {d:3} {t_sdpa:9.1f} {t_ours:9.1f} {row['sdpa_tflops']:9.1f} {row['ours_tflops']:9.1f} "
              f"{row['speedup_vs_sdpa']:9.3f}", flush=True)
        del q, k, v, mask
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", choices=("ext", "capi"), default="ext")
    parser.add_argument("--lib", type=Path, default=HERE / "build" / "libsf_attention_sm90.so")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="small correctness cases only, no timing")
    parser.add_argument("--no-check", action="store_true", help="timing only")
    args = parser.parse_args()
    out_dir = args.out or Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    forward = load_capi(args.lib) if args.impl == "capi" else load_ext()
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "impl": args.impl}
    print(f"{info['device']}  torch {info['torch']}  impl {args.impl}  {info['date']}", flush=True)
    diag: dict = {}
    result = dict(info)
    if not args.no_check:
        result["checks"] = check(forward, args.quick, diag)
    if not args.quick:
        result["timing"] = timing(forward)
    name = "probe_quick.json" if args.quick else "probe.json"
    (out_dir / name).write_text(json.dumps(result, indent=1))
    if diag:
        torch.save(diag, out_dir / "diag.pt")
    failed = [r["case"] for r in result.get("checks", []) if not r["pass"]]
    print(f"\n{len(failed)} failing check(s){': ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
