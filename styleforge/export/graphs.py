"""Export-ready forms of the two models: the engine's whole call contract in one traceable forward.

`StyleGraph` is `TransformerNet` plus what `engine.pipeline.Stylizer` does around it at stroke
scale 1: reflection-pad to a multiple of 4, run, crop back, clamp to 0–255. `ArbitraryGraph` is
`ArbitraryStyleNet` with one painting: encode it, share its code across the photo batch, and apply
the model `passes` times as `engine.arbitrary` does (pad to the model's multiple, 8 for the shipped
relu3_1 + relu4_1 model, crop, clamp each pass). Both are plain PyTorch modules: built here, traced by
`torch.export`, and never our custom
ops (the arbitrary model's attention and FFN run their matmul/softmax twins under
`kernels.using("reference")`, see `trace.py`). Not here: writing files, checking them.

Two shape rules make the graphs valid for every size, not only the traced one:
- the pad is (m − h mod m) mod m, whose range [0, m − 1] the exporter can bound, so "pad < side"
  (reflection's rule) holds for any side ≥ `min_side`; the engine's replicate fallback for tiny
  images is therefore left out, and `min_side` is the exported file's smallest input side;
- the crop is a negative constant pad, not a slice: a slice's "is the crop empty?" branch would
  be fixed by the traced size (pad 0 or not) and fail for the other kind of size.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..engine.pipeline import MIN_SIDE, MULTIPLE
from ..models.arbitrary import ArbitraryStyleNet
from ..models.arbitrary.transfer import StyleLevel
from ..models.transformer_net import TransformerNet


def pad_amount(side: torch.SymInt | int, multiple: int) -> torch.SymInt | int:
    return (multiple - side % multiple) % multiple


def run_padded(net, x: torch.Tensor, multiple: int) -> torch.Tensor:
    """net on x reflection-padded (bottom, right) to a multiple, cropped back, clamped to 0–255."""
    ph, pw = pad_amount(x.shape[-2], multiple), pad_amount(x.shape[-1], multiple)
    y = net(F.pad(x, (0, pw, 0, ph), mode="reflect"))
    return F.pad(y, (0, -pw, 0, -ph)).clamp(0, 255)


class StyleGraph(nn.Module):
    """image float32 (N, 3, H, W) in 0–255, H, W ≥ 16 → stylized, same shape, 0–255."""

    min_side = MIN_SIDE   # ≥ 5 for the 9×9 reflection pad, and pads of 0–3 stay below it

    def __init__(self, net: TransformerNet):
        super().__init__()
        self.net = net
        self.eval()

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return run_padded(self.net, image, MULTIPLE)


class ArbitraryGraph(nn.Module):
    """photo float32 (N, 3, H, W), painting float32 (1, 3, S, S), both 0–255, H, W ≥ 2 × the
    model's multiple (16 for the shipped model) →
    the photo stylized after the painting, (N, 3, H, W) in 0–255.

    S is fixed at export (the traced painting's size): the painting's tokens are subsampled with a
    stride chosen from its size (`transfer.subsample_grid`), and a fixed S keeps that stride, and
    so the engine's result, exact.
    """

    def __init__(self, model: ArbitraryStyleNet, passes: int):
        super().__init__()
        self.model = model
        self.passes = passes
        self.multiple = model.config.multiple
        self.min_side = 2 * self.multiple       # pad_to_multiple's floor; pads stay below it
        self.eval()

    def _stylize(self, photo: torch.Tensor, code: dict[str, StyleLevel]) -> torch.Tensor:
        m = self.model
        return m.decode(m.transfer_features(m.encode(photo), [(code, 1.0)]))

    def forward(self, photo: torch.Tensor, painting: torch.Tensor) -> torch.Tensor:
        b = photo.shape[0]
        code = {level: StyleLevel(c.k.expand(b, -1, -1, -1), c.v.expand(b, -1, -1, -1),
                                  c.mean.expand(b, -1, -1), c.std.expand(b, -1, -1))
                for level, c in self.model.encode_style(painting).items()}
        out = photo
        for _ in range(self.passes):
            out = run_padded(lambda x: self._stylize(x, code), out, self.multiple)
        return out
