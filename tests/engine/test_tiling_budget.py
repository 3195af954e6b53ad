"""The memory budget (engine.memory) and how the Stylizer uses it: whole frame when it fits,
exact tiling otherwise, refusal before any work with a message that says how to proceed, and
the 50 MP default-settings contract on a 24 GB machine."""
from __future__ import annotations

import pytest
import torch
from conftest import FP32_REL_TOL, rel_error

from styleforge.engine import memory
from styleforge.engine.memory import MemoryBudgetError, choose_execution
from styleforge.engine.options import StylizeOptions, parse_bytes
from styleforge.engine.pipeline import Stylizer

CPU = torch.device("cpu")
GB = 1 << 30


def test_choice_moves_from_whole_to_host_to_disk_to_refusal():
    def pick(ram, scratch=0):
        return choose_execution(2000, 3000, CPU, torch.float32, ram_budget=ram, scratch_bytes=scratch)
    assert pick(100 * GB).mode == "whole"
    assert (pick(4 * GB).mode, pick(4 * GB).stores) == ("exact", "host")
    assert pick(int(0.6 * GB), scratch=100 * GB).stores == "disk"
    with pytest.raises(MemoryBudgetError, match="--max-side"):
        pick(int(0.6 * GB))
    with pytest.raises(MemoryBudgetError, match="--max-side"):   # even the decoded copies are too big
        pick(100 << 20, scratch=100 * GB)


def test_gpu_stores_stay_on_the_device_while_they_fit():
    cuda = torch.device("cuda")
    plan = choose_execution(4320, 7680, cuda, torch.bfloat16, ram_budget=64 * GB, gpu_budget=8 * GB)
    assert (plan.mode, plan.stores) == ("exact", "device") and plan.estimate <= 8 * GB
    plan = choose_execution(20000, 30000, cuda, torch.bfloat16, ram_budget=120 * GB, gpu_budget=8 * GB)
    assert (plan.mode, plan.stores) == ("exact", "host") and plan.band_bytes <= 8 * GB


def test_fast_mode_tile_follows_the_budget():
    small = choose_execution(8000, 12000, CPU, torch.float32, tiling="fast", ram_budget=6 * GB)
    big = choose_execution(8000, 12000, CPU, torch.float32, tiling="fast", ram_budget=30 * GB)
    assert small.mode == "fast" and 64 <= small.tile < big.tile


@pytest.mark.parametrize("batch,size", [(1, (21, 37)), (2, (18, 22))], ids=["odd", "not-multiple-of-4"])
def test_stylizer_tiles_within_a_tiny_budget_and_matches_whole_frame(styles_env, batch, size):
    x = torch.rand(batch, 3, *size) * 255
    common = dict(style="alpha", device="cpu", precision="fp32", stroke_scale=1.0, strength=0.8)
    whole = Stylizer(StylizeOptions(**common, tiling="off"))
    tiled = Stylizer(StylizeOptions(**common, max_memory=500_000, scratch_dir=str(styles_env)))
    out = tiled(x)
    assert tiled.last_execution.mode == "exact"
    assert rel_error(out, whole(x)) <= FP32_REL_TOL


def test_refusal_comes_before_any_work(styles_env, monkeypatch):
    stylizer = Stylizer(StylizeOptions(style="alpha", device="cpu", stroke_scale=1.0, max_memory=10_000))
    monkeypatch.setattr(memory, "scratch_free", lambda folder: 0)
    monkeypatch.setattr("styleforge.engine.pipeline.scratch_free", lambda folder: 0)
    def no_work(*_):
        raise AssertionError("the network ran")
    stylizer.runner = no_work
    with pytest.raises(MemoryBudgetError, match=r"the budget is 9\.8 KiB\. Raise --max-memory") as refused:
        stylizer(torch.rand(1, 3, 64, 64))      # not even 16×16 runs in 10 kB: no --max-side to offer
    assert "--max-side" not in str(refused.value)
    with pytest.raises(MemoryBudgetError):
        stylizer.check_size(64, 64)


@pytest.mark.parametrize("native_bf16", [False, True], ids=["fp32-cpu", "bf16-cpu"])
def test_fifty_megapixels_with_default_settings_on_a_24_gb_machine(styles_env, monkeypatch, native_bf16):
    """Default settings (precision `auto`, so either kind of CPU) fit 50 MP in 8 GB; at native
    stroke scale the activations go to scratch files when the disk has room, and without that
    room the image is refused with the size that would fit."""
    from styleforge.engine import backends, pipeline
    monkeypatch.setattr(backends, "cpu_has_native_bf16", lambda: native_bf16)
    monkeypatch.setattr(memory, "total_ram", lambda: 24 * GB)
    monkeypatch.setattr(memory, "available_ram", lambda: 22 * GB)
    stylizer = Stylizer(StylizeOptions(style="alpha", device="cpu"))
    assert stylizer.dtype == (torch.bfloat16 if native_bf16 else torch.float32)
    plan = stylizer.execution_for(5792, 8688)     # 50.3 MP, a full-frame camera
    full_size_copies = memory.IO_BYTES_PER_PIXEL * 5792 * 8688
    assert plan.estimate + full_size_copies <= 8 * 10**9
    native = Stylizer(StylizeOptions(style="alpha", device="cpu", stroke_scale=1.0))
    monkeypatch.setattr(pipeline, "scratch_free", lambda folder: 100 * GB)
    plan = native.execution_for(5792, 8688)
    assert (plan.mode, plan.stores) == ("exact", "disk")
    assert plan.estimate + full_size_copies <= 8 * 10**9
    monkeypatch.setattr(pipeline, "scratch_free", lambda folder: 0)
    with pytest.raises(MemoryBudgetError, match=r"8688×5792 needs about .* --max-side \d+"):
        native.execution_for(5792, 8688)


def test_parse_bytes_and_option_checks():
    assert parse_bytes("8G") == 8 * GB and parse_bytes("512MiB") == 512 << 20 and parse_bytes("1000") == 1000
    for bad in ("x", "0", "-1G"):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    with pytest.raises(ValueError):
        StylizeOptions(tiling="sometimes")
    with pytest.raises(ValueError):
        StylizeOptions(stroke_scale=0.5)


@pytest.mark.parametrize("stroke_scale", [1.0, 2.0], ids=["native", "stroke-2"])
def test_uint8_content_gives_the_float_result_without_a_float_copy(styles_env, stroke_scale):
    """The media pipeline hands the engine uint8 pixels (no full-size float copy); whole frame
    and exact tiling must give exactly what the same pixels as float give."""
    pixels = (torch.rand(1, 3, 30, 42) * 255).round().to(torch.uint8)
    for budget in (None, 500_000):    # whole frame; exact tiling
        stylizer = Stylizer(StylizeOptions(style="alpha", device="cpu", precision="fp32", stroke_scale=stroke_scale,
                                           max_memory=budget, scratch_dir=str(styles_env)))
        want = stylizer(pixels.float())
        assert torch.equal(stylizer(pixels), want)
        assert stylizer.last_execution.mode == ("whole" if budget is None else "exact")
