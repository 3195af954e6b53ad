"""`training/samples.network_photo`: the photo the dev tools score is the file's pixels, shrunk only
when it is larger than asked, and cropped (never padded) to the network's stride of 4."""
import numpy as np
import torch
from PIL import Image

from styleforge.training.samples import network_photo


def test_network_photo_crops_to_the_stride_and_keeps_the_pixels(tmp_path):
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (37, 50, 3), dtype=np.uint8)       # H=37, W=50: neither ÷ 4
    Image.fromarray(pixels).save(tmp_path / "p.png")
    x = network_photo(tmp_path / "p.png", max_side=64)                # no shrink
    assert x.shape == (1, 3, 36, 48) and x.dtype == torch.float32
    assert torch.equal(x[0].permute(1, 2, 0), torch.from_numpy(pixels[:36, :48]).float())
    small = network_photo(tmp_path / "p.png", max_side=25)           # 25 × 18 → 24 × 16
    assert small.shape == (1, 3, 16, 24)
