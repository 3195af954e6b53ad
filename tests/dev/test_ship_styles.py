"""`dev/ship_styles.py`: the training history it writes into a shipped style file's metadata."""
import importlib.util
import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

TOOL = Path(__file__).resolve().parents[2] / "dev" / "ship_styles.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("ship_styles", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def weights(path: Path, **meta) -> Path:
    save_file({"w": torch.arange(4.0)}, str(path), metadata={"style": "s", **meta})
    return path


def metadata(path: Path) -> dict:
    with safe_open(str(path), "pt") as f:
        return f.metadata()


def log(path: Path, *rows) -> Path:
    path.write_text(json.dumps([{"style": "s", "steps": n, "seconds": sec} for n, sec in rows]))
    return path


def test_segments_from_every_log_up_to_the_files_steps(tool, tmp_path):
    src = weights(tmp_path / "src.safetensors", steps="300")
    logs = [log(tmp_path / "a.json", (100, 50.0)), log(tmp_path / "b.json", (300, 60.4), (400, 9.0))]
    meta = tool.ship(src, tmp_path / "out.safetensors", logs, "")
    assert meta["train_segments"] == "50 s to step 100 + 60 s to step 300"
    assert meta["train_seconds_total"] == "110"
    assert metadata(tmp_path / "out.safetensors")["train_segments"] == meta["train_segments"]


def test_a_later_call_that_logs_the_last_step_again_adds_no_segment(tool, tmp_path):
    src = weights(tmp_path / "src.safetensors", steps="300")
    logs = [log(tmp_path / "a.json", (300, 60.0)), log(tmp_path / "b.json", (300, 0.0))]
    meta = tool.ship(src, tmp_path / "out.safetensors", logs, "")
    assert (meta["train_segments"], meta["train_seconds_total"]) == ("60 s to step 300", "60")


def test_append_keeps_the_replaced_files_history_and_notes_the_new_call(tool, tmp_path):
    dest = weights(tmp_path / "s.safetensors", steps="200", train_segments="50 s to step 100 + 70 s to step 200",
                   train_seconds_total="120")
    src = weights(tmp_path / "new.safetensors", steps="500")
    meta = tool.ship(src, dest, [log(tmp_path / "c.json", (500, 374.0))], "why", append=True,
                     segment_note="frobenius")
    assert meta["train_segments"] == "50 s to step 100 + 70 s to step 200 + 374 s to step 500 (frobenius)"
    assert meta["train_seconds_total"] == "494"
    assert meta["selection"] == "why"
    with safe_open(str(dest), "pt") as f:
        assert torch.equal(f.get_tensor("w"), torch.arange(4.0))


def test_append_refuses_a_file_without_history(tool, tmp_path):
    dest = weights(tmp_path / "s.safetensors", steps="200")
    src = weights(tmp_path / "new.safetensors", steps="500")
    with pytest.raises(ValueError, match="no train_segments or train_seconds"):
        tool.ship(src, dest, [log(tmp_path / "c.json", (500, 374.0))], "", append=True)


def test_append_to_a_one_call_file_starts_from_its_own_seconds(tool, tmp_path):
    dest = weights(tmp_path / "s.safetensors", steps="200", train_seconds="128.0")
    src = weights(tmp_path / "new.safetensors", steps="500")
    logs = [log(tmp_path / "c.json", (150, 9.0), (500, 374.0))]
    meta = tool.ship(src, dest, logs, "", append=True, segment_note="512 px")
    assert meta["train_segments"] == "128 s to step 200 + 374 s to step 500 (512 px)"
    assert meta["train_seconds_total"] == "502"


def test_a_variant_takes_its_own_rows_of_a_plans_log_and_the_styles_older_rows(tool, tmp_path):
    older = log(tmp_path / "old.json", (100, 50.0))
    # a plan's log: two variants of style "s", numbers as strings, as dev/train_builtin.py --plan writes them
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"name": "s_a", "style": "s", "steps": "250", "seconds": "40.0"},
                                {"name": "s_b", "style": "s", "steps": "240", "seconds": "41.0"}]))
    src = weights(tmp_path / "src.safetensors", steps="260", variant="s_b")
    meta = tool.ship(src, tmp_path / "out.safetensors", [older, plan], "")
    assert meta["train_segments"] == "50 s to step 100 + 41 s to step 240"
    assert meta["train_seconds_total"] == "91"
