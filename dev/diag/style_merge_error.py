"""How far a merged painting code moves the attention: k-means merging against strided subsampling.

For each photo × painting pair and level, the attention statistics over the model's own style
tokens (float64, the reference) against the same with the painting's keys merged to N per head
(`models/arbitrary/merge.py`) and against the model's own rule with N tokens (`subsample_grid`:
a coarser strided grid). Error: mean |Δ| over mean |reference| of the per-position style mean
and std (standardised units, as the block computes them before mapping back). PyTorch fp32
model, the encoder included, so this runs anywhere. Also the merge's CPU ms per level. A dev
experiment:

    python dev/diag/style_merge_error.py --photo P --paintings Q... --tokens 256 128
"""
from __future__ import annotations

import argparse
import time

import torch

from styleforge.bench.cpu_arbitrary import load_photo
from styleforge.engine.paintings import painting_image, painting_tensor
from styleforge.models.arbitrary import load_arbitrary
from styleforge.models.arbitrary.merge import merge_style_level
from styleforge.models.arbitrary.model import pad_to_multiple
from styleforge.models.arbitrary.transfer import subsample_grid, tokens


def statistics64(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias, half: int):
    """(mean, std) per position and head channel, float64."""
    s = q.double() @ k.double().transpose(-1, -2) * q.shape[-1] ** -0.5
    out = (s + (0.0 if bias is None else bias.double())).softmax(-1) @ v.double()
    m = out[..., :half]
    return m, (out[..., half:] - m * m).clamp_min(0).sqrt()


def error(got, want) -> str:
    return " / ".join(f"{float((g - w).abs().mean() / w.abs().mean()):.3f}" for g, w in zip(got, want))


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photo", required=True)
    parser.add_argument("--paintings", nargs="+", required=True)
    parser.add_argument("--tokens", nargs="+", type=int, default=[256, 128])
    parser.add_argument("--style-size", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, _ = load_arbitrary(None)
    model.eval()
    feats = model.encode(pad_to_multiple(load_photo(args.photo), model.config.multiple))
    print("level    painting          keys → N    merged: mean / std err   strided: mean / std err   merge CPU ms")
    for path in args.paintings:
        painting = painting_tensor(painting_image(path, None), args.style_size)
        style = model.encode(painting)
        code = model.encode_style_features(style)
        for level in model.config.levels:
            block, qk = model.transfer[level], model.config.qk_dim
            half = block.head_dim // 2
            q = block._heads(block.q_proj(tokens(model.key_features(feats, level))), qk)[..., :qk]
            full = code[level]
            want = statistics64(q, full.k[..., :qk], full.v, None, half)
            for n in args.tokens:
                c0 = time.process_time()
                merged = merge_style_level(full, n, qk)
                spent = (time.process_time() - c0) * 1e3
                strided = block.encode_style(subsample_grid(style[level], n),
                                             subsample_grid(model.key_features(style, level), n))
                got_m = statistics64(q, merged.k[..., :qk], merged.v, merged.bias, half)
                got_s = statistics64(q, strided.k[..., :qk], strided.v, None, half)
                print(f"{level}  {path.split('/')[-1]:16} {full.k.shape[2]:5} → {n:<5} {error(got_m, want):>20}"
                      f"   {error(got_s, want):>20} ({strided.k.shape[2]} tokens)   {spent:6.0f}", flush=True)


if __name__ == "__main__":
    main()
