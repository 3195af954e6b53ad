"""`styleforge.ray` and `styleforge stylize --ray` on a local Ray cluster of CPU actors (CI, no GPU).

One cluster per module (2 CPUs, a 200 MB object store: starting it costs ~10 s, so every test
that uses it is `slow`). The style is the tiny random 'alpha' checkpoint of tests/conftest.py,
passed by path so the workers need no registry settings. What is checked: Ray writes the bytes
and the names the CLI writes without Ray; a worker killed mid-job and a re-run leave every output
exactly once, whole, with no temp or claim file; naming and writing on other filesystems; the
missing extra and a mistaken `--ray` value each give one clear line.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

import numpy as np
import pytest
from PIL import Image

from styleforge.cli import main

ACTOR_TITLE = b"StylizeActor"         # Ray titles an actor process ray::MapWorker(MapBatches(StylizeActor))


def _photos(folder, count, size=(48, 40)):
    """`count` random images: PNG, JPEG and an RGBA PNG (alpha is kept through the engine)."""
    rng = np.random.default_rng(7)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        pixels = rng.integers(0, 256, (size[1], size[0], 4), dtype=np.uint8)
        mode, suffix = [("RGB", "png"), ("RGB", "jpg"), ("RGBA", "png")][i % 3]
        Image.fromarray(pixels, "RGBA").convert(mode).save(folder / f"photo{i:02d}.{suffix}")
    return folder


def _files(folder) -> dict[str, bytes]:
    from styleforge.jobs import OUTPUT_MARK
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder)) if name != OUTPUT_MARK}


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024,
             log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture
def checkpoint(tiny_styles):
    return str(tiny_styles / "alpha.safetensors")


@pytest.mark.slow
def test_ray_writes_the_cli_bytes_under_the_cli_names(cluster, checkpoint, tmp_path, capsys):
    """CLI, API (`stylize_files`), `stylize --ray` (paths) and `stylize_dataset` over
    `read_binary_files` (bytes) name every output alike and write the same bytes."""
    import styleforge
    from styleforge.jobs import output_label, styled_name
    from styleforge.ray import stylize_dataset
    photos = _photos(tmp_path / "photos", 6)
    common = ["--checkpoint", checkpoint, "--device", "cpu"]
    assert main(["stylize", str(photos), "-o", str(tmp_path / "cli"), *common]) == 0
    assert main(["stylize", str(photos), "-o", str(tmp_path / "ray_cli"), *common, "--ray", "--json"]) == 0
    assert '"skipped": false' in capsys.readouterr().out
    styleforge.stylize_files(str(photos), str(tmp_path / "api"), checkpoint=checkpoint, device="cpu")
    rows = stylize_dataset(cluster.data.read_binary_files(str(photos), include_paths=True),
                           checkpoint=checkpoint, device="cpu", output=tmp_path / "ray_api",
                           actors=1).take_all()
    assert sorted(row["status"] for row in rows) == ["written"] * 6

    label = output_label(styleforge.StylizeOptions(checkpoint=checkpoint))
    expected = sorted(styled_name(name, label) for name in os.listdir(photos))
    cli = _files(tmp_path / "cli")
    assert sorted(cli) == expected
    for other in ("api", "ray_cli", "ray_api"):
        assert _files(tmp_path / other) == cli, other
    assert Image.open(tmp_path / "ray_api" / "photo02_alpha.png").mode == "RGBA"


def _outputs(folder) -> list[str]:
    """Finished outputs: temp and claim files are hidden (`.name…`)."""
    return [name for name in os.listdir(folder) if not name.startswith(".")]


def _actor_pids() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if ACTOR_TITLE in handle.read():
                    pids.append(int(entry))
        except (OSError, ValueError):
            continue
    return pids


def _kill_an_actor_once_outputs_appear(folder, killed: list, stop: threading.Event) -> None:
    """SIGKILL one actor process as soon as the job has written its first outputs (mid-job)."""
    while not stop.is_set():
        written = _outputs(folder) if folder.exists() else []
        if len(written) >= 2:
            for pid in _actor_pids():
                os.kill(pid, signal.SIGKILL)
                killed.append((pid, len(written)))
                return
        time.sleep(0.01)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the actor process in /proc")
def test_a_worker_killed_mid_job_then_a_rerun_writes_each_output_once(cluster, checkpoint, tmp_path):
    from ray.exceptions import RayError

    from styleforge.ray import stylize_dataset
    photos = _photos(tmp_path / "photos", 16, size=(160, 128))
    rows = [{"path": str(photos / name)} for name in sorted(os.listdir(photos))]
    out = tmp_path / "out"

    def run(**map_batches_args):
        ds = cluster.data.from_items(rows)
        return stylize_dataset(ds, checkpoint=checkpoint, device="cpu", output=out, actors=2,
                               batch_size=2, map_batches_args=map_batches_args).take_all()

    killed, stop = [], threading.Event()
    killer = threading.Thread(target=_kill_an_actor_once_outputs_appear, args=(out, killed, stop))
    killer.start()
    try:
        with pytest.raises(RayError):      # no restarts: the dead actor's batch fails the job
            run(max_restarts=0)
    finally:
        stop.set()
        killer.join()
    assert killed, "no actor process was found to kill"
    before = set(_outputs(out))
    assert 2 <= len(before) < len(rows)

    results = run()                          # the re-run, with Ray's default retries
    names = [os.path.basename(r["output"]) for r in results]
    written = {name for name, r in zip(names, results) if r["status"] == "written"}
    skipped = {name for name, r in zip(names, results) if r["status"] == "skipped"}
    # The survivor may finish its batch after the failure is raised, so `skipped` can hold more.
    assert len(set(names)) == len(rows) and written | skipped == set(names)
    assert before <= skipped and not written & before and written

    reference = tmp_path / "reference"
    assert main(["stylize", str(photos), "-o", str(reference), "--checkpoint", checkpoint,
                 "--device", "cpu"]) == 0
    assert sorted(os.listdir(out)) == sorted(_files(reference))   # no temp, claim or duplicate
    assert _files(out) == _files(reference)                       # each one whole


def test_without_ray_the_api_and_cli_name_the_extra(monkeypatch, tmp_path, capsys, checkpoint):
    monkeypatch.setitem(sys.modules, "ray", None)          # import fails as if not installed
    import styleforge.ray
    with pytest.raises(ImportError, match=r'pip install "styleforge\[ray\]"'):
        styleforge.ray.stylize_dataset
    _photos(tmp_path / "photos", 1)
    code = main(["stylize", str(tmp_path / "photos"), "-o", str(tmp_path / "out"), "--checkpoint",
                 checkpoint, "--ray"])
    err = capsys.readouterr().err
    assert code == 2 and 'pip install "styleforge[ray]"' in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_an_input_after_ray_is_not_taken_for_an_address(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["stylize", "--ray", "photos/", "-o", "out"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "not a Ray address" in err and "put --ray after the inputs" in err


def test_dataset_rows_are_named_by_the_job_plan_rule():
    from styleforge.jobs import styled_name
    from styleforge.ray.naming import target_name
    assert target_name("/data/trip/sub/cat.psd", "candy") == styled_name("cat.psd", "candy") == "cat_candy.png"
    assert target_name("s3://bucket/trip/sub/cat.jpg", "candy", root="s3://bucket/trip") == "sub/cat_candy.jpg"
    assert target_name("bucket/trip/sub/cat.jpg", "candy", root="bucket/trip", keep_names=True) == "sub/cat.jpg"
    with pytest.raises(ValueError, match="not inside root"):
        target_name("/elsewhere/cat.jpg", "candy", root="/data")


def test_outputs_on_other_filesystems_appear_once_and_whole(tmp_path):
    """pyarrow filesystems and fsspec URLs take the temp-and-move path, not io.atomic's."""
    pa_fs = pytest.importorskip("pyarrow.fs")
    fsspec = pytest.importorskip("fsspec")
    from styleforge.io.image import OutputExists
    from styleforge.ray.files import Location, write_once
    target = Location.of("out/cat_alpha.png", pa_fs.SubTreeFileSystem(str(tmp_path), pa_fs.LocalFileSystem()))
    assert not target.local and not target.exists()
    write_once(target, b"first")
    with pytest.raises(OutputExists):
        write_once(target, b"second")
    assert os.listdir(tmp_path / "out") == ["cat_alpha.png"]        # no temp file left beside it
    assert (tmp_path / "out" / "cat_alpha.png").read_bytes() == b"first"
    write_once(target, b"second", replace=True)
    assert (tmp_path / "out" / "cat_alpha.png").read_bytes() == b"second"

    url = Location.of("memory://styleforge-ray-test/out/dog_alpha.jpg")
    write_once(url, b"jpeg bytes")
    with pytest.raises(OutputExists):
        write_once(url, b"other")
    assert url.read_bytes() == b"jpeg bytes"
    memory = fsspec.filesystem("memory")
    assert [p.rsplit("/", 1)[1] for p in memory.ls("/styleforge-ray-test/out", detail=False)] == ["dog_alpha.jpg"]
    memory.rm("/styleforge-ray-test", recursive=True)
