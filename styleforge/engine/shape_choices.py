"""What the fused runner has chosen per (layer, input shape), and where a new shape borrows from.

`ShapeChoices` is `FusedRunner.layer_choices`: a dict {(layer, input shape): LayerChoice} of one
runner's dtype — the 9×9 layers' implementation (op or cuDNN) and, under ("residual", image
shape), the plan its captured graph runs. Besides the choices made in this process it holds
those of the GPU's `PlanCache` (`adopt_plan_cache`; the ones made here win), records each newly
timed choice there (`remember`), and finds, for a shape never timed, the timed choice at the
nearest plane within SIMILAR_PIXELS (`similar`, `known_plan`). Not here: timing (`autotune`),
the cache's file (`plan_cache`) or running anything (`runner`).
"""
from __future__ import annotations

import math

import torch

from .autotune import LayerChoice
from .plan_cache import PlanCache

SIMILAR_PIXELS = 1.25      # a new shape takes the plan timed at a shape this close in pixels


class ShapeChoices(dict):
    """{(layer, input shape): LayerChoice} of `dtype`, with the plan cache it reads and writes."""

    def __init__(self, dtype: torch.dtype):
        super().__init__()
        self.dtype = dtype
        self.plan_cache: PlanCache | None = None

    def adopt_plan_cache(self, cache: PlanCache | None) -> None:
        """Take `cache`'s choices for this dtype (those made here win) and record new ones in it."""
        self.plan_cache = cache
        if cache is not None:
            for key, choice in cache.choices(self.dtype).items():
                self.setdefault(key, choice)

    def remember(self, name: str, shape: tuple[int, ...], choice: LayerChoice) -> None:
        if self.plan_cache is not None:
            self.plan_cache.record(self.dtype, name, shape, choice)

    def known_plan(self, shape: tuple[int, ...]) -> LayerChoice | None:
        """The plan timed at `shape`, else the one timed at the shape nearest in pixels within
        SIMILAR_PIXELS: the winner follows the plane's size, so timing four captures again at
        every new size of a mixed folder buys nothing."""
        exact = self.get(("residual", shape))
        if exact is not None and exact.plans:
            return exact
        return self.similar("residual", shape, lambda c: bool(c.plans))

    def similar(self, name: str, shape: tuple[int, ...], timed) -> LayerChoice | None:
        """A copy of the `timed` choice for `name` at the same batch and channels whose plane is
        nearest to `shape`'s in pixels, within SIMILAR_PIXELS; None if there is none."""
        n, c, h, w = shape
        near = [(abs(math.log(k[1][2] * k[1][3] / (h * w))), k[1], choice)
                for k, choice in self.items()
                if k[0] == name and k[1][:2] == (n, c) and k[1] != shape and timed(choice)]
        if not near:
            return None
        distance, like, choice = min(near, key=lambda t: t[0])
        if distance > math.log(SIMILAR_PIXELS):
            return None
        return LayerChoice(choice.provider, f"timed at {like[2]}x{like[3]}", choice.op_ms, choice.cudnn_ms)
