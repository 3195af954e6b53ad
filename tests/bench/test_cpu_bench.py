"""`styleforge bench --cpu` helpers: the ISA oneDNN reports, the photos, the timing loop, and the
shared metrics module loaded from a path (or its absence reported as None)."""
from __future__ import annotations

import pytest

from styleforge.bench.cpu import load_metrics, onednn_isa, photos, time_calls


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
