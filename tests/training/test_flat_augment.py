"""training/flat.py: the flat patch is a blur of the crop in one rectangle, the rest untouched;
TrainConfig and train_plan accept the knob."""
import pytest
import torch

from styleforge.training.config import TrainConfig
from styleforge.training.flat import FACTOR, SIDE, flatten_patches


def textured(b=4, size=64):
    return torch.rand(b, 3, size, size, generator=torch.Generator().manual_seed(3)) * 255


def test_share_one_flattens_one_rectangle_per_crop():
    x = textured()
    y = flatten_patches(x, 1.0, torch.Generator().manual_seed(0))
    changed = (y != x).any(dim=1)                      # (B, H, W)
    for mask in changed:
        rows, cols = mask.any(dim=1).nonzero(), mask.any(dim=0).nonzero()
        height, width = int(rows.max() - rows.min() + 1), int(cols.max() - cols.min() + 1)
        assert SIDE[0] * 64 - 1 <= height <= SIDE[1] * 64 and SIDE[0] * 64 - 1 <= width <= SIDE[1] * 64
        assert mask.sum() > 0.9 * height * width       # a filled rectangle, not scattered pixels
    # inside the patch the texture is gone (white noise std ~74 → the blur's few units), colour kept
    inside = y[changed.unsqueeze(1).expand_as(y)]
    assert inside.std() < 74 / FACTOR
    assert abs(float(inside.mean()) - 127.5) < 10


def test_share_zero_and_seed():
    x = textured()
    assert flatten_patches(x, 0.0, torch.Generator().manual_seed(0)) is x
    a = flatten_patches(x, 0.5, torch.Generator().manual_seed(5))
    b = flatten_patches(x, 0.5, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    touched = [bool((flatten_patches(x, 0.5, torch.Generator().manual_seed(s)) != x).any(dim=(1, 2, 3)).sum() < 4)
               for s in range(8)]
    assert any(touched)                                # share 0.5 leaves some crops alone


def test_config_range():
    assert TrainConfig(flat_augment=0.5).flat_augment == 0.5
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="flat_augment"):
            TrainConfig(flat_augment=bad)


def test_plan_accepts_the_knob(monkeypatch):
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "dev" / "train_plan.py"
    spec = importlib.util.spec_from_file_location("train_plan", path)
    plan = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(__import__("sys").modules, "train_plan", plan)   # its dataclass looks itself up
    spec.loader.exec_module(plan)
    variant = plan.parse_variant({"name": "udnie_flat", "style": "udnie", "flat_augment": 0.5})
    assert variant.settings == {"flat_augment": 0.5}
