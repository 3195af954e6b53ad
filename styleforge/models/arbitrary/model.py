"""`ArbitraryStyleNet`: any painting as the style, in one forward pass (no per-style training).

Encoder (frozen VGG16 to relu5_1, `encoder.py`) → one AdaAttN block per transfer level
(`transfer.py`, default relu4_1 and relu5_1, Liu et al. 2021) → the deeper level's output
upsampled ×2 through a 1×1 conv and added to the shallower one (AdaAttN's merge, with a 1×1
instead of a 3×3 conv) → decoder (`decoder.py`). The painting's keys and values are computed
once (`encode_style`) and reused for every frame; several paintings mix in feature space, and
`alpha` blends the stylized features with the photo's (Huang & Belongie 2017's content–style
trade-off). Any content size: `stylize` pads to a multiple of 16 (reflection, or replication
when the image is smaller than the pad) and crops back. The model works in 0–255 like the rest
of styleforge. Not here: weights files (`weights.py`), devices and caching (`engine/arbitrary.py`).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import ArbitraryConfig
from .decoder import build_decoder
from .encoder import LEVELS, VGGEncoder, level_index
from .transfer import AdaAttnBlock, StyleLevel, normalized, subsample_grid

StyleCode = dict[str, StyleLevel]


def pad_to_multiple(x: torch.Tensor, multiple: int) -> torch.Tensor:
    """Pad bottom/right so H, W are multiples of `multiple` and at least 2·multiple."""
    h, w = x.shape[-2:]

    def up(v: int) -> int:
        return max(2 * multiple, -(-v // multiple) * multiple)

    ph, pw = up(h) - h, up(w) - w
    if ph == 0 and pw == 0:
        return x
    mode = "reflect" if ph < h and pw < w else "replicate"
    return F.pad(x, (0, pw, 0, ph), mode=mode)


def pooled(level: str) -> str:
    """The features' key for avgpool(F_level, 2), when an encoder hands it in pooled (the
    OpenVINO one: a quarter of the tensor leaves it) instead of F_level itself."""
    return f"{level}/pool2"


def style_shares(weights: list[float]) -> list[float]:
    """Relative weights → shares summing to 1. Divided by the largest first, so weights near the
    float maximum (1e308 + 1e308 = inf) still mix as they should; a weight that is negative or
    not finite, or no positive weight, is a ValueError (it would extrapolate or wash out)."""
    if any(not math.isfinite(w) or w < 0 for w in weights):
        raise ValueError(f"style weights must be finite and ≥ 0, got {list(weights)}")
    top = max(weights, default=0.0)
    if top <= 0:
        raise ValueError("style weights must sum to a positive number")
    scaled = [w / top for w in weights]
    total = sum(scaled)
    return [w / total for w in scaled]


class ArbitraryStyleNet(nn.Module):
    def __init__(self, config: ArbitraryConfig = ArbitraryConfig(), encoder: VGGEncoder | None = None):
        super().__init__()
        self.config = config
        self.encoder = (encoder or VGGEncoder(config.widths)).eval().requires_grad_(False)
        if self.encoder.widths != config.widths:
            raise ValueError(f"encoder widths {self.encoder.widths} != config widths {config.widths}")
        if level_index(self.encoder.depth) < level_index(config.levels[-1]):
            raise ValueError(f"the encoder ends at {self.encoder.depth}, before {config.levels[-1]}")
        ch = {level: config.widths[level_index(level)] for level in LEVELS}
        self.transfer = nn.ModuleDict({
            level: AdaAttnBlock(ch[level], ch[level] + ch[self._above(level)], config.heads, config.qk_dim,
                                max(1, round(config.ffn_mult * ch[level])))
            for level in config.levels})
        self.merge = nn.ModuleDict({
            level: nn.Conv2d(ch[deeper], ch[level], 1)
            for level, deeper in zip(config.levels[:-1], config.levels[1:])})
        self.decoder = build_decoder(config.widths, config.levels[0])

    @staticmethod
    def _above(level: str) -> str:
        return LEVELS[level_index(level) - 1]

    def train(self, mode: bool = True) -> ArbitraryStyleNet:
        super().train(mode)
        self.encoder.eval()          # frozen: never in training mode
        return self

    def trainable_state_dict(self) -> dict[str, torch.Tensor]:
        return {k: v for k, v in self.state_dict().items() if not k.startswith("encoder.")}

    # -- pieces ---------------------------------------------------------------------------
    def encode(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.encoder(image, last=self.config.levels[-1])

    def key_features(self, feats: dict[str, torch.Tensor], level: str) -> torch.Tensor:
        """[norm(F_l), norm(avgpool(F_above))]: what queries and keys are projected from
        (avgpool(F_above) from `feats[pooled(above)]` when the encoder pooled it)."""
        here, above = feats[level], feats.get(pooled(self._above(level)))
        if above is None:
            above = F.avg_pool2d(feats[self._above(level)], 2)
        above = above[..., :here.shape[-2], :here.shape[-1]]
        return torch.cat([normalized(here), normalized(above)], dim=1)

    def encode_style_features(self, feats: dict[str, torch.Tensor]) -> StyleCode:
        code = {}
        for level in self.config.levels:
            keys = subsample_grid(self.key_features(feats, level), self.config.max_style_tokens)
            values = subsample_grid(feats[level], self.config.max_style_tokens)
            code[level] = self.transfer[level].encode_style(values, keys)
        return code

    def encode_style(self, painting: torch.Tensor) -> StyleCode:
        """painting (B, 3, H, W) 0–255, H, W ≥ 2·16 → the cached keys/values per level."""
        return self.encode_style_features(self.encode(painting))

    def transfer_features(self, content_feats: dict[str, torch.Tensor],
                          styles: list[tuple[StyleCode, float]], alpha: float = 1.0) -> dict[str, torch.Tensor]:
        """Per level: Σ wᵢ·AdaAttN(content, styleᵢ) (weights normalised), then lerp with the content."""
        shares = style_shares([w for _, w in styles])
        out = {}
        for level in self.config.levels:
            fc = content_feats[level]
            keys = self.key_features(content_feats, level)
            mixed = sum(share * self.transfer[level](fc, keys, code[level])
                        for (code, _), share in zip(styles, shares))
            out[level] = mixed if alpha >= 1.0 else torch.lerp(fc.to(mixed.dtype), mixed, alpha)
        return out

    def decode(self, feats: dict[str, torch.Tensor]) -> torch.Tensor:
        """Transfer outputs → image (B, 3, H, W) in 0–255 (not clamped)."""
        levels = self.config.levels
        x = feats[levels[-1]]
        for level in reversed(levels[:-1]):
            up = F.interpolate(self.merge[level](x), scale_factor=2.0, mode="nearest")
            x = feats[level] + up[..., :feats[level].shape[-2], :feats[level].shape[-1]]
        y = self.decoder(x)
        return y * self.encoder.std.to(y.dtype) + self.encoder.mean.to(y.dtype)

    # -- whole passes ---------------------------------------------------------------------
    def forward(self, content_feats: dict[str, torch.Tensor], style_feats: dict[str, torch.Tensor]) -> torch.Tensor:
        """Training pass on encoder features (`encode` of content and style, sides multiples of
        16, same batch size) → image (B, 3, H, W) 0–255, not clamped. The one call DDP wraps."""
        code = self.encode_style_features(style_feats)
        return self.decode(self.transfer_features(content_feats, [(code, 1.0)]))

    def stylize(self, content: torch.Tensor, styles: list[tuple[StyleCode, float]],
                alpha: float = 1.0) -> torch.Tensor:
        """content (B, 3, H, W) 0–255, any H, W → (B, 3, H, W) 0–255 clamped."""
        h, w = content.shape[-2:]
        x = pad_to_multiple(content, self.config.multiple)
        out = self.decode(self.transfer_features(self.encode(x), styles, alpha))
        return out[..., :h, :w].clamp(0, 255)


def parameter_counts(model: ArbitraryStyleNet) -> dict[str, int]:
    return {name: sum(p.numel() for p in getattr(model, name).parameters())
            for name in ("encoder", "transfer", "merge", "decoder")}
