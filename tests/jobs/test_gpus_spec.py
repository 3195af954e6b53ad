"""`--gpus` parsing, each worker's environment and the shared claims (no process started here)."""
from __future__ import annotations

import multiprocessing as mp
import threading

import pytest

from styleforge.cli import main
from styleforge.jobs.devices import parse_devices, parse_gpus, worker_environment
from styleforge.jobs.multi_device import _Claims


def test_all_and_lists_resolve_to_cuda_devices():
    assert parse_gpus("all", count=2) == ("cuda:0", "cuda:1")
    assert parse_gpus("1, 0", count=4) == ("cuda:1", "cuda:0")
    assert parse_gpus("ALL", count=1) == ("cuda:0",)


@pytest.mark.parametrize("spec, count, message", [
    ("0,2", 2, "no GPU 2 here (this machine has 2: 0, 1)"),
    ("0,5,7", 4, "no GPU 5, 7 here"),
    ("0,0", 2, "GPU 0 is listed twice"),
    ("all", 0, "PyTorch sees no CUDA GPU"),
    ("0", 0, "PyTorch sees no CUDA GPU"),
    ("cuda:0", 2, "write all, or GPU numbers"),
    ("", 2, "write all, or GPU numbers"),
    ("0,,1", 2, "write all, or GPU numbers"),
])
def test_bad_specs_name_the_problem(spec, count, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_gpus(spec, count=count)


def test_hidden_devices_list():
    assert parse_devices("cpu,cpu") == ("cpu", "cpu")
    assert parse_devices("cuda:1") == ("cuda:1",)
    with pytest.raises(ValueError, match="each entry is cpu or cuda:N"):
        parse_devices("cpu,gpu0")


def test_worker_sees_only_its_gpu_counted_within_an_outer_mask(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert worker_environment("cuda:1") == {"CUDA_VISIBLE_DEVICES": "1"}
    assert worker_environment("cpu") == {}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")     # GPU 1 of this process is the host's 6
    assert worker_environment("cuda:1") == {"CUDA_VISIBLE_DEVICES": "6"}


def test_cli_refuses_gpus_that_are_not_there(capsys):
    import torch
    if torch.cuda.is_available():
        spec, message = f"0,{torch.cuda.device_count()}", "no GPU"
    else:
        spec, message = "0,1", "PyTorch sees no CUDA GPU"
    code = main(["stylize", "nothing-here.jpg", "--gpus", spec])
    text = capsys.readouterr().err
    assert code == 2 and message in text and "Traceback" not in text


def test_cli_refuses_gpus_on_the_cpu(tmp_path, capsys):
    code = main(["stylize", str(tmp_path), "--gpus", "0", "--device", "cpu"])
    assert code == 2 and "leave out --device cpu" in capsys.readouterr().err


def test_cli_refuses_gpus_with_ray(tmp_path, capsys):
    from PIL import Image
    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    code = main(["stylize", str(tmp_path / "a.png"), "-o", str(tmp_path / "out"), "--devices", "cpu,cpu",
                 "--ray", "auto"])
    assert code == 2 and "--gpus and --ray do not combine" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_claims_hand_out_every_job_once_across_workers():
    ctx = mp.get_context("spawn")
    counter, stop = ctx.Value("q", 0), ctx.Event()
    jobs = list(range(500))
    claims = [_Claims(jobs, counter, stop) for _ in range(3)]
    taken: list[list[int]] = [[] for _ in claims]
    barrier = threading.Barrier(len(claims))

    def drain(i: int) -> None:
        barrier.wait()
        taken[i] = list(claims[i])

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(claims))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(sum(taken, [])) == jobs                     # each job once, none lost
    assert all(c.claimed == t for c, t in zip(claims, taken))  # local order → plan index
    assert all(len(c) == len(jobs) for c in claims)            # the codec sees the whole plan


def test_claims_stop_when_told():
    ctx = mp.get_context("spawn")
    counter, stop = ctx.Value("q", 0), ctx.Event()
    claims = iter(_Claims(list(range(10)), counter, stop))
    assert [next(claims), next(claims)] == [0, 1]
    stop.set()
    assert list(claims) == [] and counter.value == 2           # nothing more claimed
