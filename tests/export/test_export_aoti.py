"""AOTInductor export: the `.pt2` package runs in a fresh Python that never imports styleforge, at
two sizes and two batch sizes, and matches the engine (≥ 45 dB). Compiling it runs g++: minutes."""
import subprocess
import sys

import pytest
import torch

from styleforge.export import ExportOptions, export_model
from styleforge.export.check import MIN_PSNR_DB, photos, psnr, reference_and_inputs

pytestmark = pytest.mark.slow

CASES = ((1, 96, 128), (2, 75, 101))

# The child sees only torch: the package must carry everything it needs.
CHILD = """
import sys, torch
package, inputs, outputs = sys.argv[1:]
model = torch._inductor.aoti_load_package(package)
torch.save([model(x) for x in torch.load(inputs)], outputs)
assert not any(name.startswith("styleforge") for name in sys.modules)
"""


def test_package_runs_in_a_fresh_process_like_the_engine(tmp_path):
    options = ExportOptions(style="candy", format="aoti", output=str(tmp_path / "candy.pt2"), check=False)
    report = export_model(options)
    assert report.path.is_file() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    inputs = [photos(*case) for case in CASES]
    torch.save(inputs, tmp_path / "inputs.pt")
    subprocess.run([sys.executable, "-c", CHILD, str(report.path), str(tmp_path / "inputs.pt"),
                    str(tmp_path / "outputs.pt")], check=True, timeout=900, cwd=tmp_path)
    outputs = torch.load(tmp_path / "outputs.pt")
    reference, _ = reference_and_inputs(options)
    for x, got in zip(inputs, outputs):
        want = reference(x)
        assert got.shape == want.shape
        assert psnr(got, want) >= MIN_PSNR_DB, f"{tuple(x.shape)}: {psnr(got, want):.1f} dB"
