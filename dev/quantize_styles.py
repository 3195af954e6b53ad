"""Re-write style weights as int8 per-channel files and measure what that costs.

    python dev/quantize_styles.py styleforge/styles/*.safetensors --out-dir styleforge/styles

For each fp16/fp32 style file: quantise (`models.int8`: conv kernels int8 with one fp16 scale per
output channel, biases and norm affines fp16), stylize the held-out asset photos (at most 512 px,
fp32 reference forward) with both weights and record the PSNR of the int8 output against the
original's (dB, over all photos' pixels) as `int8_psnr_db` in the new file's metadata, beside
every metadata field the source had. A file that is already int8 is skipped. A dev tool, used by
dev/train_builtin.py after each style and by hand; not imported by the package.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from styleforge.models.checkpoint import build_model, load_checkpoint, save_checkpoint  # noqa: E402
from styleforge.models.int8 import INT8_FORMAT  # noqa: E402
from styleforge.training.samples import default_photos, network_photo  # noqa: E402

MAX_SIDE = 512


def photo_tensors(paths) -> list[torch.Tensor]:
    return [network_photo(path, MAX_SIDE) for path in paths]


@torch.no_grad()
def psnr(a_model, b_model, photos, device: str) -> float:
    """PSNR (dB) of b's clamped, rounded outputs against a's, over all photos' pixels."""
    se, n = 0.0, 0
    for x in photos:
        x = x.to(device)
        a = a_model(x).clamp(0, 255).round()
        b = b_model(x).clamp(0, 255).round()
        se += float((a - b).double().pow(2).sum())
        n += a.numel()
    mse = se / n
    return math.inf if mse == 0 else 10 * math.log10(255 ** 2 / mse)


def quantize_file(src: Path, dst: Path, photos: list[torch.Tensor], device: str = "cpu") -> float | None:
    """Write `dst` as int8 with its measured PSNR; None (and nothing written) if `src` is int8."""
    checkpoint = load_checkpoint(src)
    if checkpoint.metadata.get("quantization") == INT8_FORMAT:
        return None
    tmp = dst.with_name(f".{dst.stem}.int8.safetensors")
    meta = {k: v for k, v in checkpoint.metadata.items() if k != "quantization"}
    save_checkpoint(tmp, checkpoint.state_dict, meta, int8=True)
    quantized = load_checkpoint(tmp)
    value = psnr(build_model(checkpoint).to(device), build_model(quantized).to(device), photos, device)
    meta["int8_psnr_db"] = f"{value:.2f}"
    meta["int8_psnr_photos"] = f"{len(photos)} held-out asset photos, longer side {MAX_SIDE} px, fp32"
    save_checkpoint(dst, quantized.state_dict, meta, int8=True)   # re-quantising int8 values is exact
    tmp.unlink()
    return value


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--out-dir", required=True, help="where the int8 files go (may be the source folder)")
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    photos = photo_tensors(default_photos())
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in args.files:
        src = Path(name)
        value = quantize_file(src, out_dir / src.name, photos, args.device)
        print(f"{src.name}: " + ("already int8, skipped" if value is None else
                                 f"int8 PSNR {value:.2f} dB, {(out_dir / src.name).stat().st_size / 1e6:.2f} MB"),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
