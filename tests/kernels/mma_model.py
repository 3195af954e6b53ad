"""A CPU model of one `mma.sync.m16n8k16` from per-lane fragments, shared by the kernel tests.

The PTX fragment tables (g = lane // 4, t = lane % 4): A register r of a lane holds (row, col) =
(g + 8·(r & 1), 2t + 8·(r >> 1)) and the next column in its high half; B register r holds
(k, n) = (2t + 8r, g) and (2t + 8r + 1, g); C element e holds (g + 8·(e >> 1), 2t + (e & 1)).
A test feeds it the pairs its kernel's index math would load and compares with A·B: layout bugs
show up without a GPU.
"""
import numpy as np


def mma_from_fragments(a_pairs, b_pairs):
    """D = A·B rebuilt from per-lane fragments: a_pairs[lane][r] and b_pairs[lane][r] are (lo, hi).

    Returns D in C-fragment order, [lane][e]."""
    A, B = np.full((16, 16), np.nan), np.full((16, 8), np.nan)
    for lane in range(32):
        g, t = divmod(lane, 4)
        for r in range(4):
            row, col = g + 8 * (r & 1), 2 * t + 8 * (r >> 1)
            A[row, col], A[row, col + 1] = a_pairs[lane][r]
        for r in range(2):
            B[2 * t + 8 * r, g], B[2 * t + 8 * r + 1, g] = b_pairs[lane][r]
    assert not np.isnan(A).any() and not np.isnan(B).any(), "a fragment element was never loaded"
    D = A @ B
    return np.array([[D[g + 8 * (e >> 1), 2 * t + (e & 1)] for e in range(4)]
                     for g, t in (divmod(lane, 4) for lane in range(32))])
