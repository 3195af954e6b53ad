"""Training throughput: images/s of `Trainer.step()` on random data, for `styleforge bench --training`.

It times the real training step (same Trainer, same precision, channels_last and fused Adam as
`styleforge train`) on random uint8 content and a random painting. VGG weights are random unless
a file is given: speed does not depend on their values. Not a quality measure, and it writes no
files. Its rows (`benchmarks/results/training.csv`) are what `docs/benchmarking.md` quotes.
"""
from __future__ import annotations

import math
import tempfile
import time

import torch

from ..engine.backends import resolve_device
from ..models.vgg import VGG16Features, freeze, load_vgg16
from .config import TrainConfig
from .trainer import Trainer, amp_dtype_for

CONTENT_IMAGES = 256      # random photos on the device; batches are drawn from them as in training


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_training_throughput(device: str = "cuda", batch_size: int = 8, image_size: int = 256,
                                steps: int = 50, warmup: int = 10, vgg_weights: str | None = None,
                                compile: bool = False) -> dict:
    """Time `steps` training steps after `warmup` untimed ones; returns a row of results."""
    dev = resolve_device(device)
    amp = amp_dtype_for("auto", dev)
    generator = torch.Generator().manual_seed(0)
    vgg = (load_vgg16(vgg_weights, dev, amp or torch.float32) if vgg_weights
           else freeze(VGG16Features(), dev, amp or torch.float32))
    content = torch.randint(0, 256, (CONTENT_IMAGES, 3, image_size, image_size), dtype=torch.uint8,
                            generator=generator)
    painting = torch.rand(1, 3, 2 * image_size, 2 * image_size, generator=generator) * 255
    with tempfile.TemporaryDirectory() as tmp:
        config = TrainConfig(out=f"{tmp}/bench.safetensors", device=dev.type, batch_size=batch_size,
                             image_size=image_size, steps=warmup + steps, compile=compile,
                             checkpoint_every=0, sample_every=0, progress=False)
        trainer = Trainer(config, vgg=vgg, content=content, painting=painting)
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        for _ in range(warmup):
            trainer.step()
        _sync(dev)
        start = time.perf_counter()
        for _ in range(steps):
            trainer.step()
        _sync(dev)
        seconds = time.perf_counter() - start
        final = trainer.flush_log() or {}
    return {
        "images_per_s": steps * batch_size / seconds,
        "ms_per_step": 1000 * seconds / steps,
        "batch_size": batch_size, "image_size": image_size, "steps": steps, "warmup": warmup,
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "precision": str(amp or torch.float32).removeprefix("torch."),
        "channels_last": dev.type == "cuda", "compile": compile,
        "fused_adam": dev.type == "cuda", "vgg_weights": "file" if vgg_weights else "random",
        "peak_memory_gb": torch.cuda.max_memory_allocated(dev) / 2**30 if dev.type == "cuda" else None,
        "loss_finite": all(math.isfinite(v) for v in final.values()),
        "torch": torch.__version__,
    }
