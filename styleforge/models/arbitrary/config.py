"""The arbitrary-style model's configuration and VGG level names, without importing torch.

`ArbitraryConfig` is read by argument parsing (`train-arbitrary --help`) and stored in the weights'
metadata as JSON; the modules that build the network import it from here.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

LEVELS = ("relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1")
LEVEL_ENDS = {"relu1_1": 2, "relu2_1": 7, "relu3_1": 12, "relu4_1": 19, "relu5_1": 26}
LEVEL_STRIDE = {"relu1_1": 1, "relu2_1": 2, "relu3_1": 4, "relu4_1": 8, "relu5_1": 16}
VGG16_WIDTHS = (64, 128, 256, 512, 512)


def level_index(level: str) -> int:
    if level not in LEVELS:
        raise ValueError(f"unknown VGG level {level!r}; expected one of {LEVELS}")
    return LEVELS.index(level)


@dataclass(frozen=True)
class ArbitraryConfig:
    levels: tuple[str, ...] = ("relu3_1", "relu4_1")
    heads: int = 8
    qk_dim: int = 32                 # per head, before zero-padding to the value head dim
    ffn_mult: float = 1.0            # FFN hidden = ffn_mult × channels
    max_style_tokens: int = 1024     # per level; the attention cost is N_content × this
    widths: tuple[int, ...] = VGG16_WIDTHS

    def __post_init__(self):
        levels = tuple(self.levels)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "widths", tuple(self.widths))
        idx = [level_index(level) for level in levels]
        if idx != sorted(set(idx)) or idx[0] < 2 or idx != list(range(idx[0], idx[-1] + 1)):
            raise ValueError(f"levels must be consecutive, shallow to deep, from relu3_1 on; got {levels}")
        if self.max_style_tokens < 1:
            raise ValueError("max_style_tokens must be ≥ 1")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ArbitraryConfig:
        return cls(**json.loads(text))

    @property
    def multiple(self) -> int:
        return LEVEL_STRIDE[self.levels[-1]]
