"""`styleforge bench --cpu`: the ISA oneDNN reports, the photos, the timing loop (its deadline and
progress calls), the shared metrics module loaded from a path (or its absence reported as None),
the provider filter and its order, and, on a tiny style at 32 px, rows in cpu.csv as soon as each
is measured (a run dying later keeps them), skipped rows for what the time budget left unstarted,
and the PSNR of a row run before ours-fp32 (against PyTorch fp32 computed untimed)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from styleforge.bench.cpu import load_metrics, onednn_isa, photos, time_calls
from styleforge.engine.openvino_runner import openvino_available


def test_photos_have_the_asked_longer_side():
    images = photos(128)
    assert len(images) == 3 and all(max(p.shape[:2]) == 128 and p.shape[2] == 3 for p in images)


def test_time_calls_warms_each_input_then_times_every_round():
    calls = []
    outputs, samples = time_calls(lambda x: calls.append(x) or x * 2, [1, 2], reps=3)
    assert outputs == [2, 4] and len(samples) == 6 and calls == [1, 2] * 4


def test_time_calls_reports_each_timed_calls_cpu_time():
    cpu: list[float] = []

    def spin(n):
        return sum(i * i for i in range(n))
    _, samples = time_calls(spin, [200_000], reps=2, cpu_samples=cpu)
    assert len(cpu) == len(samples) == 2
    assert all(c > 1.0 for c in cpu)       # a busy loop of ~10 ms uses CPU time, not sleep


def test_metrics_module_is_loaded_from_its_path(tmp_path):
    module = tmp_path / "style_metrics.py"
    module.write_text("DATA = 'somewhere'\ndef metrics(photo, out, style):\n    return 0.5, 0.1\n")
    assert load_metrics(str(module)).metrics(None, None, None) == (0.5, 0.1)
    assert load_metrics(str(tmp_path / "absent.py")) is None


@pytest.mark.slow
def test_onednn_isa_follows_the_cap(monkeypatch):
    native = onednn_isa()
    assert not native.startswith("unknown"), native
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "SSE41")
    assert onednn_isa() == "Intel SSE4.1"


def test_arbitrary_variants_run_at_their_internal_size():
    from styleforge.bench.cpu_arbitrary import SIDE, VARIANTS, stroke_scale
    from styleforge.engine.stroke import internal_size
    for variant in VARIANTS:
        assert internal_size(SIDE, 341, stroke_scale(variant))[0] == variant.internal


def test_arbitrary_variant_labels_name_the_engine_pass_sizes():
    # A row names the path the engine ran: OpenVINO's two passes start at its early pass size.
    import torch

    from styleforge.bench.cpu_arbitrary import SIDE, VARIANTS
    from styleforge.engine.arbitrary import OPENVINO_EARLY_PASS_SCALE, early_size
    first = early_size(torch.zeros(1, 3, SIDE, SIDE), OPENVINO_EARLY_PASS_SCALE)[0]
    from styleforge.engine.arbitrary_openvino import STYLE_TOKENS
    labels = {v.label: v for v in VARIANTS}
    # ... and how many keys per head the painting's code was merged to (the default: one count).
    (tokens,) = set(STYLE_TOKENS.values())
    assert labels[f"openvino-int8-2pass-{first}-{SIDE}-k{tokens}"].first_pass == first < SIDE
    assert labels[f"openvino-int8-2pass-{first}-{SIDE}-k{tokens}"].style_tokens == STYLE_TOKENS
    assert labels[f"torch-fp32-2pass-{SIDE}"].first_pass == SIDE
    assert labels[f"torch-fp32-2pass-{SIDE}"].style_tokens == {}
    assert all(v.first_pass == v.internal for v in VARIANTS if v.passes == 1)


def test_time_calls_stops_its_rounds_at_the_deadline_and_reports_each_call():
    from styleforge.bench.progress import Deadline
    ticks = []
    outputs, samples = time_calls(lambda x: x * 2, [1, 2], reps=3, deadline=Deadline(0.0),
                                  progress=lambda: ticks.append(1))
    assert outputs == [2, 4] and len(samples) == 2      # the warm-up and one round, not three
    assert len(ticks) == 4


def test_cpu_list_is_written_as_taskset_writes_it():
    from styleforge.bench.cpu_host import cpu_list
    assert cpu_list({7, 2, 3, 4}) == "2-4,7" and cpu_list({5}) == "5" and cpu_list(set()) == ""


def test_providers_are_filtered_by_name_and_kept_in_the_listed_order():
    from styleforge.bench.cpu import PEER, PROVIDERS, CpuBenchConfig, parse_providers
    assert parse_providers(f"{PEER}, ours-openvino-int8,{PEER}") == (PEER, "ours-openvino-int8")
    assert parse_providers(None) == parse_providers("") == PROVIDERS
    with pytest.raises(ValueError, match="more than once"):
        CpuBenchConfig(providers=("ours-fp32", "ours-fp32"))
    with pytest.raises(ValueError, match="unknown ours-fast"):
        parse_providers("ours-fp32,ours-fast")
    with pytest.raises(ValueError, match="unknown CPU providers"):
        CpuBenchConfig(providers=("ours-fast",))
    with pytest.raises(ValueError, match="--time-budget"):
        CpuBenchConfig(time_budget=0)


def test_the_bench_help_names_every_provider(capsys, monkeypatch):
    from styleforge.bench.cpu import PROVIDERS
    from styleforge.cli import main
    monkeypatch.setenv("COLUMNS", "10000")     # argparse wraps at hyphens otherwise
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    listed = text.split("--cpu: comma list of ", 1)[1].split(" (default", 1)[0]
    assert tuple(name.strip() for name in listed.split(",")) == PROVIDERS


@pytest.fixture
def quick_bench(styles_env, monkeypatch, tmp_path):
    """A CpuBench config on a tiny random style at 32 px, one round, no style metrics; the oneDNN
    probe (a child process importing torch) answered without running."""
    from styleforge.bench import cpu
    monkeypatch.setattr(cpu, "onednn_isa", lambda: "test ISA")

    def config(**fields):
        return cpu.CpuBenchConfig(style="alpha", sizes=(32,), reps=1, style_metrics=str(tmp_path / "absent.py"),
                                  output=str(tmp_path / "results"), heartbeat=0, **fields)
    return config


def test_each_row_is_in_the_csv_before_the_next_provider_starts(quick_bench, monkeypatch, tmp_path):
    # A run that dies in the peer (a kill, a crash) keeps ours-fp32's row, stamped with the run id.
    from styleforge.bench import cpu
    from styleforge.bench.results import read_rows
    seen = []

    def dies(self):
        seen.extend(read_rows(tmp_path / "results", "cpu"))
        raise RuntimeError("killed")
    monkeypatch.setattr(cpu.CpuBench, "peer", dies)
    bench = cpu.CpuBench(quick_bench(providers=("ours-fp32", cpu.PEER)), log=lambda line: None)
    with pytest.raises(RuntimeError, match="killed"):
        bench.run()
    stored = read_rows(tmp_path / "results", "cpu")
    assert stored == seen and [r["provider"] for r in stored] == ["ours-fp32"]
    (row,) = bench.rows
    assert stored[0]["run_id"] == bench.run_id != "" and stored[0]["status"] == "ok"
    assert float(stored[0]["median_ms"]) == pytest.approx(row.median_ms, rel=1e-3)
    assert row.notes["torch_threads"] == 2 and row.notes["affinity"]


def test_a_run_keeps_only_the_asked_providers_and_says_why_one_is_skipped(quick_bench, monkeypatch, tmp_path):
    import sys

    from styleforge.bench import cpu
    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)
    lines = []
    rows, files = cpu.run_cpu_bench(quick_bench(providers=("ours-fp32", "ours-fp32-onnxruntime-loaded")),
                                    log=lines.append)
    assert [(r.provider, r.status) for r in rows] == [("ours-fp32", "ok"),
                                                      ("ours-fp32-onnxruntime-loaded", "skipped")]
    assert "onnxruntime is not loaded" in rows[1].error
    assert files == [tmp_path / "results" / "cpu.csv"]
    assert any(line.endswith("ours-fp32 32 px …") for line in lines)    # where a killed run's log ends


def test_what_the_time_budget_leaves_unstarted_is_a_skipped_row(quick_bench):
    from styleforge.bench import cpu
    rows, _ = cpu.run_cpu_bench(quick_bench(providers=("ours-fp32", cpu.PEER), time_budget=1e-9),
                                log=lambda line: None)
    assert [(r.provider, r.status) for r in rows] == [("ours-fp32", "skipped"), (cpu.PEER, "skipped")]
    assert all("--time-budget" in r.error for r in rows)


def test_the_cli_runs_the_asked_providers_only(quick_bench, tmp_path):
    from styleforge.bench.results import read_rows
    from styleforge.cli import main
    args = ["bench", "--cpu", "--cpu-providers", "ours-fp32", "--sizes", "32", "--reps", "1", "--style", "alpha",
            "--style-metrics", str(tmp_path / "absent.py"), "--output", str(tmp_path / "results"),
            "--run-id", "test-run", "--time-budget", "600"]
    assert main(args) == 0
    assert [(r["provider"], r["run_id"]) for r in read_rows(tmp_path / "results", "cpu")] == [("ours-fp32", "test-run")]
    assert main(args[:3] + ["ours-fast"] + args[4:]) == 2


def test_arbitrary_rows_are_appended_as_each_variant_is_measured(monkeypatch, tmp_path):
    from styleforge.bench import cpu_arbitrary
    from styleforge.bench.results import Row, read_rows
    metrics = tmp_path / "style_metrics.py"
    metrics.write_text("DATA = 'somewhere'\n")
    done = []

    def measure(variant, *args, **kwargs):
        if done:
            raise RuntimeError("killed")
        done.append(variant.label)
        return Row(kind="cpu", provider=f"ours-arbitrary-{variant.label}", op="stylize-arbitrary", median_ms=1234.5)
    monkeypatch.setattr(cpu_arbitrary, "measure", measure)
    labels = [v.label for v in cpu_arbitrary.VARIANTS[:2]]
    argv = ["--photos", "p.jpg", "--paintings", "q.jpg", "--style-metrics", str(metrics),
            "--output", str(tmp_path / "results"), "--variants", *labels]
    with pytest.raises(RuntimeError, match="killed"):
        cpu_arbitrary.main(argv)
    (row,) = read_rows(tmp_path / "results", "cpu")
    assert row["provider"] == f"ours-arbitrary-{labels[0]}" and row["median_ms"] == "1234" and row["run_id"]
    with pytest.raises(SystemExit):
        cpu_arbitrary.main(argv[:-2] + ["torch-fp32-9pass-512"])


def test_equal_outputs_reuse_the_fp32_style_ratios(quick_bench, monkeypatch, tmp_path):
    # PyTorch fp32 again beside another runtime gives fp32's outputs: its ratios are not scored again.
    import sys
    import types

    from styleforge.bench import cpu
    metrics = tmp_path / "fake_metrics.py"
    metrics.write_text("DATA = 'nowhere'\ncalls = []\ndef load(path, side):\n    return 'painting'\n"
                       "def metrics(photo, out, style):\n    calls.append(1)\n    return 0.5, 0.1\n")
    monkeypatch.setitem(sys.modules, "onnxruntime", types.ModuleType("onnxruntime"))
    config = replace(quick_bench(providers=("ours-fp32", "ours-fp32-onnxruntime-loaded")),
                     style_metrics=str(metrics), painting="candy.jpg")
    bench = cpu.CpuBench(config, log=lambda line: None)
    first, again = bench.run()
    assert len(bench.metrics.calls) == 3                 # the three photos, once
    assert first.notes["style_ratio"] == again.notes["style_ratio"] == 0.5
    assert again.notes["style_ratio_of"] == "ours-fp32: equal outputs" and again.psnr_db == float("inf")


def test_a_row_run_before_ours_fp32_gets_the_same_psnr_from_an_untimed_reference(quick_bench, monkeypatch):
    # bf16 (emulated here: fine at 32 px) is a row that needs PyTorch fp32 for its PSNR.
    from styleforge.bench import cpu
    from styleforge.engine import backends
    monkeypatch.setattr(backends, "cpu_has_native_bf16", lambda: True)
    first, _ = cpu.run_cpu_bench(quick_bench(providers=("ours-fp32", "ours-bf16")), log=lambda line: None)
    lines = []
    bench = cpu.CpuBench(quick_bench(providers=("ours-bf16", "ours-fp32")), log=lines.append)
    bf16, fp32 = bench.run()
    assert (bf16.provider, fp32.provider) == ("ours-bf16", "ours-fp32")
    assert 20 < first[1].psnr_db < float("inf") and bf16.psnr_db == first[1].psnr_db
    assert "untimed" in bf16.notes["psnr_reference"]
    assert sum("PSNR reference, PyTorch fp32 (untimed" in line for line in lines) == 1
    # The timed fp32 row equals the untimed reference, which it leaves as it was.
    assert fp32.psnr_db == float("inf") and "psnr_reference" in fp32.notes
    # Neither row loads a runtime: the note names only those an earlier test left imported.
    import sys
    assert bf16.notes["runtimes_loaded"] == (",".join(r for r in cpu.RUNTIMES if r in sys.modules) or "none")


def test_the_untimed_reference_is_not_started_once_the_budget_is_spent(quick_bench, monkeypatch):
    from styleforge.bench import cpu
    from styleforge.bench.progress import Deadline
    from styleforge.engine import backends
    monkeypatch.setattr(backends, "cpu_has_native_bf16", lambda: True)
    lines = []
    bench = cpu.CpuBench(quick_bench(providers=("ours-bf16", "ours-fp32"), time_budget=600), log=lines.append)
    timed = cpu.time_calls

    def spends_the_budget(*args, **kwargs):
        out = timed(*args, **kwargs)
        bench.deadline = Deadline(0.0)        # the budget runs out during the timed rounds
        return out
    monkeypatch.setattr(cpu, "time_calls", spends_the_budget)
    bf16, fp32 = bench.run()
    assert bf16.status == "ok" and bf16.psnr_db == "" and "--time-budget" in bf16.notes["psnr"]
    assert fp32.status == "skipped" and not bench.reference
    assert not any("PSNR reference" in line for line in lines)


@pytest.mark.slow
@pytest.mark.skipif(not openvino_available("int8")[0], reason="openvino/nncf not installed")
def test_openvino_int8_before_ours_fp32_gets_the_psnr_it_gets_after_it(quick_bench, monkeypatch, tmp_path):
    from styleforge.bench import cpu
    from styleforge.engine import openvino_runner
    monkeypatch.setenv("STYLEFORGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(openvino_runner, "CALIBRATION_SIDES", (64,))   # fewer, smaller: faster
    after, _ = cpu.run_cpu_bench(quick_bench(providers=("ours-fp32", "ours-openvino-int8")), log=lambda line: None)
    before, _ = cpu.run_cpu_bench(quick_bench(providers=("ours-openvino-int8", "ours-fp32")), log=lambda line: None)
    assert [r.provider for r in before] == ["ours-openvino-int8", "ours-fp32"]
    assert before[0].status == after[1].status == "ok"
    assert 0 < before[0].psnr_db == after[1].psnr_db < float("inf")
    assert before[0].notes["runtimes_loaded"].startswith("openvino")
