"""The pure-PyTorch twins of the ops, one module per op (`reference/<op>.py` for `kernels/<op>.py`).

Each twin is the op's test oracle, its benchmark baseline and its runtime fallback (CPU, or CUDA
without the built kernels), and holds the one statement of the op's argument rules. `norm_sums`
is the twin of the fp64 sums hand-off that conv9x9 and conv3x3 share. Not fast.
"""
