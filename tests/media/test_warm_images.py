"""`media.images.warm_images`: the pipeline's one-time costs paid on a job's image before real
work (what a `--gpus` worker does before it says ready), without writing beside the outputs."""
import tempfile

import numpy as np
import pytest
from PIL import Image

from styleforge.engine.options import StylizeOptions
from styleforge.media.images import ImageJob, stylize_images, warm_images


def photo(path, size=(64, 48), seed=0):
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path, quality=92)
    return path


class Counting:
    """The stylizer, counting the shapes it is called with (what the engine stage hands it)."""

    def __init__(self, stylizer):
        self.stylizer, self.device, self.shapes = stylizer, stylizer.device, []

    def __call__(self, content):
        self.shapes.append(tuple(content.shape))
        return self.stylizer(content)


def test_warming_stylizes_the_job_twice_in_scratch_space_only(styles_env, tmp_path, monkeypatch):
    from styleforge.api import get_stylizer
    options = StylizeOptions(style="alpha", device="cpu", backend="reference")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    source = photo(tmp_path / "in.jpg", (52, 40))
    counting = Counting(get_stylizer(options))
    warm_images(ImageJob(source, tmp_path / "out" / "in.jpg"), counting, options, items=100)
    assert counting.shapes == [(1, 3, 40, 52)] * 2       # eager, then (on CUDA) the capture
    assert not (tmp_path / "out").exists()                # nothing beside the outputs
    assert list((tmp_path / "scratch").iterdir()) == []   # and the scratch folder is gone


@pytest.mark.gpu
def test_after_warming_the_run_replays_the_captured_graph(styles_env, tmp_path):
    from styleforge.api import get_stylizer
    options = StylizeOptions(style="alpha", device="cuda")
    stylizer = get_stylizer(options)
    runner = stylizer.runner
    if not hasattr(runner, "captures"):
        pytest.skip(f"{stylizer.describe()}: not the graph-capturing runner")
    sources = [photo(tmp_path / f"{i}.jpg", seed=i) for i in range(3)]
    jobs = [ImageJob(s, tmp_path / "out" / s.name) for s in sources]
    warm_images(jobs[0], stylizer, options, items=len(jobs))
    assert runner.captures == 1
    records = list(stylize_images(jobs, stylizer, options))
    assert all(r.ok for r in records) and runner.captures == 1    # no first-call cost left
