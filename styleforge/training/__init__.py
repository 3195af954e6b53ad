"""Training style networks: `train(TrainConfig(...))` is the Python entry of `styleforge train`.

Modules: config (settings), data (content set on device), losses (Johnson et al. 2016),
trainer (the loop, checkpoints, resume), samples (progress sheets), catalogue (the nine built-in
styles), evaluate (style-loss ratios on held-out photos), benchmark (training throughput).
The loop lives in `trainer.py`, not `train.py`, so that `styleforge.training.train` is the
function and not a module shadowed by it.
"""
from .config import TrainConfig
from .trainer import Trainer, TrainResult, train

__all__ = ["TrainConfig", "Trainer", "TrainResult", "train"]
