"""conv3x3_norm's configurations (both hand-off forms) and the residual chain alone, for compute-sanitizer.

Under racecheck, the GPU test that also runs a cuDNN convolution for its error budget aborts with
"Internal Sanitizer Error: failed to handle a hardware exception" inside that cuDNN call, after our
kernel has run; this script launches only our kernels (every configuration, odd sizes, a residual,
batch 2) and checks them against the twin on the CPU.
    compute-sanitizer --tool racecheck python3 dev/kernels/conv3x3/sanitize_alone.py
"""
from __future__ import annotations

import torch

from styleforge.kernels import reference_conv3x3 as ref

CASES = ((128, 128, 1, 1, (37, 50)), (128, 64, 2, 1, (9, 13)), (64, 32, 2, 1, (13, 10)), (32, 64, 1, 2, (23, 41)), (64, 128, 1, 2, (19, 37)))
for cin, cout, up, stride, (h, w) in CASES:
    g = torch.Generator().manual_seed(cin + cout)
    x = (torch.randn(2, cin, h, w, generator=g) * 2 + 1).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
    res = torch.randn(2, cin, h, w, generator=g).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
    weight = (torch.randn(cout, cin, 3, 3, generator=g) / (9 * cin) ** 0.5).to(torch.bfloat16)
    scale, shift = torch.rand(2, cin, generator=g) + 0.5, torch.randn(2, cin, generator=g)
    nw, nb = torch.rand(cout, generator=g) + 0.5, torch.randn(cout, generator=g)
    args = (ref.pack_weight(weight), scale, shift, res, True, up, False, nw, nb, 1e-5, True, stride)
    want = ref.conv3x3_norm(x, *args)
    cuda_args = tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in args)
    # Both hand-offs: the separate kernel, then the in-kernel one (a zeroed norm state, left zero).
    state = torch.zeros(ref.norm_state_bytes(2, cout), dtype=torch.uint8, device="cuda")
    for form, extra in (("hand-off kernel", ()), ("in-kernel hand-off", (state,))):
        got = torch.ops.styleforge.conv3x3_norm(x.cuda(), *cuda_args, *extra)
        torch.cuda.synchronize()
        err = float((got[0].cpu().double() - want[0].double()).norm() / want[0].double().norm())
        serr = float((got[1].cpu().double() - want[1].double()).norm() / want[1].double().norm())
        print(f"{cin}->{cout} up {up} stride {stride} {h}x{w}, {form}: rel err vs twin {err:.2e}, scale {serr:.2e}")
        assert err < 1e-2 and serr < 1e-3 and not state.any()

# The residual chain's persistent kernel: 4 links, batch 2, an odd plane (every CTA resident): 12 of
# each sample's 20 tiles inside the image (kept in shared memory between links, borders exchanged
# through global memory), the others cut by its edge.
g = torch.Generator().manual_seed(5)
x = (torch.randn(2, 128, 37, 50, generator=g) + 0.5).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
scale, shift = torch.rand(2, 128, generator=g) + 0.5, torch.randn(2, 128, generator=g)
weights = [ref.pack_weight((torch.randn(128, 128, 3, 3, generator=g) / (9 * 128) ** 0.5).to(torch.bfloat16))
           for _ in range(4)]
nws = [torch.rand(128, generator=g) + 0.5 for _ in range(4)]
nbs = [torch.randn(128, generator=g) for _ in range(4)]
want = ref.residual_chain(x, scale, shift, weights, nws, nbs)
state = torch.zeros(ref.chain_state_bytes(2, 4), dtype=torch.uint8, device="cuda")
got = torch.ops.styleforge.conv3x3_residual_chain(x.cuda(), scale.cuda(), shift.cuda(), [w.cuda() for w in weights],
                                                  [v.cuda() for v in nws], [v.cuda() for v in nbs], 1e-5, state)
torch.cuda.synchronize()
err = float((got[0].cpu().double() - want[0].double()).norm() / want[0].double().norm())
print(f"residual chain 4 links 2x37x50: rel err vs twin {err:.2e}, state zero after: {not state.any()}")
assert err < 3e-2 and not state.any()
