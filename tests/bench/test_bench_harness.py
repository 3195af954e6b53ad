"""The benchmark harness on CPU: statistics, the correctness gate, rows, plots, and the commands.

Everything runs at toy sizes (32² frames, tiny op tensors) so it fits the CI budget; the GPU
numbers themselves come from the device run described in docs/benchmarking.md.
"""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from styleforge.bench import endtoend, harness, ops, results, training
from styleforge.bench.cases import OpCase
from styleforge.bench.harness import (
    Gate,
    Timer,
    check_image,
    check_tensor,
    summarize,
    time_then_gate,
)
from styleforge.cli import main

CPU = torch.device("cpu")


# --- statistics and timing ---------------------------------------------------------------------

@pytest.mark.parametrize("samples", [[5.0, 1.0, 3.0, 2.0, 4.0], list(np.random.default_rng(0).random(37))])
def test_summary_quantiles_match_numpy(samples):
    stats = summarize(samples, "test")
    assert stats.median_ms == pytest.approx(np.percentile(samples, 50))
    assert stats.p20_ms == pytest.approx(np.percentile(samples, 20))
    assert stats.p80_ms == pytest.approx(np.percentile(samples, 80))
    assert stats.p20_ms <= stats.median_ms <= stats.p80_ms and stats.reps == len(samples)


def test_summary_of_known_samples():
    stats = summarize([float(v) for v in range(1, 11)])   # 1..10: ranks interpolate linearly
    assert (stats.median_ms, stats.p20_ms, stats.p80_ms) == pytest.approx((5.5, 2.8, 8.2))


def test_timer_warms_up_then_times_every_rep_and_rotates_inputs():
    inputs = [torch.full((2,), float(i)) for i in range(3)]
    seen = []
    stats = Timer(CPU, reps=7, warmup=2, min_warmup_s=0.0).time(lambda x: seen.append(int(x[0])), inputs)
    assert stats.reps == 7 and stats.timer == "perf_counter" and stats.median_ms >= 0
    assert len(seen) == 2 + 7
    assert set(seen) == {0, 1, 2}


def test_random_images_are_not_constant_and_stay_in_range():
    a, b = harness.random_images(2, 1, 32, 48, CPU, seed=3)
    assert a.shape == (1, 3, 32, 48) and a.dtype == torch.float32
    assert 0 <= a.min() and a.max() <= 255 and a.std() > 10
    assert not torch.equal(a, b)
    assert torch.equal(a, harness.random_images(1, 1, 32, 48, CPU, seed=3)[0])


def test_rotation_only_when_the_input_fits_in_cache():
    assert harness.rotation_count(1 << 20, CPU) > 1
    assert harness.rotation_count(1 << 30, CPU) == 1


# --- the correctness gate ----------------------------------------------------------------------

def test_image_gate_rules():
    ref = harness.random_images(1, 1, 32, 32, CPU)[0]
    assert check_image(ref.clone(), ref, torch.float32).ok
    rounded = ref.to(torch.bfloat16).float()
    gate = check_image(rounded, ref, torch.bfloat16)
    assert gate.ok and gate.psnr_db > 40
    assert not check_image(rounded, ref, torch.float32).ok      # bf16 error is not fp32-exact
    wrong = check_image(ref + 20.0, ref, torch.bfloat16)
    assert not wrong.ok and "PSNR" in wrong.message
    assert not check_image(ref[..., :16], ref, torch.float32).ok
    assert not check_image(ref * float("nan"), ref, torch.float32).ok


def test_a_wrong_provider_is_failed_and_carries_no_time():
    ref = torch.ones(8)
    timed = []
    outcome = time_then_gate(lambda: ref * 2, lambda out: check_tensor(out, ref, 1e-3),
                             lambda: timed.append(1) or summarize([1.0]))
    assert outcome.status == "failed" and "rel L2" in outcome.error
    assert outcome.stats is None and timed == [1]

    def crash():
        raise RuntimeError("kernel exploded")
    outcome = time_then_gate(crash, lambda out: Gate(True), lambda: timed.append(2))
    assert outcome.status == "failed" and "kernel exploded" in outcome.error and timed == [1]


# --- ops ---------------------------------------------------------------------------------------

def _fake_case() -> OpCase:
    x = torch.randn(64, 64)
    return OpCase("double", "64x64", torch.float32, reference=lambda: x.double() * 2,
                  providers={"torch": lambda: x * 2, "wrong": lambda: x * 3,
                             "crashes": lambda: torch.mm(x, torch.ones(3, 3))},
                  bytes_moved=2 * x.numel() * 4, flops=x.numel(), rel_tol=1e-6)


def test_op_case_gate_and_rates():
    ceilings = ops.Ceilings(copy_gbps=10.0, matmul_tflops=1.0)
    rows = {r.provider: r for r in ops.run_case(_fake_case(), CPU, reps=3, ceilings=ceilings)}
    assert rows["torch"].status == "ok" and rows["torch"].gbps > 0 and rows["torch"].rel_err <= 1e-6
    expected = rows["torch"].tflops / ceilings.roofline_tflops(rows["torch"].intensity)
    assert rows["torch"].fraction_of_ceiling == pytest.approx(expected)
    assert rows["wrong"].status == "failed" and rows["wrong"].median_ms == ""
    assert rows["crashes"].status == "failed" and "RuntimeError" in rows["crashes"].error


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_run_ops_measures_ceilings_first_and_reports_broken_modules():
    rows = ops.run_ops(CPU, reps=2, quick=True, cases=[_fake_case()])
    ceilings = [r for r in rows if r.kind == "ceiling"]
    assert [r.op for r in ceilings] == ["copy", "matmul"] and rows[:2] == ceilings
    assert ceilings[0].gbps > 0 and ceilings[1].tflops > 0
    _, failures = ops.load_cases(["styleforge.bench.op_does_not_exist"], CPU, quick=True)
    assert failures[0].status == "failed" and "op_does_not_exist" in failures[0].error


# --- rows --------------------------------------------------------------------------------------

def test_rows_append_as_csv_with_environment(tmp_path):
    row = results.Row("e2e", "eager-fp32", median_ms=1.23456, batch=2, notes={"style": "x"})
    row.stamp("run-a", "cpu")
    results.append_rows([row], tmp_path)
    results.append_rows([results.Row("e2e", "compile", status="skipped", error="needs CUDA").stamp("run-b", "cpu")],
                        tmp_path)
    with (tmp_path / "e2e.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        records = list(reader)
    assert tuple(reader.fieldnames) == results.COLUMNS
    assert [r["provider"] for r in records] == ["eager-fp32", "compile"]
    first = records[0]
    assert first["median_ms"] == "1.235" and first["batch"] == "2" and json.loads(first["notes"]) == {"style": "x"}
    assert first["torch"] == torch.__version__ and first["commit"] and first["timestamp"].endswith("+00:00")
    assert records[1]["status"] == "skipped" and records[1]["error"] == "needs CUDA"
    assert [r["provider"] for r in results.latest_run(results.read_rows(tmp_path, "e2e"))] == ["compile"]
    again = results.row_from_record(first)
    assert (again.median_ms, again.batch, again.notes, again.fps) == (1.235, 2, {"style": "x"}, "")


def test_old_csv_is_widened_not_broken(tmp_path):
    (tmp_path / "training.csv").write_text("kind,provider,status,legacy\ntraining,eager,ok,1\n")
    results.append_rows([results.Row("training", "compile").stamp("r", "cpu")], tmp_path)
    rows = results.read_rows(tmp_path, "training")
    assert [r["provider"] for r in rows] == ["eager", "compile"] and rows[0]["legacy"] == "1"


def test_training_rows_from_a_measure_function():
    def measure(**kw):
        assert kw["batch_size"] == 8 and kw["image_size"] == 256
        return {"images_per_s": 400.0, "ms_per_step": 20.0, "dtype": "bfloat16", "steps": 50}

    row = training.run_training("cpu", measure=measure)
    assert (row.status, row.fps, row.median_ms, row.dtype) == ("ok", 400.0, 20.0, "bfloat16")

    def broken(**kw):
        raise RuntimeError("no VGG")
    assert training.run_training("cpu", measure=broken).status == "failed"


# --- plots and commands ------------------------------------------------------------------------

@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_plot_files_from_rows(tmp_path):
    pytest.importorskip("matplotlib")
    from styleforge.bench.plot import plot_results
    rows = ops.run_ops(CPU, reps=2, quick=True, cases=[_fake_case()])
    for shape, fps in (("1x3x32x32", 100.0), ("1x3x64x64", 40.0)):
        rows.append(results.Row("e2e", "eager-fp32", size=shape[-2:], shape=shape, batch=1, fps=fps))
    results.append_rows([r.stamp("run-1", "cpu") for r in rows], tmp_path)
    paths = plot_results(tmp_path)
    assert {p.name for p in paths} == {"throughput.png", "roofline.png"}
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_plot_without_matplotlib_says_how_to_install(monkeypatch, tmp_path):
    import sys

    from styleforge.bench.plot import PlotUnavailable, plot_results
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotUnavailable, match=r"pip install 'styleforge\[plot\]'"):
        plot_results(tmp_path)


@pytest.mark.slow
def test_bench_command_end_to_end_on_cpu(tmp_path, capsys):
    code = main(["bench", "--device", "cpu", "--sizes", "32", "--providers", "eager-fp32,eager-bf16",
                 "--reps", "3", "--output", str(tmp_path)])
    assert code == 0
    rows = results.read_rows(tmp_path, "e2e")
    assert [(r["provider"], r["status"]) for r in rows] == [("eager-fp32", "ok"), ("eager-bf16", "ok")]
    assert all(float(r["median_ms"]) > 0 and r["shape"] == "1x3x32x32" and r["reps"] == "3" for r in rows)
    capsys.readouterr()
    markdown = tmp_path / "e2e.md"
    assert main(["bench", "--report", "--output", str(tmp_path), "--markdown", str(markdown)]) == 0
    printed = capsys.readouterr().out                                   # re-printed, nothing measured
    assert "eager-bf16" in printed and "End to end" in printed
    table = markdown.read_text().splitlines()
    assert table[0] == "| size | eager-fp32 | eager-bf16 |"           # the summary pivot first
    assert table[2].startswith("| 32 | ") and float(table[2].split("|")[2]) > 0
    detail = table.index("| size | provider | ms/frame | frames/s | TFLOP/s | peak MB | × eager | "
                         "× best compile | status |")
    assert table[detail + 2].startswith("| 32 | eager-fp32 |")
    assert len(results.read_rows(tmp_path, "e2e")) == 2


@pytest.mark.slow
def test_gpu_only_providers_are_skipped_on_cpu_with_a_reason(tmp_path, capsys):
    code = main(["bench", "--device", "cpu", "--sizes", "32",
                 "--providers", "compile-default-fp16,fused-bf16,fused-fp32",
                 "--reps", "1", "--output", str(tmp_path)])
    assert code == 0
    rows = results.read_rows(tmp_path, "e2e")
    assert {r["status"] for r in rows} == {"skipped"} and all("CUDA" in r["error"] for r in rows)
    assert "skipped" in capsys.readouterr().out


def test_bench_rejects_unknown_sizes_and_providers(tmp_path):
    assert main(["bench", "--device", "cpu", "--sizes", "huge", "--output", str(tmp_path)]) == 2
    assert main(["bench", "--device", "cpu", "--providers", "magic", "--output", str(tmp_path)]) == 2
    assert endtoend.parse_sizes("256,1080p,1280x720") == [
        endtoend.Size("256", 256, 256), endtoend.Size("1080p", 1080, 1920), endtoend.Size("1280x720", 720, 1280)]


@pytest.mark.slow
def test_profile_command_writes_a_chrome_trace(tmp_path):
    trace = tmp_path / "trace.json"
    assert main(["profile", "--device", "cpu", "--size", "32", "--warmup", "1", "--output", str(trace)]) == 0
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == "styleforge.profile" for e in events)


def test_bench_training_flag_goes_through_the_training_package(tmp_path, monkeypatch):
    calls = []

    def fake_measure(**kw):
        calls.append(kw)
        return {"images_per_s": 123.0, "ms_per_step": 65.0, "precision": "bfloat16", "loss_finite": True}

    monkeypatch.setattr(training, "_default_measure", lambda: fake_measure)
    assert main(["bench", "--device", "cpu", "--training", "--train-steps", "3", "--output", str(tmp_path)]) == 0
    assert calls[0]["steps"] == 3 and calls[0]["batch_size"] == 8 and calls[0]["image_size"] == 256
    (row,) = results.read_rows(tmp_path, "training")
    assert (row["status"], row["fps"], row["dtype"]) == ("ok", "123", "bfloat16")
    assert not results.read_rows(tmp_path, "e2e")           # --training alone runs no e2e table
