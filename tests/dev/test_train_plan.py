"""`dev/train_plan.py` and `dev/train_builtin.py --plan`: a plan's variants are checked when it loads,
their settings reach each run's TrainConfig over the recipe and the flags, and each variant trains
into its own files, whose metadata say which variant they are."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import random_style_state, tiny_training_data
from PIL import Image

from styleforge.models.checkpoint import load_checkpoint, save_checkpoint
from styleforge.training import samples
from styleforge.training.catalogue import get

ROOT = Path(__file__).resolve().parents[2]
ROUND7 = ROOT / "dev" / "device" / "plans" / "round7.json"
ROUND7B = ROOT / "dev" / "device" / "plans" / "round7b.json"
ROUND8 = ROOT / "dev" / "device" / "plans" / "round8.json"
NEW_STYLES = {"dendera", "song_star_chart", "aratea", "al_sufi", "primeros_memoriales"}


@pytest.fixture(scope="module")
def tools():
    sys.path.insert(0, str(ROOT / "dev"))       # as when train_builtin runs as a script
    try:
        import train_builtin
        import train_plan
        yield train_builtin, train_plan
    finally:
        sys.path.remove(str(ROOT / "dev"))


def write_plan(path: Path, *variants: dict) -> Path:
    path.write_text(json.dumps({"variants": list(variants)}))
    return path


def test_round7_plan_loads_and_sets_what_it_says(tools):
    train_builtin, train_plan = tools
    variants = train_plan.load_plan(ROUND7)
    assert len(variants) == len({v.name for v in variants}) == 8
    args = train_builtin.parse_args(["--plan", str(ROUND7)])
    jobs = {job.name: job for job in train_builtin.jobs(args)}
    assert set(jobs) == {v.name for v in variants}
    settings = {n: train_builtin.job_settings(args, job) for n, job in jobs.items()}
    # the_scream's own weight is its tweak (2e10); candy has none (the default 1e10).
    assert settings["the_scream_frob05"]["style_weight"] == pytest.approx(2e10 * 0.5)
    assert settings["the_scream_frob10"]["style_weight"] == pytest.approx(2e10)
    assert settings["candy_frob_no4"]["style_weight"] == pytest.approx(1e10 * 0.15)
    assert "style_weight" not in settings["udnie_mean_stab4"]
    config = get("candy").config("p", **settings["candy_frob_no4"])
    assert (config.style_reduction, config.style_layer_weights, config.style_size) == ("frobenius", (1, 1, 1, 0), 384)
    assert jobs["candy_mean_l4q"].variant.warm_file() is None
    assert train_builtin.warm_file(args, jobs["shipwreck_stab4"]).name == "shipwreck.safetensors"


def test_round7b_plan_loads_warm_from_the_carried_files(tools, tmp_path, monkeypatch):
    """Its warm starts are files the lead copies into runs/warm7b/ (ignored, carried); stand-ins
    there let the loader's checks run here."""
    train_builtin, train_plan = tools
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="runs/warm7b"):
        train_plan.load_plan(ROUND7B)
    (tmp_path / "runs" / "warm7b").mkdir(parents=True)
    for style in NEW_STYLES:
        (tmp_path / "runs" / "warm7b" / f"{style}.safetensors").touch()
    variants = train_plan.load_plan(ROUND7B)
    assert len(variants) == 8 and {v.style for v in variants} == NEW_STYLES
    assert all(v.warm_file() == Path("runs/warm7b") / f"{v.style}.safetensors" for v in variants)
    assert all(v.why for v in variants)
    args = train_builtin.parse_args(["--plan", str(ROUND7B)])
    settings = {job.name: train_builtin.job_settings(args, job) for job in train_builtin.jobs(args)}
    # none of the five has a style-weight tweak: each scale is × the recipe's 1e10.
    assert settings["dendera_mean5"]["style_weight"] == pytest.approx(5e10)
    assert "style_reduction" not in settings["dendera_mean5"]
    assert settings["aratea_frob035"] == {"style_reduction": "frobenius", "style_weight": pytest.approx(3.5e9)}


def test_round8_jpeg_variants_reach_the_config(tools, tmp_path, monkeypatch):
    """Its al_sufi and primeros variants warm from round 7's files, which the lead copies into
    runs/warm8/, and put half the style term on the JPEG proxy (training/jpeg.py)."""
    train_builtin, train_plan = tools
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="runs/warm8"):
        train_plan.load_plan(ROUND8)
    (tmp_path / "runs" / "warm8").mkdir(parents=True)
    for name in ("the_scream_frob05_seg1", "mosaic_frob05_seg2", "al_sufi_frob08_seg2", "primeros_frob065_seg2"):
        (tmp_path / "runs" / "warm8" / f"{name}.safetensors").touch()
    variants = {v.name: v for v in train_plan.load_plan(ROUND8)}
    assert all(v.why for v in variants.values())
    args = train_builtin.parse_args(["--plan", str(ROUND8)])
    jobs = {job.name: job for job in train_builtin.jobs(args)}
    for name, style, scale in (("al_sufi_frob08_jpeg05", "al_sufi", 0.8),
                               ("primeros_frob065_jpeg05", "primeros_memoriales", 0.65)):
        assert variants[name].warm_file() == Path("runs/warm8") / f"{name.replace('_jpeg05', '_seg2')}.safetensors"
        config = get(style).config("p", **train_builtin.job_settings(args, jobs[name]))
        assert (config.jpeg_style, config.jpeg_quality, config.style_reduction) == (0.5, 95, "frobenius")
        assert config.style_weight == pytest.approx(1e10 * scale)


def test_variant_settings_win_over_the_flags(tools, tmp_path):
    train_builtin, _ = tools
    plan = write_plan(tmp_path / "p.json",
                      {"name": "a", "style": "udnie", "stability_weight": 4e8, "style_weight": 1e9,
                       "style_weight_scale": 0.5},
                      {"name": "b", "style": "udnie"})
    args = train_builtin.parse_args(["--plan", str(plan), "--stability-weight", "2e8", "--style-weight-scale",
                                     "0.2", "--styles", "b,a"])
    a, b = sorted(train_builtin.jobs(args), key=lambda j: j.name)
    assert [j.name for j in train_builtin.jobs(args)] == ["b", "a"]
    assert train_builtin.job_settings(args, a) == {"stability_weight": 4e8, "style_weight": pytest.approx(5e8)}
    assert train_builtin.job_settings(args, b) == {"stability_weight": 2e8, "style_weight": pytest.approx(1e10)}
    with pytest.raises(KeyError, match="not in the plan"):
        train_builtin.jobs(train_builtin.parse_args(["--plan", str(plan), "--styles", "c"]))


@pytest.mark.parametrize("variants, error", [
    ([{"name": "a", "style": "udnie", "stability": 1}], "unknown key"),
    ([{"name": "a", "style": "udnie"}, {"name": "a", "style": "candy"}], "used twice"),
    ([{"name": "The Scream", "style": "the_scream"}], "lower-case"),
    ([{"name": "a", "style": "scream"}], "unknown built-in style"),
    ([{"name": "a", "style": "udnie", "style_reduction": "sum"}], "style_reduction must be one of"),
    ([{"name": "a", "style": "udnie", "style_layer_weights": [1, 1]}], "style_layer_weights"),
    ([{"name": "a", "style": "udnie", "style_weight_scale": 0}], "style_weight_scale"),
    ([{"name": "a", "style": "udnie", "warm": "nowhere/udnie.safetensors"}], "does not exist"),
    ([{"name": "a", "style": "udnie", "painting": "../udnie.jpg"}], "file name in the paintings folder"),
    ([], "no \"variants\""),
])
def test_a_bad_plan_fails_when_it_loads(tools, tmp_path, variants, error):
    _, train_plan = tools
    with pytest.raises((ValueError, KeyError, FileNotFoundError), match=error):
        train_plan.load_plan(write_plan(tmp_path / "p.json", *variants))


def test_workers_get_their_gpu_and_a_share_of_the_cores(tools, monkeypatch):
    train_builtin, _ = tools
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(train_builtin.os, "cpu_count", lambda: 16)
    envs = [train_builtin.worker_env(k, gpus=2, workers=8) for k in range(3)]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["2", "5", "2"]
    assert {e["OMP_NUM_THREADS"] for e in envs} == {"2"}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")         # a caller's own setting stays
    assert train_builtin.worker_env(0, gpus=1, workers=8)["OMP_NUM_THREADS"] == "3"


@pytest.mark.slow
def test_two_variants_of_one_style_train_into_their_own_files(tools, tmp_path, monkeypatch):
    train_builtin, _ = tools
    rng = np.random.default_rng(0)
    heldout = [tmp_path / "heldout.png"]
    Image.fromarray(rng.integers(0, 255, (28, 40, 3), dtype=np.uint8)).save(heldout[0])
    monkeypatch.setattr(train_builtin, "default_photos", lambda: list(heldout))
    monkeypatch.setattr(samples, "default_photos", lambda: list(heldout))
    tiny_training_data(tmp_path, rng)
    shutil.copyfile(tmp_path / "styles" / "udnie.jpg", tmp_path / "styles" / "udnie_crop.jpg")
    warm = tmp_path / "warm.safetensors"
    save_checkpoint(warm, random_style_state(3), {"style": "udnie", "steps": "4"}, dtype=torch.float32)
    plan = write_plan(tmp_path / "plan.json",
                      {"name": "udnie_cold", "style": "udnie", "steps": 1, "painting": "udnie_crop.jpg"},
                      {"name": "udnie_warm", "style": "udnie", "warm": str(warm), "steps": 5,
                       "style_reduction": "frobenius", "style_layer_weights": [1, 1, 0.5, 0], "why": "a test"})
    out = tmp_path / "runs"
    code = train_builtin.main(["--plan", str(plan), "--batch-size", "2", "--image-size", "16", "--device", "cpu",
                               "--no-eval", "--vgg-weights", str(tmp_path / "vgg.pth"),
                               "--content-dir", str(tmp_path / "content"),
                               "--paintings-dir", str(tmp_path / "styles"), "--out-dir", str(out)])
    assert code == 0
    rows = {r["name"]: r for r in json.loads((out / "train_log.json").read_text())}
    assert set(rows) == {"udnie_cold", "udnie_warm"} and {r["style"] for r in rows.values()} == {"udnie"}
    assert (rows["udnie_cold"]["steps"], rows["udnie_warm"]["steps"]) == (1, 5)    # warm: from step 4
    cold, warm_file = (load_checkpoint(out / "int8" / f"{n}.safetensors") for n in ("udnie_cold", "udnie_warm"))
    assert "variant" in cold.metadata and cold.metadata["variant"] == "udnie_cold"
    plan_meta = warm_file.metadata["variant_plan"]
    plan_meta = json.loads(plan_meta) if isinstance(plan_meta, str) else plan_meta
    assert plan_meta == {"name": "udnie_warm", "style": "udnie", "warm": str(warm), "steps": 5,
                         "style_reduction": "frobenius", "style_layer_weights": [1, 1, 0.5, 0], "why": "a test"}
    settings = warm_file.training_settings()
    assert (settings["style_reduction"], settings["style_layer_weights"]) == ("frobenius", [1, 1, 0.5, 0])
    assert cold.training_settings()["style_layer_weights"] == [1, 1, 1, 1]
    assert warm_file.metadata["style"] == "udnie"
    assert (cold.metadata["painting_file"], warm_file.metadata["painting_file"]) == ("udnie_crop.jpg", "udnie.jpg")
    assert (rows["udnie_cold"]["painting"], Path(cold.training_settings()["style_image"]).name) == \
        ("udnie_crop.jpg", "udnie_crop.jpg")


def test_round14_plan_sets_what_it_says(tools, tmp_path, monkeypatch):
    """udnie goes on past the recipe's 20,000 steps from the shipped file; aratea tries the Draco page."""
    train_builtin, train_plan = tools
    path = ROOT / "dev" / "device" / "plans" / "round14.json"
    variants = {v.name: v for v in train_plan.load_plan(path)}
    assert all(v.why for v in variants.values())
    assert {n for n, v in variants.items() if v.warm == "none"} == {"aratea_draco_frob075", "aratea_draco_frob12"}
    assert {n for n, v in variants.items() if v.painting} == {"aratea_draco_frob075", "aratea_draco_frob12"}
    args = train_builtin.parse_args(["--plan", str(path)])
    jobs = {job.name: job for job in train_builtin.jobs(args)}
    assert train_builtin.warm_file(args, jobs["udnie_x15_stab8_jpeg10"]).name == "udnie.safetensors"
    udnie = get("udnie").config("p", **train_builtin.job_settings(args, jobs["udnie_x17_stab8_jpeg10"]))
    assert (udnie.stability_weight, udnie.jpeg_style, udnie.flat_augment, udnie.steps) == (8e8, 1.0, 0.5, 30000)
    assert udnie.style_weight == pytest.approx(1.7 * 5e10)
    mosaic = get("mosaic").config("p", **train_builtin.job_settings(args, jobs["mosaic_frob10_l23x15"]))
    assert (mosaic.style_reduction, mosaic.style_layer_weights) == ("frobenius", (1, 1.5, 1.5, 0.25))
    draco = variants["aratea_draco_frob075"].catalogue_style().config(
        "p", **train_builtin.job_settings(args, jobs["aratea_draco_frob075"]))
    assert (Path(draco.style_image).name, draco.style_weight) == ("aratea_draco.jpg", pytest.approx(0.75e10))
    assert draco.metadata["painting_file"] == "aratea_draco.jpg"     # the catalogue's painting since
    assert draco.metadata["painting"] == get("aratea").title


def test_a_resumed_call_logs_each_variant_newest_row(tools, tmp_path):
    """A second call's workers take the variants in another order: an earlier call's worker file
    (a higher worker number, left on the machine) must not bring back an older row."""
    train_builtin, _ = tools
    rows = {"train_log.json": [{"name": "a", "style": "s", "steps": 10, "finished_at": 1.0}],
            "train_log.worker0.json": [{"name": "b", "style": "s", "steps": 7, "finished_at": 1.0},
                                       {"name": "a", "style": "s", "steps": 30, "finished_at": 2.0}],
            "train_log.worker1.json": [{"name": "a", "style": "s", "steps": 10, "finished_at": 1.0},
                                       {"name": "b", "style": "s", "steps": 9, "finished_at": 2.0}],
            "train_log.worker6.json": [{"name": "b", "style": "s", "steps": 7, "finished_at": 1.0}],
            "train_log.worker7.json": [{"style": "c", "steps": 5}, {"style": "c", "steps": 4}]}
    for name, content in rows.items():
        (tmp_path / name).write_text(json.dumps(content))
    merged = {train_builtin.row_name(r): r["steps"] for r in train_builtin.merged_rows(tmp_path)}
    assert merged == {"a": 30, "b": 9, "c": 5}


def shipped_plan_configs(tools, plan: str) -> dict:
    """{variant: its TrainConfig} for a round's plan whose variants all start from shipped files."""
    train_builtin, train_plan = tools
    path = ROOT / "dev" / "device" / "plans" / plan
    variants = train_plan.load_plan(path)
    assert all(v.why for v in variants) and {v.warm for v in variants} == {"shipped"}
    args = train_builtin.parse_args(["--plan", str(path)])
    return {job.name: job.variant.catalogue_style().config("p", **train_builtin.job_settings(args, job))
            for job in train_builtin.jobs(args)}


def test_round15_plan_loads_from_shipped_files_only(tools):
    configs = shipped_plan_configs(tools, "round15.json")
    udnie, mosaic = configs["udnie_x17_stab8_rot1"], configs["mosaic_frob10_own_jpeg10"]
    assert (udnie.stability_rotate, udnie.steps, udnie.stability_weight) == (1.0, 40000, 8e8)
    assert (mosaic.style_size, mosaic.style_reduction, mosaic.jpeg_style) == (None, "frobenius", 1.0)


def test_round16_plan_trains_candy_at_the_yardsticks_painting_size(tools):
    configs = shipped_plan_configs(tools, "round16.json")
    candy, mosaic = configs["candy_v1_frob_size512"], configs["mosaic_own_stab8"]
    assert (candy.style_size, candy.style_reduction) == (512, "frobenius")  # the catalogue says 384
    assert (mosaic.style_size, mosaic.stability_weight, mosaic.steps) == (None, 8e8, 32000)


def test_round17_plan_raises_candys_style_weight_from_the_shipped_file(tools):
    configs = shipped_plan_configs(tools, "round17.json")
    base, strong = configs["candy_g3e9_512_x13"], configs["candy_g3e9_512_x16"]
    jpeg, mosaic = configs["candy_g3e9_512_x13_jpeg"], configs["mosaic_stab6"]
    assert (base.style_size, base.style_reduction, base.grid_weight) == (512, "mean", 3e9)
    assert strong.style_weight == pytest.approx(base.style_weight * 1.6 / 1.3)
    assert (jpeg.jpeg_style, jpeg.style_weight) == (1.0, base.style_weight)
    assert (mosaic.style_size, mosaic.stability_weight, mosaic.steps) == (None, 6e8, 44000)


def test_a_warm_start_past_the_last_step_fails_before_training(tools, tmp_path):
    train_builtin, _ = tools
    warm = tmp_path / "warm.safetensors"
    save_checkpoint(warm, random_style_state(3), {"style": "udnie", "steps": "4"}, dtype=torch.float32)
    plan = write_plan(tmp_path / "plan.json", {"name": "done", "style": "udnie", "warm": str(warm), "steps": 4},
                      {"name": "more", "style": "udnie", "warm": str(warm), "steps": 5})
    with pytest.raises(ValueError, match=r"done: .* at step 4 and the run ends at 4"):
        train_builtin.main(["--plan", str(plan), "--out-dir", str(tmp_path / "runs"), "--device", "cpu"])
    args = train_builtin.parse_args(["--plan", str(plan), "--styles", "more"])
    assert train_builtin.finished_warm_starts(args, train_builtin.jobs(args), tmp_path / "runs") == []


def test_round18_plan_continues_the_short_budgets_at_the_recipe(tools):
    configs = shipped_plan_configs(tools, "round18.json")
    assert set(configs) == {"composition_vii_long", "great_wave_long", "rain_princess_long", "starry_night_long"}
    for name, config in configs.items():
        style = get(name.removesuffix("_long"))
        shipped = load_checkpoint(ROOT / "styleforge" / "styles" / f"{style.name}.safetensors")
        settings = shipped.training_settings()
        assert config.steps == 16000 > int(shipped.metadata["steps"])
        # the recipe the shipped file was trained with, unchanged but for the budget
        for key in ("style_weight", "grid_weight", "stability_weight", "style_size", "content_weight", "lr"):
            assert getattr(config, key) == settings[key], (name, key)
        assert (config.style_reduction, config.jpeg_style) == ("mean", 0.0)
