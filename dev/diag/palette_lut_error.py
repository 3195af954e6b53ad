"""How far a 3-D colour lookup table of the palette transport lands from the transport itself.

The transport moves each colour on its own (for one image and painting), so it could be tabled:
the strided sample moved through the bases gives every basis' quantiles
(`palette_numpy.sample_maps`), a G×G×G grid over 0–255 goes through the same maps, and every
pixel is read back by trilinear interpolation (`F.grid_sample` on the 5-D table). This prints,
per grid size and strength, the error of that table against the transport (`palette.transport`,
the engine's map) in 0–255 units: max, 99.9th percentile and mean over every value. The
rejected candidate of docs/cpu.md; a dev diagnostic, never imported:

    python dev/diag/palette_lut_error.py --photo P --painting Q [--grids 17 33 65]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn.functional as F

from styleforge.bench.cpu_arbitrary import load_photo
from styleforge.models.arbitrary.palette import encode_palette, transport
from styleforge.models.arbitrary.palette_numpy import _apply, sample_maps


def lut_transport(image: torch.Tensor, code, strength: float, grid: int) -> torch.Tensor:
    """image (1, 3, H, W) 0–255 → the transport read from a grid³ table of it."""
    _, _, h, w = image.shape
    bases, quantiles = code.bases[0].numpy(), code.quantiles[0].numpy()
    maps = sample_maps(np.ascontiguousarray(image[0].reshape(3, -1).numpy()), bases, quantiles)
    axis = torch.linspace(0, 255, grid)
    blue, green, red = torch.meshgrid(axis, axis, axis, indexing="ij")          # (D, H, W) = (b, g, r)
    points = torch.stack([red, green, blue]).reshape(3, -1)
    table = torch.from_numpy(_apply(points.numpy().copy(), bases, maps))
    table = torch.lerp(points, table, strength).reshape(1, 3, grid, grid, grid)
    where = (image.permute(0, 2, 3, 1) / 127.5 - 1).reshape(1, 1, h, w, 3)      # x = r, y = g, z = b
    out = F.grid_sample(table, where, mode="bilinear", padding_mode="border", align_corners=True)
    return out.reshape(1, 3, h, w).clamp(0, 255)


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photo", required=True)
    parser.add_argument("--painting", required=True)
    parser.add_argument("--grids", type=int, nargs="+", default=[17, 33, 65])
    args = parser.parse_args()
    photo = load_photo(args.photo)
    code = encode_palette(load_photo(args.painting))
    for strength in (1.0, 0.25):
        exact = transport(photo, code, strength)
        for grid in args.grids:
            gap = (lut_transport(photo, code, strength, grid) - exact).abs().flatten()
            print(f"strength {strength:4}  grid {grid:3}³  max {gap.max():6.2f}  p99.9 {gap.quantile(0.999):6.2f}"
                  f"  mean {gap.mean():6.3f}")


if __name__ == "__main__":
    main()
