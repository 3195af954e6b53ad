"""ONNX export: `styleforge export` writes a file that onnxruntime runs like the engine (≥ 45 dB).

One export per model (module fixtures: the exporter takes tens of seconds on a CPU); the checks
then run the file at sizes, batch sizes and edge shapes of their own.
"""
import contextlib
import io

import pytest

from styleforge.cli import main
from styleforge.export.check import MIN_PSNR_DB, check_file
from styleforge.export.options import ExportOptions
from styleforge.export.to_onnx import onnx_runner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def onnx():
    """The onnx module, with onnxruntime and onnxscript present (else the tests skip): imported
    when a test here runs, not when the file is collected, so that the quick tier, which
    deselects every test here, does not pay for importing them."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    return pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def candy_onnx(tmp_path_factory):
    """The built-in candy style through the command, with its printed report."""
    path = tmp_path_factory.mktemp("onnx") / "candy.onnx"
    out = io.StringIO()     # capsys is per test; the export is per module
    with contextlib.redirect_stdout(out):
        code = main(["export", "candy", "--format", "onnx", "-o", str(path)])
    return path, code, out.getvalue()


def test_command_reports_the_check(candy_onnx):
    path, code, printed = candy_onnx
    assert code == 0, printed
    assert path.is_file() and not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    lines = [line for line in printed.splitlines() if "PSNR vs styleforge" in line]
    assert len(lines) == 2 and all(line.rstrip().endswith("ok") for line in lines), printed


@pytest.mark.parametrize("cases", [((1, 96, 128), (2, 75, 101)), ((3, 16, 17), (1, 64, 64))],
                         ids=["two-sizes-two-batches", "min-side-and-multiple-of-4"])
def test_onnxruntime_matches_the_engine(candy_onnx, cases):
    results = check_file(ExportOptions(style="candy"), onnx_runner(candy_onnx[0]), cases)
    for result in results:
        assert result.psnr_db >= MIN_PSNR_DB, result.describe()


def test_graph_is_plain_onnx_with_named_dynamic_axes(candy_onnx, onnx):
    model = onnx.load(str(candy_onnx[0]))
    ops = {node.op_type for node in model.graph.node}
    assert "InstanceNormalization" in ops
    assert {node.domain for node in model.graph.node} <= {"", "ai.onnx"}     # no custom ops
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [18]
    for value in (model.graph.input[0], model.graph.output[0]):
        dims = value.type.tensor_type.shape.dim
        assert [d.dim_param or d.dim_value for d in dims] == ["batch", 3, "height", "width"]
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["styleforge.style"] == "candy" and meta["styleforge.min_side"] == "16"


@pytest.fixture(scope="module")
def arbitrary_onnx(tmp_path_factory):
    from styleforge.export import export_model
    options = ExportOptions(arbitrary=True, style_size=64, output=str(tmp_path_factory.mktemp("onnx") / "a.onnx"))
    return options, export_model(options)


def test_arbitrary_model_exports_with_photo_and_painting(arbitrary_onnx, onnx):
    options, report = arbitrary_onnx
    assert report.input_names == ("photo", "painting")
    assert len(report.checks) == 2 and report.passed, [c.describe() for c in report.checks]
    results = check_file(options, onnx_runner(report.path), [(1, 32, 33), (3, 48, 40)])
    for result in results:
        assert result.psnr_db >= MIN_PSNR_DB, result.describe()
    model = onnx.load(str(report.path))
    painting = model.graph.input[1].type.tensor_type.shape.dim
    assert [d.dim_value for d in painting] == [1, 3, 64, 64]
