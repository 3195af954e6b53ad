"""Load test of `styleforge serve`: N concurrent `gradio_client` clients × M requests each.

Starts a server on a free localhost port (or uses `--url` of one already running, localhost
only), sends every client's requests through the app's public `/stylize` endpoint, and reports
results received, lost requests, errors, client-side latency p50/p95 and the server's resident
memory after a warm-up round and after the run (flat memory = the engine is shared and nothing
accumulates per request). `--out FILE` appends one JSON row with the environment. Not a unit
test; `tests/app/test_serve_load.py` runs it at the issue's size (20 × 5).
Usage: python -m styleforge.bench.serve_load [--device cpu] [--clients 20] [--requests 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

ASSET = Path(__file__).resolve().parent.parent / "assets" / "chelsea.jpg"


@dataclass
class LoadResult:
    clients: int
    requests_per_client: int
    results: int = 0
    lost: int = 0
    errors: list[str] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    seconds: float = 0.0
    rss_warm_mb: float | None = None
    rss_after_mb: float | None = None
    image_size: tuple[int, int] = (0, 0)

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_s)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]

    def summary(self) -> dict:
        row = {k: v for k, v in asdict(self).items() if k not in ("latencies_s", "errors")}
        row.update(errors=len(self.errors), p50_ms=1000 * self.percentile(50),
                   p95_ms=1000 * self.percentile(95), mean_ms=1000 * statistics.fmean(self.latencies_s)
                   if self.latencies_s else None, requests_per_s=self.results / max(self.seconds, 1e-9))
        if self.rss_warm_mb is not None and self.rss_after_mb is not None:
            row["rss_growth_mb"] = self.rss_after_mb - self.rss_warm_mb
        return row


def rss_mb(pid: int) -> float | None:
    """Resident memory of a process (Linux /proc), None where that is not readable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _check_local(url: str) -> None:
    host = urlparse(url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"the load test only targets this machine, not {host!r}")


def run_load(url: str, image: str | Path, *, clients: int = 20, requests: int = 5, style: str | None = None,
             server_pid: int | None = None) -> LoadResult:
    """Each client: its own gradio_client.Client, `requests` calls of /stylize, one at a time."""
    from gradio_client import Client, handle_file
    from PIL import Image

    _check_local(url)
    result = LoadResult(clients, requests, image_size=Image.open(image).size)
    lock = threading.Lock()
    connections = [Client(url, verbose=False) for _ in range(clients)]
    style = style or connections[0].view_api(print_info=False, return_format="dict")["named_endpoints"]["/stylize"][
        "parameters"][1]["parameter_default"]

    def call(client) -> float:
        start = time.perf_counter()
        _, download, _ = client.predict(handle_file(str(image)), style, None, 0.0, 1.0, False,
                                        "Whole image", None, api_name="/stylize")
        if Image.open(download).size != result.image_size:
            raise AssertionError(f"result size {Image.open(download).size} != {result.image_size}")
        return time.perf_counter() - start

    with ThreadPoolExecutor(clients) as pool:                        # warm-up: one call each
        list(pool.map(call, connections))
    result.rss_warm_mb = rss_mb(server_pid) if server_pid else None

    def client_loop(client) -> None:
        for _ in range(requests):
            try:
                latency = call(client)
            except Exception as exc:  # counted and reported, the other clients go on
                with lock:
                    result.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                result.results += 1
                result.latencies_s.append(latency)

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client_loop, connections))
    result.seconds = time.perf_counter() - start
    result.lost = clients * requests - result.results - len(result.errors)
    result.rss_after_mb = rss_mb(server_pid) if server_pid else None
    return result


def _start_server(device: str, temp: Path):
    import socket
    import subprocess
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "styleforge", "serve", "--port", str(port),
                             "--device", device, "--temp-dir", str(temp)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = ""
    while "serving on" not in line:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            raise RuntimeError(f"styleforge serve exited with {proc.returncode}")
    return proc, f"http://127.0.0.1:{port}/"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m styleforge.bench.serve_load", description=__doc__.split("\n")[0])
    p.add_argument("--url", help="a running server on this machine (default: start one)")
    p.add_argument("--pid", type=int, help="its process id, for the memory numbers")
    p.add_argument("--device", default="auto", help="device of the server this starts")
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--requests", type=int, default=5, help="per client")
    p.add_argument("--image", default=str(ASSET), help="the photo every request sends")
    p.add_argument("--style", help="default: the app's default style")
    p.add_argument("--out", help="append the summary as one JSON line to this file")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sf-load-") as tmp:
        proc = None
        url, pid = args.url, args.pid
        if url is None:
            proc, url = _start_server(args.device, Path(tmp))
            pid = proc.pid
        try:
            result = run_load(url, args.image, clients=args.clients, requests=args.requests,
                              style=args.style, server_pid=pid)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(60)
    row = result.summary()
    if args.out:
        from .env import capture_environment
        row = {**capture_environment(args.device if args.device != "auto" else "cpu"), **row}
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
    sys.stdout.write(json.dumps(row, indent=1) + "\n")
    for error in result.errors[:5]:
        sys.stdout.write(f"error: {error}\n")
    return 0 if result.results == args.clients * args.requests else 1


if __name__ == "__main__":
    sys.exit(main())
