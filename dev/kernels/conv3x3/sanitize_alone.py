"""conv3x3_norm's configurations (both hand-off forms, and the sums hand-off), the residual chain and the
head from sums alone, for compute-sanitizer.

Under racecheck, the GPU test that also runs a cuDNN convolution for its error budget aborts with
"Internal Sanitizer Error: failed to handle a hardware exception" inside that cuDNN call, after our
kernel has run; this script launches only our kernels (every configuration, odd sizes, a residual,
batch 2) and checks them against the twin on the CPU.
    compute-sanitizer --tool racecheck python3 dev/kernels/conv3x3/sanitize_alone.py
"""
from __future__ import annotations

import torch

from styleforge import kernels
from styleforge.kernels.reference import conv3x3 as ref

kernels.register_ops()        # ops are defined on first use (kernels/library.py)
kernels.ensure_cuda_kernels()  # and their CUDA library loaded on first use

CASES = ((128, 128, 1, 1, (37, 50)), (128, 64, 2, 1, (9, 13)), (64, 32, 2, 1, (13, 10)), (32, 64, 1, 2, (23, 41)),
         (64, 128, 1, 2, (19, 37)))
for cin, cout, up, stride, (h, w) in CASES:
    g = torch.Generator().manual_seed(cin + cout)
    x = (torch.randn(2, cin, h, w, generator=g) * 2 + 1).to(torch.bfloat16).contiguous(
        memory_format=torch.channels_last)
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

# The sums hand-off (session 10): each configuration takes its input norm from a producer's sums
# (in_state, zeroed by its last CTA) and leaves its output's sums (affine=False); sizes with more
# tiles than resident CTAs at batch 2, so the persistent grids (conv2, deconv2) run several tiles and
# both samples per CTA. Then the chain's first link and the head from sums.
from styleforge.kernels.reference import conv9x9 as ref9  # noqa: E402
from styleforge.kernels.reference import norm_sums as sums  # noqa: E402

SUMS_CASES = ((128, 64, 2, 1, (9, 13)), (64, 32, 2, 1, (96, 96)), (32, 64, 1, 2, (300, 300)), (64, 128, 1, 2, (19, 37)))
for cin, cout, up, stride, (h, w) in SUMS_CASES:
    g = torch.Generator().manual_seed(cin * cout)
    x = (torch.randn(2, cin, h, w, generator=g) * 2 + 1).to(torch.bfloat16).contiguous(
        memory_format=torch.channels_last)
    weight = ref.pack_weight((torch.randn(cout, cin, 3, 3, generator=g) / (9 * cin) ** 0.5).to(torch.bfloat16))
    nw_in, nb_in = torch.rand(cin, generator=g) + 0.5, torch.randn(cin, generator=g)
    nw, nb = torch.rand(cout, generator=g) + 0.5, torch.randn(cout, generator=g)
    in_state = torch.zeros(ref.norm_state_bytes(2, cin), dtype=torch.uint8)
    sums.add_sums(in_state, x)
    out_state = torch.zeros(ref.norm_state_bytes(2, cout), dtype=torch.uint8)
    want = ref.conv3x3_norm(x, weight, None, None, None, True, up, False, nw, nb, 1e-5, True, stride, out_state,
                            in_state.clone(), nw_in, nb_in, False)
    cin_state, cout_state = in_state.cuda(), torch.zeros_like(out_state, device="cuda")
    got = torch.ops.styleforge.conv3x3_norm(x.cuda(), weight.cuda(), None, None, None, True, up, False, nw.cuda(),
                                            nb.cuda(), 1e-5, True, stride, cout_state, cin_state, nw_in.cuda(),
                                            nb_in.cuda(), False)
    torch.cuda.synchronize()
    err = float((got[0].cpu().double() - want[0].double()).norm() / want[0].double().norm())
    s_err = float((cout_state.cpu()[256:].view(torch.float64).view(8, -1).sum(0)
                   - out_state[256:].view(torch.float64).view(8, -1).sum(0)).norm()
                  / out_state[256:].view(torch.float64).norm())
    print(f"{cin}->{cout} up {up} stride {stride} 2x{h}x{w}, sums hand-off: rel err vs twin {err:.2e}, "
          f"sums {s_err:.2e}, "
          f"input state zero after: {not cin_state.any()}")
    assert err < 1e-2 and s_err < 1e-5 and not cin_state.any()

x = (torch.randn(2, 128, 37, 50, generator=g) + 0.5).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
in_state = torch.zeros(ref.norm_state_bytes(2, 128), dtype=torch.uint8)
sums.add_sums(in_state, x)
nw_in, nb_in = torch.rand(128, generator=g) + 0.5, torch.randn(128, generator=g)
want = ref.residual_chain(x, None, None, weights, nws, nbs, in_state=in_state.clone(), in_norm_weight=nw_in,
                          in_norm_bias=nb_in)
cin_state = in_state.cuda()
got = torch.ops.styleforge.conv3x3_residual_chain(x.cuda(), None, None, [w.cuda() for w in weights],
                                                  [v.cuda() for v in nws], [v.cuda() for v in nbs], 1e-5, state,
                                                  cin_state, nw_in.cuda(), nb_in.cuda())
torch.cuda.synchronize()
err = float((got[0].cpu().double() - want[0].double()).norm() / want[0].double().norm())
print(f"residual chain from sums 2x37x50: rel err vs twin {err:.2e}, "
      f"states zero after: {not state.any() and not cin_state.any()}")
assert err < 3e-2 and not state.any() and not cin_state.any()

# The chain leaving its last norm as sums (out_state, session 15), twice on one state: the second
# launch clears what the first left (its last barrier's counter, link 2's sums).
out_sums = torch.zeros(ref.norm_state_bytes(2, 128), dtype=torch.uint8)
want = ref.residual_chain(x, scale, shift, weights, nws, nbs, out_state=out_sums)
for call in range(2):
    cout_state = torch.zeros_like(out_sums, device="cuda")
    got = torch.ops.styleforge.conv3x3_residual_chain(x.cuda(), scale.cuda(), shift.cuda(), [w.cuda() for w in weights],
                                                      [v.cuda() for v in nws], [v.cuda() for v in nbs], 1e-5, state,
                                                      None, None, None, cout_state)
    torch.cuda.synchronize()
    err = float((got[0].cpu().double() - want[0].double()).norm() / want[0].double().norm())
    s_err = float((cout_state.cpu()[256:].view(torch.float64).view(8, -1).sum(0)
                   - out_sums[256:].view(torch.float64).view(8, -1).sum(0)).norm()
                  / out_sums[256:].view(torch.float64).norm())
    print(f"residual chain to out_state 2x37x50, call {call}: rel err vs twin {err:.2e}, sums {s_err:.2e}")
    assert err < 3e-2 and s_err < 1e-2

h = (torch.randn(2, 32, 70, 90, generator=g) * 2 + 3).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
head_w = (torch.randn(3, 32, 9, 9, generator=g) / 51).to(torch.bfloat16)
bias, nw5, nb5 = torch.randn(3, generator=g), torch.rand(32, generator=g) + 0.5, torch.randn(32, generator=g)
in_state = torch.zeros(ref.norm_state_bytes(2, 32), dtype=torch.uint8)
sums.add_sums(in_state, h)
want = ref9.conv9x9_from_sums(h, head_w, bias, True, 4, in_state.clone(), nw5, nb5)
cin_state = in_state.cuda()
got = torch.ops.styleforge.conv9x9_from_sums(h.cuda(), head_w.cuda(), bias.cuda(), True, 4, cin_state, nw5.cuda(),
                                             nb5.cuda(), 1e-5)
torch.cuda.synchronize()
err = float((got.cpu().double() - want.double()).norm() / want.double().norm())
print(f"head from sums 2x70x90: rel err vs twin {err:.2e}, state zero after: {not cin_state.any()}")
assert err < 1e-2 and not cin_state.any()
