"""Helpers for the app's end-to-end tests: a `styleforge serve` subprocess on a free port.

Not a test module (no test_ prefix). The server is a real process so that SIGTERM, the port
binding and the temp folder are exercised as a user would meet them.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python -m styleforge serve` on 127.0.0.1; `stop()` sends SIGTERM and returns the exit code."""

    def __init__(self, temp_dir: Path, styles_dir: Path | None = None, *extra: str, timeout: float = 240):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if styles_dir is not None:
            env["STYLEFORGE_STYLES_DIR"] = str(styles_dir)
        else:
            env.pop("STYLEFORGE_STYLES_DIR", None)
        self.log = temp_dir.with_suffix(".log")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "styleforge", "serve", "--port", str(self.port), "--device", "cpu",
             "--temp-dir", str(temp_dir), *extra],
            stdout=subprocess.PIPE, stderr=open(self.log, "w"), text=True, env=env, cwd=ROOT)
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline and "serving on" not in line:
            line = self.proc.stdout.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}): {self.log.read_text()[-3000:]}")
        if "serving on" not in line:
            self.stop()
            raise RuntimeError(f"server did not start in {timeout:.0f} s: {self.log.read_text()[-3000:]}")

    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
