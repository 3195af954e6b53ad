import json

from styleforge.bench.tables_temporal import temporal_summary


def _row(run_id, method, device="cuda", **extra):
    env = {"device": device, "device_name": "GPU X", "driver": "1", "torch": "2", "cuda": "13",
           "commit": "abcdef1234567", "git_dirty": "false"}
    return {"run_id": run_id, "clip": "pan@64x36", "method": method, "warp_error": 0.01,
            "warp_vs_per_frame": 0.5 if method == "temporal" else 1.0, "style_ratio": 0.1,
            "style_change": 0.02, "fps_plain": 100.0, "fps_temporal": 75.0, "fps_ratio": 0.75,
            "env": env, "config": {"style": "candy", "strength": 0.9, "detail_sigma": 0.7}, **extra}


def test_newest_gpu_bench_run_only(tmp_path):
    rows = [_row("old", "temporal"), _row("new", "per-frame"), _row("new", "temporal"),
            _row("cpu", "temporal", device="cpu"), _row("tool", "temporal", tool="dev/eval_warp_styles.py")]
    (tmp_path / "temporal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = temporal_summary(tmp_path)
    assert "run `new`" in text and "GPU X" in text and "abcdef1234" in text
    table = [line for line in text.splitlines() if line.startswith("| pan")]
    assert len(table) == 2                                  # the newest cuda run's two rows only
    assert table[1].endswith("warp ok style ok speed ok |")


def test_no_rows_says_how_to_measure(tmp_path):
    assert "styleforge bench --temporal" in temporal_summary(tmp_path)


def test_stability_run_shown_below_the_timed_run(tmp_path):
    untimed = {"fps_plain": None, "fps_temporal": None, "fps_ratio": None}
    rows = [_row("timed", "per-frame"), _row("timed", "temporal"),
            _row("stab", "per-frame", **untimed), _row("stab", "stability", **untimed)]
    (tmp_path / "temporal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = temporal_summary(tmp_path)
    assert text.index("run `timed`") < text.index("run `stab`")
    assert sum(line.startswith("| pan") for line in text.splitlines()) == 4


def test_footer_names_the_backward_only_flows(tmp_path):
    rows = [_row("a", "per-frame"), _row("a", "temporal")]
    (tmp_path / "temporal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "backward flow only" not in temporal_summary(tmp_path)   # rows before the option: both flows
    for row in rows:
        row["config"]["flow_check"] = False
    (tmp_path / "temporal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "detail σ 0.7, backward flow only._" in temporal_summary(tmp_path)


def test_footer_names_the_share_of_alpha_when_recorded(tmp_path):
    rows = [_row("a", "per-frame"), _row("a", "temporal")]
    for row in rows:
        row["config"].update(flow_check=False, unchecked_trust=0.94)
    (tmp_path / "temporal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "backward flow only (α × 0.94)._" in temporal_summary(tmp_path)


def test_the_newest_timed_run_is_the_headline_whatever_its_flows(tmp_path):
    rows = [_row("both", "per-frame"), _row("both", "temporal"), _row("back", "per-frame"), _row("back", "temporal")]
    for row in rows[2:]:
        row["config"]["flow_check"] = False
    (tmp_path / "temporal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = temporal_summary(tmp_path)
    assert "run `back`" in text and "run `both`" not in text
