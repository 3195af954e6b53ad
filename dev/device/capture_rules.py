"""Which calls on another thread break a thread-local CUDA-graph capture, on this GPU and build.

engine/capture.py puts every CUDA call of the package under one lock because of CUDA's rules
about captures; this probe checks the rules it relies on, one call at a time, WITHOUT the lock:
the main thread opens a thread-local capture (`engine.capture.capturing`, which also pauses the
garbage collector), a fresh thread makes one call, and the line printed says what the call
returned (an error may only show at that thread's next launch, so one follows) and whether the
capture still ended and replays right. Expected from the CUDA Programming Guide: a device-wide
synchronisation (torch.cuda.synchronize, cuDNN's autotuner) fails on the other thread and
invalidates the capture; per-stream work, pinned memory and cuBLAS on the other thread's own
stream are fine. Prints one line per call; exit status 0 (it reports, it does not judge).

Usage: python dev/device/capture_rules.py > capture_rules.txt
"""
from __future__ import annotations

import threading

import torch
import torch.nn.functional as F

from styleforge.engine.capture import capturing


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def probe(name: str, call) -> str:
    opened, finished, other = threading.Event(), threading.Event(), {}

    def run():
        opened.wait(10)
        try:
            call()
            torch.ones(4, device="cuda").add_(1)   # a launch: its check raises an error left pending
            torch.cuda.current_stream().synchronize()
            other["result"] = "ok"
        except Exception as exc:
            other["result"] = _first_line(exc)
        finally:
            finished.set()

    x = torch.zeros(16, device="cuda")
    graph, worker = torch.cuda.CUDAGraph(), threading.Thread(target=run)
    worker.start()
    try:
        with capturing(graph):
            x.add_(1)
            opened.set()
            finished.wait(30)
            x.add_(1)
        graph.replay()
        torch.cuda.synchronize()
        capture = "ok" if torch.equal(x, torch.full_like(x, 2.0)) else "replay WRONG"
    except Exception as exc:
        capture = _first_line(exc)
    worker.join(30)
    return f"{name:<44} | other thread: {other.get('result', 'no result')[:90]:<90} | capture: {capture[:90]}"


def main() -> None:
    torch.ones(1, device="cuda")
    weight = torch.ones(1, 1, 1, 5, device="cuda") / 5
    sizes = iter(range(40, 400, 7))   # a shape cuDNN has not seen: its autotuner runs

    def conv(benchmark: bool):
        def call():
            side = next(sizes)
            image = torch.arange(side * side, device="cuda", dtype=torch.float32).view(1, 1, side, side)
            with torch.backends.cudnn.flags(enabled=True, benchmark=benchmark, deterministic=False,
                                            allow_tf32=True):
                F.conv2d(image, weight)
        return call

    def pinned_item():
        with torch.cuda.stream(torch.cuda.Stream()):
            host = torch.full((4096,), 2.0, pin_memory=True)
            on_gpu = host.to("cuda", non_blocking=True)
            del host
            float(on_gpu.sum())

    def matmul():
        with torch.cuda.stream(torch.cuda.Stream()):
            a = torch.arange(256 * 256, device="cuda", dtype=torch.float32).view(256, 256)
            (a @ a).sum().item()

    spare = {}

    def capture_spare():
        y = torch.zeros(4, device="cuda")
        g = torch.cuda.CUDAGraph()
        with capturing(g):
            y.add_(1)
        spare["graph"] = g

    def destroy_graph():
        spare.pop("graph")   # the last reference: cudaGraphExecDestroy on this thread

    def event_wait():
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            torch.ones(1 << 20, device="cuda").mul_(2)
            done = torch.cuda.Event()
            done.record(stream)
        done.synchronize()

    capture_spare()
    calls = [
        ("nothing (control)", lambda: None),
        ("cuDNN conv, autotuner ON, new shape", conv(True)),
        ("cuDNN conv, autotuner off, new shape", conv(False)),
        ("torch.cuda.synchronize()", torch.cuda.synchronize),
        ("torch.cuda.empty_cache()", torch.cuda.empty_cache),
        ("pinned upload, free, .item() (own stream)", pinned_item),
        ("cuBLAS matmul, fresh thread (own stream)", matmul),
        ("event record + wait (own stream)", event_wait),
        ("destroy a captured graph", destroy_graph),
    ]
    print(f"# torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}")
    for name, call in calls:
        print(probe(name, call), flush=True)


if __name__ == "__main__":
    main()
