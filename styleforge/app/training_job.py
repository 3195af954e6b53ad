"""One background training job at a time, for the web app's "Train a style" tab.

A `TrainingJob` runs `styleforge.training.Trainer` step by step on a worker thread so the page
can poll its progress, show the latest sample sheet as a preview, and offer the weights when
done. The loop calls only the Trainer's public steps (`step`, `flush_log`, `save_samples`,
`export`); losses, data and checkpoints are the training module's. Jobs write only into the
folder they are given. Not here: the tab's layout (`layout.py`) or GPU detection.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..training import TrainConfig, Trainer


@dataclass
class JobStatus:
    state: str = "idle"            # idle | starting | running | done | failed | cancelled
    step: int = 0
    total: int = 0
    message: str = ""
    preview: str | None = None     # latest sample sheet (PNG)
    weights: str | None = None     # the trained .safetensors, when done
    history: list[dict] = field(default_factory=list)


class TrainingJob:
    """Starts at most one run; `status()` is safe to call from any thread."""

    def __init__(self, preview_every: int = 100):
        self.preview_every = preview_every
        self._lock = threading.Lock()
        self._status = JobStatus()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None

    def status(self) -> JobStatus:
        with self._lock:
            return JobStatus(**vars(self._status))

    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, config: TrainConfig) -> None:
        if self.busy():
            raise RuntimeError("a training job is already running; wait for it or cancel it")
        config.check_paths()
        self._cancel.clear()
        self._update(state="starting", step=0, total=config.steps, message="loading VGG and photos",
                     preview=None, weights=None, history=[])
        self._thread = threading.Thread(target=self._run, args=(config,), name="styleforge-train",
                                        daemon=True)
        self._thread.start()

    def cancel(self, wait: float | None = None) -> None:
        self._cancel.set()
        if self._thread is not None and wait is not None:
            self._thread.join(wait)

    def _update(self, **changes) -> None:
        with self._lock:
            for key, value in changes.items():
                setattr(self._status, key, value)

    def _run(self, config: TrainConfig) -> None:
        try:
            trainer = Trainer(config)
            total = trainer.total_steps
            self._update(state="running", total=total, message="training")
            start = time.perf_counter()
            while trainer.step_count < total and not self._cancel.is_set():
                trainer.step()
                step = trainer.step_count
                if step % config.log_every == 0:
                    row = trainer.flush_log()
                    self._update(message=f"style loss {row['style']:.3g} · content loss "
                                         f"{row['content']:.3g} · {row['images_per_s']:.0f} images/s",
                                 history=list(trainer.history))
                if step % self.preview_every == 0 and step < total:
                    self._update(preview=str(trainer.save_samples()))
                self._update(step=step)
            if self._cancel.is_set():
                self._update(state="cancelled", message=f"cancelled at step {trainer.step_count}")
                return
            trainer.flush_log()
            seconds = time.perf_counter() - start
            preview = trainer.save_samples()
            out = trainer.export(seconds, trainer.step_count * config.batch_size / max(seconds, 1e-9))
            self._update(state="done", step=trainer.step_count, preview=str(preview),
                         weights=str(Path(out)), history=list(trainer.history),
                         message=f"done: {trainer.step_count} steps in {seconds:.0f} s")
        except Exception as exc:  # the page shows why; the server keeps serving
            self._update(state="failed", message=f"{type(exc).__name__}: {exc}")
