"""The end-to-end bench on CPU: what is gated is what was timed, inputs are prepared outside the
timed calls, cuDNN's autotuner is on, speed-ups are precision-matched, and the time budget holds.

The fake providers wrap the real eager model (the gate and the timer are the things under test)."""
from __future__ import annotations

import pytest
import torch

from styleforge.bench import endtoend, providers
from styleforge.bench.harness import Timer
from styleforge.bench.providers import Built
from styleforge.bench.results import Row

CPU = torch.device("cpu")
SIZE = endtoend.Size("32", 32, 32)
REPS, WARMUP = 3, 2
CHECKPOINT = endtoend.random_style_checkpoint()


def _timer() -> Timer:
    return Timer(CPU, reps=REPS, warmup=WARMUP, min_warmup_s=0.0)


def _run(monkeypatch, wrap, names=("eager-fp32",)) -> tuple[list[Row], list]:
    """run_size with each provider's timed callable wrapped by wrap(built, calls)."""
    real = providers.build_provider
    calls: list = []

    def build(provider, checkpoint, device):
        built = real(provider, checkpoint, device)
        return Built(built.prepare, wrap(built, calls), built.describe)

    monkeypatch.setattr(endtoend, "build_provider", build)
    rows = endtoend.run_size(SIZE, CHECKPOINT, CPU, list(names), 1, _timer())
    return rows, calls


def test_gate_checks_the_warmed_callable_not_its_first_call(monkeypatch):
    # Right on its first call, wrong once warm: a gate that looked at the first call would pass it.
    def wrong_when_warm(built, calls):
        def run(x):
            calls.append(x)
            out = built.run(x)
            return out if len(calls) == 1 else out + 25.0
        return run

    (row,), calls = _run(monkeypatch, wrong_when_warm)
    assert row.status == "failed" and row.error.startswith("timed output:") and "rel L2" in row.error
    assert row.median_ms == "" and row.fps == ""                  # a failed gate carries no time
    assert len(calls) == 1 + WARMUP + REPS + 1                   # the gate ran after the timed calls


@pytest.mark.slow
def test_the_gated_call_is_the_timed_callable_on_the_first_input(monkeypatch):
    def spy(built, calls):
        def run(x):
            calls.append((x, torch.backends.cudnn.benchmark))
            return built.run(x)
        return run

    rows, calls = _run(monkeypatch, spy, ("eager-fp32", "eager-bf16"))
    assert [r.status for r in rows] == ["ok", "ok"] and all(r.median_ms > 0 for r in rows)
    per_provider = len(calls) // 2
    first, last = calls[0][0], calls[per_provider - 1][0]
    assert last is first                                          # gated: the first input, once more
    assert all(benchmark for _, benchmark in calls)               # cuDNN's autotuner on for every call
    assert torch.backends.cudnn.benchmark is False                # and restored after
    assert rows[0].cudnn_benchmark == "" and rows[0].notes["cudnn_benchmark"] is True


@pytest.mark.slow
def test_baselines_get_inputs_prepared_outside_the_timed_call(monkeypatch):
    def spy(built, calls):
        def run(x):
            calls.append((x.dtype, x.is_contiguous(memory_format=torch.channels_last)))
            out = built.run(x)
            calls.append(("out", out.dtype))
            return out
        return run

    (row,), calls = _run(monkeypatch, spy, ("eager-bf16",))
    assert row.status == "ok" and row.psnr_db > 40
    assert set(c for c in calls if c[0] != "out") == {(torch.bfloat16, True)}
    assert set(c for c in calls if c[0] == "out") == {("out", torch.bfloat16)}   # not converted inside


def _row(provider, dtype, ms, status="ok", **notes) -> Row:
    return Row("e2e", provider, status=status, size="512", batch=1, dtype=dtype, median_ms=ms, notes=notes)


def test_speedups_compare_each_precision_with_its_own_best_compile():
    rows = [_row("compile-default-bf16", "bf16", 3.0), _row("compile-max-autotune-bf16", "bf16", 2.0),
            _row("compile-reduce-overhead-fp16", "fp16", 4.0),
            _row("compile-max-autotune-fp16", "fp16", 1.0, status="failed"),
            _row("eager-fp16", "fp16", 8.0), _row("fused-bf16", "bf16", 0.5), _row("fused-fp16", "fp16", 0.5),
            _row("eager-fp32", "fp32", 6.0, tf32_conv=True), _row("fused-fp32", "fp32", 3.0, tf32_conv=False)]
    endtoend.add_speedups(rows)
    by = {r.provider: r for r in rows}
    assert by["fused-bf16"].speedup_vs_compile == pytest.approx(4.0)
    assert by["fused-bf16"].notes["vs_compile"] == "compile-max-autotune-bf16"
    assert by["fused-fp16"].speedup_vs_compile == pytest.approx(8.0)     # the failed fp16 row is no baseline
    assert by["fused-fp16"].notes["vs_compile"] == "compile-reduce-overhead-fp16"
    assert by["fused-fp16"].speedup_vs_eager == pytest.approx(16.0) and by["fused-bf16"].speedup_vs_eager == ""
    assert by["compile-max-autotune-bf16"].notes["best_compile"] is True
    assert "best_compile" not in by["compile-default-bf16"].notes
    assert by["fused-fp32"].speedup_vs_eager == "" and by["fused-fp32"].speedup_vs_compile == ""  # TF32 vs not


def test_provider_selection_and_compile_modes():
    names = providers.select(None, "default,max-autotune")
    compiled = [n for n in names if n.startswith("compile")]
    assert compiled == ["compile-default-bf16", "compile-default-fp16", "compile-max-autotune-bf16",
                        "compile-max-autotune-fp16"]
    assert {"eager-fp32", "eager-bf16", "eager-fp16", "fused-bf16", "fused-fp16"} <= set(names)
    assert providers.PROVIDERS["compile-reduce-overhead-fp16"].dtype == torch.float16
    with pytest.raises(ValueError, match="--compile-modes: unknown fastest"):
        providers.select(None, "fastest")
    with pytest.raises(ValueError, match="unknown compile"):
        providers.select("compile")


def test_providers_not_started_within_the_time_budget_are_skipped():
    rows = endtoend.run_size(SIZE, CHECKPOINT, CPU, ["eager-fp32"], 1, _timer(),
                             deadline=endtoend.Deadline(0.0))
    assert rows[0].status == "skipped" and "--time-budget" in rows[0].error and rows[0].median_ms == ""


def test_gpu_providers_are_skipped_on_cpu_with_a_reason():
    rows = endtoend.run_size(SIZE, CHECKPOINT, CPU,
                             ["compile-max-autotune-fp16", "fused-fp16"], 1, _timer())
    assert [r.status for r in rows] == ["skipped", "skipped"] and all("CUDA" in r.error for r in rows)


@pytest.mark.gpu
@pytest.mark.slow
def test_every_provider_passes_its_timed_gate_on_cuda():
    """On the device: each provider's timed callable (the fused engine's chosen plan's graph, the
    compiled CUDA graphs) matches fp32 at a size the fused plans differ at."""
    device = torch.device("cuda")
    rows = endtoend.run_size(endtoend.Size("256", 256, 256), CHECKPOINT, device,
                             providers.select(None, "default,reduce-overhead"), 1,
                             Timer(device, reps=5, min_warmup_s=0.0))
    failed = [(r.provider, r.error) for r in rows if r.status == "failed"]
    assert not failed
    fused = [r for r in rows if r.provider.startswith("fused") and r.status == "ok"]
    assert fused and all("plan" in r.notes for r in fused if r.dtype != "fp32")
