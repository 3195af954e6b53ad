"""Durable writes and odd files: fsync before rename, unique short temp names, messages without
temp names, 250-character names, and multi-frame files said to be used by their first frame."""
import errno
import os

import numpy as np
import pytest
import torch
from PIL import Image

from styleforge.io import atomic
from styleforge.io.image import ImageError, MultiFrameWarning, load_image, save_image
from styleforge.models.checkpoint import save_checkpoint


def small_image(seed=0):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (12, 10, 3), dtype=np.uint8))


def test_outputs_are_fsynced_before_rename_and_the_folder_after(tmp_path, monkeypatch):
    from conftest import random_style_state
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append("rename") or real_replace(a, b))
    save_image(small_image(), tmp_path / "a.png")
    assert events == ["fsync", "rename", "fsync"]
    events.clear()
    save_checkpoint(tmp_path / "w.safetensors", random_style_state(0))
    assert events == ["fsync", "rename", "fsync"]


def test_temp_names_are_unique_short_and_never_in_messages(tmp_path, monkeypatch):
    target = tmp_path / ("x" * 246 + ".png")          # 250 characters: the old temp name overflowed
    save_image(small_image(), target)
    assert Image.open(target).size == (10, 12)
    made = [atomic.temp_path_for(target) for _ in range(2)]
    for fd, name in made:
        os.close(fd)
        os.unlink(name)
    names = {name for _, name in made}
    assert len(names) == 2 and all(len(os.path.basename(n)) < 80 for n in names)   # name, pid, host, random

    def full_disk(tmp):
        raise OSError(errno.ENOSPC, "No space left on device", tmp)
    with pytest.raises(OSError) as info:
        atomic.atomic_write(tmp_path / "b.png", full_disk)
    assert str(tmp_path / "b.png") in str(info.value) and ".tmp" not in str(info.value)
    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(ImageError) as info:
        save_image(small_image(), tmp_path / "file" / "c.png")
    assert ".tmp" not in str(info.value) and "c.png: cannot write" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.parametrize("fmt", ["GIF", "TIFF"])
def test_multi_frame_files_use_the_first_frame_and_say_so(tmp_path, fmt):
    frames = [small_image(seed) for seed in range(3)]
    path = tmp_path / f"anim.{fmt.lower()}"
    frames[0].save(path, format=fmt, save_all=True, append_images=frames[1:])
    with pytest.warns(MultiFrameWarning, match=r"anim\..* has 3 frames or pages; only the first"):
        loaded = load_image(path)
    assert loaded.frames == 3 and loaded.size == (10, 12)
    if fmt == "TIFF":     # lossless: the first page's pixels exactly
        assert np.array_equal(np.asarray(loaded.rgb), np.asarray(frames[0]))


def test_checkpoint_temp_names_do_not_collide(tmp_path):
    from conftest import random_style_state
    state = random_style_state(1)
    for _ in range(2):
        save_checkpoint(tmp_path / "same.safetensors", state, dtype=torch.float32)
    assert [p.name for p in tmp_path.iterdir()] == ["same.safetensors"]
