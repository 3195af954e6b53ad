"""A painting's keys merged into fewer tokens, so the attention costs less per content position.

The attention cost is N_content × N_style per head. `merge_style_level(level, tokens)` clusters
each head's style keys (k-means on the qk columns: Lloyd's iterations from farthest-point seeds,
deterministic) and gives one token per cluster:

    key    k̄_c = the centroid of its keys
    value  the mean of its [v, v²]      (the first and second moments, hence the std, are kept
                                         exactly for the cluster's own tokens)
    bias   log n_c, added to the logits (`StyleLevel.bias`)

so that softmax over the merged tokens equals the softmax over the originals wherever a cluster's
keys coincide (n_c equal keys weigh n_c·exp(q·k)): Bolya et al. 2023's proportional attention
(ToMe), with k-means instead of bipartite matching since the code is built once per painting and
reused for every photo. Where keys differ the error grows with their spread around k̄_c
(docs/cpu.md measures it; `tests/models/test_arbitrary_merge.py` bounds it against the float64
attention over all tokens). Strided subsampling to as few tokens loses several times more
(the same docs). Not the model's own rule (`subsample_grid` picks the tokens it trained with);
used where attention time matters more than the last bit of fidelity (the OpenVINO CPU path).
"""
from __future__ import annotations

import contextlib

import torch

from .transfer import StyleLevel, wide

ITERATIONS = 10
EMPTY_BIAS = -80.0     # a cluster left empty: exp(-80) ≈ 2e-35 of a key's weight, finite in fp32


@contextlib.contextmanager
def _one_thread():
    """torch on one intra-op thread meanwhile. The k-means is some 50 small ops on (H, Ns, M)
    tensors, where the threads' hand-offs cost more than they share, several times more on a busy
    2-core host (docs/cpu.md). Process-wide while it lasts: other threads' torch ops in that
    window run on one thread too (slower, never wrong)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _assign(keys: torch.Tensor, centroids: torch.Tensor) -> torch.Tensor:
    """keys (G, N, D), centroids (G, M, D) → (G, N) index of the nearest centroid."""
    dist = (centroids * centroids).sum(-1)[:, None, :] - 2 * keys @ centroids.transpose(1, 2)
    return dist.argmin(-1)


def _farthest_points(keys: torch.Tensor, m: int) -> torch.Tensor:
    """keys (G, N, D) → (G, M, D): the key farthest from the mean, then each time the key farthest
    from those chosen. Deterministic, and it seeds the outlying keys too, which a query near them
    weighs most; Lloyd's iterations from evenly spaced tokens left groups of equal keys merged."""
    g = keys.shape[0]
    rows = torch.arange(g, device=keys.device)
    pick = ((keys - keys.mean(1, keepdim=True)) ** 2).sum(-1).argmax(-1)          # (G,)
    chosen = [pick]
    nearest = ((keys - keys[rows, pick][:, None]) ** 2).sum(-1)                   # (G, N)
    for _ in range(m - 1):
        pick = nearest.argmax(-1)
        chosen.append(pick)
        nearest = torch.minimum(nearest, ((keys - keys[rows, pick][:, None]) ** 2).sum(-1))
    return keys[rows[:, None], torch.stack(chosen, 1)].clone()


def _cluster_means(x: torch.Tensor, assign: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x (G, N, D), assign (G, N) → (sums / counts (G, M, D), counts (G, M))."""
    g, n, d = x.shape
    sums = x.new_zeros(g, m, d).scatter_add_(1, assign[..., None].expand(g, n, d), x)
    counts = x.new_zeros(g, m).scatter_add_(1, assign, x.new_ones(g, n))
    return sums / counts.clamp_min(1)[..., None], counts


@torch.no_grad()
@_one_thread()
def merge_style_level(level: StyleLevel, tokens: int, qk_dim: int, iterations: int = ITERATIONS) -> StyleLevel:
    """One level's code with at most `tokens` tokens per head (unchanged when it has no more).
    `qk_dim`: the keys' real width (the rest is the zero padding the CUDA kernel needs)."""
    if tokens < 1:
        raise ValueError(f"merge_style_level: tokens must be ≥ 1, got {tokens}")
    if level.bias is not None:
        raise ValueError("merge_style_level: the code is already merged")
    b, h, n, width = level.k.shape
    if n <= tokens:
        return level
    work = wide(level.k).dtype
    keys = level.k[..., :qk_dim].to(work).reshape(b * h, n, qk_dim)
    values = level.v.to(work).reshape(b * h, n, level.v.shape[-1])
    centroids = _farthest_points(keys, tokens)
    for _ in range(iterations):
        means, counts = _cluster_means(keys, _assign(keys, centroids), tokens)
        centroids = torch.where(counts[..., None] > 0, means, centroids)   # an empty cluster stays put
    assign = _assign(keys, centroids)
    centroids, counts = _cluster_means(keys, assign, tokens)
    merged_v, _ = _cluster_means(values, assign, tokens)
    bias = torch.where(counts > 0, counts.clamp_min(1).log(), torch.full_like(counts, EMPTY_BIAS))
    k = torch.nn.functional.pad(centroids, (0, width - qk_dim)).reshape(b, h, tokens, width)
    return StyleLevel(k.to(level.k.dtype), merged_v.reshape(b, h, tokens, -1).to(level.v.dtype),
                      level.mean, level.std, bias.reshape(b, h, 1, tokens).to(wide(level.k).dtype))


def merge_style_code(code: dict[str, StyleLevel], tokens: dict[str, int], qk_dim: int) -> dict[str, StyleLevel]:
    """Every level named in `tokens` merged to its count; the others as they are."""
    return {level: merge_style_level(lv, tokens[level], qk_dim) if level in tokens else lv
            for level, lv in code.items()}

