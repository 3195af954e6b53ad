"""Training style networks: `train(TrainConfig(...))` is the Python entry of `styleforge train`.

Modules: config (settings), data (content set on device), losses (Johnson et al. 2016),
trainer (the loop, checkpoints, resume), samples (progress sheets), catalogue (the nine built-in
styles), evaluate (style-loss ratios on held-out photos), benchmark (training throughput).
The loop lives in `trainer.py`, not `train.py`, so that `styleforge.training.train` is the
function and not a module shadowed by it. The trainer loads on first use, so the CLI's parser
reads `TrainConfig` without importing torch.
"""
from .config import TrainConfig

__all__ = ["TrainConfig", "Trainer", "TrainResult", "train"]


def __getattr__(name: str):
    if name in ("Trainer", "TrainResult", "train"):
        from . import trainer
        return getattr(trainer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
