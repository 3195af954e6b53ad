"""GPU: `styleforge stylize --device cuda` in fp32 and bf16 on the shipped photos.

The photos are copied to lossless PNG first, so the comparison measures the engine, not JPEG.
bf16 must stay within PSNR ≥ 40 dB of fp32 — asserted only with a trained built-in style: on
random weights the output is noise-like and PSNR says little about real use.
"""
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import psnr
from PIL import Image

from styleforge.cli import main
from styleforge.commands.styles import ASSETS_DIR
from styleforge.models.registry import STYLES_DIR

pytestmark = pytest.mark.gpu
TRAINED = sorted(STYLES_DIR.glob("*.safetensors"))


@pytest.fixture(scope="module", autouse=True)
def kernels_built():
    """Build (or load) the CUDA kernels in setup: on a cold machine the first CLI call would
    otherwise carry the nvcc build in its own time. No assert: the CLI falls back without them."""
    from styleforge import kernels
    kernels.cuda_kernels_available()


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    for jpg in sorted(ASSETS_DIR.glob("*.jpg")):
        Image.open(jpg).convert("RGB").save(folder / f"{jpg.stem}.png")
    return folder


def run_cli(photos: Path, out: Path, precision: str, style_args: list[str]) -> int:
    shutil.rmtree(out, ignore_errors=True)
    return main(["stylize", str(photos), "-o", str(out), "--device", "cuda", "--keep-names",
                 "--precision", precision, *style_args])


def _style_args(tiny_styles) -> tuple[list[str], bool]:
    if TRAINED:
        name = "candy" if STYLES_DIR.joinpath("candy.safetensors").is_file() else TRAINED[0].stem
        return ["--style", name], True
    return ["--checkpoint", str(tiny_styles / "alpha.safetensors")], False


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cli_runs_on_cuda(photos, tmp_path, tiny_styles, precision):
    args, _ = _style_args(tiny_styles)
    assert run_cli(photos, tmp_path / precision, precision, args) == 0
    for src in sorted(photos.iterdir()):
        out = Image.open(tmp_path / precision / src.name)
        assert out.size == Image.open(src).size


def test_bf16_within_40db_of_fp32_on_real_photos(photos, tmp_path, tiny_styles):
    args, trained = _style_args(tiny_styles)
    if not trained:
        pytest.skip("no trained style in styleforge/styles/: PSNR on random weights is not meaningful")
    assert run_cli(photos, tmp_path / "fp32", "fp32", args) == 0
    assert run_cli(photos, tmp_path / "bf16", "bf16", args) == 0
    for src in sorted(photos.iterdir()):
        a = torch.from_numpy(np.asarray(Image.open(tmp_path / "fp32" / src.name)).copy())
        b = torch.from_numpy(np.asarray(Image.open(tmp_path / "bf16" / src.name)).copy())
        value = psnr(a, b)
        print(f"{src.stem}: bf16 vs fp32 PSNR {value:.2f} dB ({args[1]})")
        assert value >= 40.0, f"{src.name}: bf16 vs fp32 PSNR {value:.2f} dB < 40 dB"
