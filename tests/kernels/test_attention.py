"""The flash-style attention op (`styleforge::attention`) and its `nn.MultiheadAttention` drop-in.

CPU (CI): the twin against an independent float64 softmax (self/cross attention, masks, fully
masked rows → zeros, Nk = 0), gradcheck in float64 through the op, opcheck, named argument
errors, the reference|cuda switch, the module against `nn.MultiheadAttention` with its state
dict, a pure-Python model of the kernel's per-lane fragment index math (Q/K/P/V fragments,
ldmatrix.trans, row reductions, bank conflicts), and the real attention.cu run through the warp
emulator (tests/emulators/attention). GPU: the CUDA op against float64 under conftest's
rule (≤ 2× SDPA's same-dtype error) on the issue's shapes, D = 32/128, cross attention, masks,
16k tokens; fully masked rows, the fp32 opt-in, poisoned memory, non-contiguous inputs,
backward, CUDA graphs, opcheck, the module in bf16. Longer than 400 lines because the house rule
is one test file per op, and this op has a module and an emulator besides the kernel.
"""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import assert_matches_reference, cuda_kernel_names, rel_error
from mma_model import mma_from_fragments
from torch import nn

from styleforge import kernels
from styleforge.kernels.attention import kernel_head_dim
from styleforge.kernels.reference import attention as reference_attention
from styleforge.models.attention import MultiheadAttention

kernels.register_ops()   # these tests call torch.ops.styleforge.* directly (kernels/library.py)

OP = torch.ops.styleforge.attention.default
LOW = (torch.bfloat16, torch.float16)
EMULATOR = Path(__file__).resolve().parents[1] / "emulators" / "attention"


def make_qkv(b, h, nq, nk, d, dtype=torch.float64, device="cpu", seed=0, mask_frac=0.0):
    """Random q, k, v (never zero) and, with mask_frac > 0, a key padding mask keeping ≥ 1 key."""
    g = torch.Generator(device=device).manual_seed(seed)
    q, k, v = (torch.randn(b, h, n, d, generator=g, device=device, dtype=torch.float32).to(dtype)
               for n in (nq, nk, nk))
    mask = None
    if mask_frac > 0:
        mask = torch.rand(b, nk, generator=g, device=device) < mask_frac
        mask[:, 0] = False
    return q, k, v, mask


def math64(q, k, v, mask, scale):
    """Plain softmax attention in float64, written independently of the twin; masked rows → 0."""
    s = torch.einsum("bhqd,bhkd->bhqk", q.double(), k.double()) * scale
    if mask is not None:
        s = s.masked_fill(mask[:, None, None, :], float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.einsum("bhqk,bhkd->bhqd", p, v.double())


def sdpa(q, k, v, mask, scale):
    keep = None if mask is None else ~mask[:, None, None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=scale)


# ---- the twin and the op's registrations (CPU, CI) ------------------------------------------

TWIN_CASES = {
    "self 1x2x33x33 D=64": ((1, 2, 33, 33, 64), 0.0),
    "cross Nq=7 Nk=130 D=32 masked": ((2, 3, 7, 130, 32), 0.4),
    "cross Nq=65 Nk=5 D=128": ((1, 1, 65, 5, 128), 0.0),
    "odd D=48, B=3, masked": ((3, 2, 10, 17, 48), 0.5),
}


@pytest.mark.parametrize("label", list(TWIN_CASES))
@pytest.mark.parametrize("dtype", (torch.float64, torch.float32, *LOW), ids=str)
def test_twin_matches_float64_math(label, dtype):
    shape, frac = TWIN_CASES[label]
    q, k, v, mask = make_qkv(*shape, dtype=dtype, seed=len(label), mask_frac=frac)
    scale = shape[-1] ** -0.5
    out = reference_attention.attention(q, k, v, mask, scale)
    assert out.dtype == dtype and out.shape == q.shape
    want = math64(q, k, v, mask, scale)
    limit = {torch.float64: 1e-12, torch.float32: 1e-6, torch.bfloat16: 8e-3, torch.float16: 1e-3}[dtype]
    assert rel_error(out, want) <= limit


def test_fully_masked_rows_are_zero_not_nan():
    q, k, v, mask = make_qkv(3, 2, 5, 9, 32, torch.float32, mask_frac=0.3)
    mask[1] = True                                   # batch 1: every key ignored
    out = OP(q, k, v, mask, 0.3)
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    assert rel_error(out[[0, 2]], math64(q, k, v, mask, 0.3)[[0, 2]]) <= 1e-6
    no_keys = OP(q, k[:, :, :0], v[:, :, :0], None, 0.3)
    assert torch.equal(no_keys, torch.zeros_like(q))


@pytest.mark.slow
def test_gradcheck_through_the_op_in_float64():
    q, k, v, mask = make_qkv(2, 2, 5, 7, 8, torch.float64, seed=3, mask_frac=0.3)
    mask[1, :] = True
    mask[1, 3] = False
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    assert torch.autograd.gradcheck(lambda a, b, c: OP(a, b, c, mask, 0.7), (q, k, v))
    assert torch.autograd.gradgradcheck(lambda a, b, c: OP(a, b, c, None, 0.7), (q, k, v))


@pytest.mark.slow
def test_opcheck():
    q, k, v, mask = make_qkv(2, 2, 5, 9, 32, torch.float32, mask_frac=0.3)
    torch.library.opcheck(OP, (q, k, v, mask, 0.125))
    q, k, v, _ = make_qkv(1, 1, 4, 3, 16, torch.bfloat16)
    torch.library.opcheck(OP, (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), None, 0.25))
    torch.library.opcheck(OP, (q, k, v, None, 0.25, True))   # fp32_out: fp32 result from bf16 inputs


def test_fp32_out_returns_fp32_of_the_same_values():
    q, k, v, mask = make_qkv(2, 2, 6, 7, 16, torch.bfloat16, mask_frac=0.3)
    out16 = OP(q, k, v, mask, 0.25)
    out32 = OP(q, k, v, mask, 0.25, True)
    assert out16.dtype == torch.bfloat16 and out32.dtype == torch.float32
    assert torch.equal(out32.to(torch.bfloat16), out16)


BAD = {
    "q not 4-D": (lambda q, k, v, m: (q[0], k, v, m, 1.0), "q must be 4-D"),
    "k dtype": (lambda q, k, v, m: (q, k.double(), v, m, 1.0), "k is torch.float64"),
    "k/v shapes differ": (lambda q, k, v, m: (q, k, v[:, :, :2], m, 1.0), "same shape"),
    "D differs": (lambda q, k, v, m: (q, k[..., :8], v[..., :8], m, 1.0), "in B, H or D"),
    "mask dtype": (lambda q, k, v, m: (q, k, v, m.float(), 1.0), "must be bool"),
    "mask shape": (lambda q, k, v, m: (q, k, v, m[:, :3], 1.0), "shape (B, Nk)"),
    "scale nan": (lambda q, k, v, m: (q, k, v, m, float("nan")), "scale must be finite"),
}


@pytest.mark.parametrize("label", list(BAD))
def test_bad_arguments_are_named(label):
    make, message = BAD[label]
    q, k, v, mask = make_qkv(2, 2, 5, 6, 16, torch.float32, mask_frac=0.3)
    with pytest.raises((ValueError, RuntimeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        kernels.attention(*make(q, k, v, mask))


def test_entry_pads_head_dims_and_rejects_large_ones():
    assert [kernel_head_dim(d) for d in (8, 32, 33, 64, 100, 128, 129)] == \
        [32, 32, 64, 64, 128, 128, None]
    # The padding the entry applies on CUDA changes nothing (zero columns add 0 to q·k).
    q, k, v, _ = make_qkv(1, 2, 6, 7, 48)
    padded = reference_attention.attention(*(F.pad(t, (0, 16)) for t in (q, k, v)), None, 48 ** -0.5)
    assert torch.allclose(padded[..., :48], reference_attention.attention(q, k, v, None, 48 ** -0.5))


def test_switch_and_default_scale():
    q, k, v, mask = make_qkv(1, 2, 4, 6, 16, torch.float32, mask_frac=0.3)
    with kernels.using("reference"):
        twin = kernels.attention(q, k, v, mask)
    torch.testing.assert_close(kernels.attention(q, k, v, mask, 0.25), twin, rtol=0, atol=0)


# ---- the drop-in module vs nn.MultiheadAttention (CPU) ---------------------------------------

MHA = {
    "self, batch_first": {"embed_dim": 32, "num_heads": 4, "batch_first": True},
    "self, seq first, no bias": {"embed_dim": 32, "num_heads": 2, "bias": False},
    "cross kdim/vdim, batch_first": {"embed_dim": 24, "num_heads": 3, "kdim": 10, "vdim": 14, "batch_first": True},
}


@pytest.mark.parametrize("label", list(MHA))
def test_module_matches_nn_multihead_attention(label):
    kw = MHA[label]
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(**kw).double().eval()
    ours = MultiheadAttention(**kw).double()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert set(ours.state_dict()) == set(theirs.state_dict())
    b, nq, nk, e = 3, 5, 9, kw["embed_dim"]
    kdim, vdim = kw.get("kdim", e), kw.get("vdim", e)
    first = (b, nq) if kw.get("batch_first") else (nq, b)
    kfirst = (b, nk) if kw.get("batch_first") else (nk, b)
    query = torch.randn(*first, e, dtype=torch.float64)
    key, value = torch.randn(*kfirst, kdim, dtype=torch.float64), torch.randn(*kfirst, vdim, dtype=torch.float64)
    mask = torch.rand(b, nk) < 0.4
    mask[:, 0] = False
    for m in (None, mask):
        got, weights = ours(query, key, value, key_padding_mask=m)
        want, _ = theirs(query, key, value, key_padding_mask=m, need_weights=False)
        assert weights is None
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_module_unbatched_and_refusals():
    torch.manual_seed(1)
    theirs = nn.MultiheadAttention(16, 2).double().eval()
    ours = MultiheadAttention(16, 2).double()
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(6, 16, dtype=torch.float64)
    torch.testing.assert_close(ours(x, x, x)[0], theirs(x, x, x, need_weights=False)[0])
    with pytest.raises(ValueError, match="dropout"):
        MultiheadAttention(16, 2, dropout=0.1)
    with pytest.raises(ValueError, match="need_weights"):
        ours(x, x, x, need_weights=True)


# ---- the kernel's fragment index math, modelled per lane (CPU) ------------------------------
# mma_from_fragments (tests/mma_model.py) rebuilds one mma from per-lane fragments.


def _ldmatrix_x4_trans(flat, addrs):
    """PTX ldmatrix.m8n8.x4.trans.b16: lane l gets (M_i[2(l%4)][l/4], M_i[2(l%4)+1][l/4]) per reg i,
    where row r of matrix i is the 8 elements at flat[addrs[8i + r]:]."""
    out = []
    for lane in range(32):
        regs = []
        for i in range(4):
            rows = [flat[addrs[8 * i + r]: addrs[8 * i + r] + 8] for r in range(8)]
            regs.append((rows[2 * (lane % 4)][lane // 4], rows[2 * (lane % 4) + 1][lane // 4]))
        out.append(regs)
    return out


@pytest.mark.parametrize("d", (32, 64, 128))
def test_fragment_model_one_key_tile(d):
    """S = Q Kᵀ from the kernel's Q/K loads, P packed from S's C fragments, O = P V via ldmatrix.trans."""
    rng = np.random.default_rng(d)
    stride, block_n = d + 8, 64                                     # Cfg<D>::kStride, kBlockN
    Q = rng.standard_normal((16, d))                                # one m16 tile of query rows
    K, V = rng.standard_normal((block_n, d)), rng.standard_normal((block_n, d))
    k_s, v_s = np.full(block_n * stride, np.nan), np.full(block_n * stride, np.nan)
    for r in range(block_n):                                        # padded rows, as load_tile writes them
        k_s[r * stride: r * stride + d], v_s[r * stride: r * stride + d] = K[r], V[r]
    s = np.zeros((8, 32, 4))                                        # s[nt][lane][e]
    for nt in range(8):
        for ks in range(d // 16):
            a_pairs, b_pairs = [], []
            for lane in range(32):
                g, t = divmod(lane, 4)
                c = ks * 16 + 2 * t                                 # qf[mt][ks][0..3]
                a_pairs.append([(Q[g, c], Q[g, c + 1]), (Q[g + 8, c], Q[g + 8, c + 1]),
                                (Q[g, c + 8], Q[g, c + 9]), (Q[g + 8, c + 8], Q[g + 8, c + 9])])
                kp = (nt * 8 + g) * stride + ks * 16 + 2 * t        # kp, then kp + 8
                b_pairs.append([(k_s[kp], k_s[kp + 1]), (k_s[kp + 8], k_s[kp + 9])])
            s[nt] += mma_from_fragments(a_pairs, b_pairs)
    S = Q @ K.T
    for nt in range(8):
        for lane in range(32):
            g, t = divmod(lane, 4)
            for e in range(4):
                assert abs(s[nt, lane, e] - S[g + 8 * (e >> 1), nt * 8 + 2 * t + (e & 1)]) < 1e-9
    P = s                                                           # any values: packing is the point
    o = np.zeros((d // 8, 32, 4))
    for kk in range(4):
        pa = [[(P[2 * kk, l, 0], P[2 * kk, l, 1]), (P[2 * kk, l, 2], P[2 * kk, l, 3]),
               (P[2 * kk + 1, l, 0], P[2 * kk + 1, l, 1]), (P[2 * kk + 1, l, 2], P[2 * kk + 1, l, 3])]
              for l in range(32)]
        for dp in range(d // 16):
            addrs = [(kk * 16 + (l & 7) + ((l >> 3) & 1) * 8) * stride + dp * 16 + (l >> 4) * 8 for l in range(32)]
            vb = _ldmatrix_x4_trans(v_s, addrs)
            o[2 * dp] += mma_from_fragments(pa, [[vb[l][0], vb[l][1]] for l in range(32)])
            o[2 * dp + 1] += mma_from_fragments(pa, [[vb[l][2], vb[l][3]] for l in range(32)])
    O = S @ V
    for dt in range(d // 8):
        for lane in range(32):
            g, t = divmod(lane, 4)
            for e in range(4):
                assert abs(o[dt, lane, e] - O[g + 8 * (e >> 1), dt * 8 + 2 * t + (e & 1)]) < 1e-8


@pytest.mark.parametrize("d", (32, 64, 128))
def test_shared_memory_access_patterns_are_conflict_free(d):
    stride = d + 8
    # K B-fragment loads (32-bit words): lanes hit distinct banks or the same word.
    for nt in range(8):
        words = [((nt * 8 + g) * stride + 2 * t) // 2 for g in range(8) for t in range(4)]
        banks = {}
        for w in words:
            banks.setdefault(w % 32, set()).add(w)
        assert all(len(ws) == 1 for ws in banks.values())
    # ldmatrix: each phase of 8 row addresses covers 8 distinct 16-byte bank groups, 16-byte aligned.
    for kk in range(4):
        for dp in range(d // 16):
            addrs = [((kk * 16 + (l & 7) + ((l >> 3) & 1) * 8) * stride + dp * 16 + (l >> 4) * 8) * 2
                     for l in range(32)]
            assert all(a % 16 == 0 for a in addrs)
            for phase in range(4):
                assert len({(a // 16) % 8 for a in addrs[8 * phase: 8 * phase + 8]}) == 8
    # Row reductions: shfl_xor 1 and 2 stay inside the 4 lanes that hold one row's C elements.
    for lane in range(32):
        assert {lane ^ m for m in (0, 1, 2, 3)} == {4 * (lane // 4) + t for t in range(4)}


# ---- the real kernel on the CPU emulator ------------------------------------------------------

@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("attention_emulate", EMULATOR / "emulate.py")
    emulate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emulate)
    if shutil.which("g++") is None or emulate.cuda_include() is None:
        pytest.skip("the kernel emulator needs g++ and the CUDA headers")
    return emulate, emulate.build(tmp_path_factory.mktemp("attention_emulator"))


# label: ((B, H, Nq, Nk, D), dtype, mask: None | "random" | "batch 1 all" | "first 70 keys", scale)
EMULATED = {
    "D=32 bf16 cross, 3 key tiles, batch 1 fully masked": ((2, 1, 70, 130, 32), torch.bfloat16, "batch 1 all", None),
    "D=64 fp16 two q blocks, sharp softmax": ((1, 1, 130, 100, 64), torch.float16, None, 1.0),
    "D=128 bf16 Nk < 8, odd Nq, 2 heads": ((1, 2, 17, 5, 128), torch.bfloat16, "random", None),
    "D=64 bf16 first key tile fully masked": ((1, 1, 20, 150, 64), torch.bfloat16, "first 70 keys", 0.5),
    "D=32 fp16 no keys": ((1, 2, 9, 0, 32), torch.float16, None, None),
}


@pytest.mark.parametrize("label", list(EMULATED))
def test_emulated_kernel_matches_reference(emulator, label):
    emulate, exe = emulator
    shape, dtype, how, scale = EMULATED[label]
    b, _, _, nk, d = shape
    q, k, v, mask = make_qkv(*shape, dtype=dtype, seed=len(label), mask_frac=0.3 if how == "random" else 0.0)
    if how == "batch 1 all":
        mask = torch.zeros(b, nk, dtype=torch.bool)
        mask[1] = True
    elif how == "first 70 keys":
        mask = torch.zeros(b, nk, dtype=torch.bool)
        mask[:, :70] = True
    scale = d ** -0.5 if scale is None else scale
    out = emulate.run(exe, q, k, v, mask, scale)
    assert not torch.isnan(out).any(), "unwritten (poisoned) output elements"
    want64 = math64(q, k, v, mask, scale)
    if nk == 0 or how == "batch 1 all":
        zero_rows = slice(None) if nk == 0 else 1
        assert torch.equal(out[zero_rows], torch.zeros_like(out[zero_rows]))
        if nk == 0:
            return
        out, want64, q, k, v, mask = out[:1], want64[:1], q[:1], k[:1], v[:1], mask[:1]
    # The kernel rounds P to the input dtype before P·V (as FA2 does): a few times the output rounding.
    assert_matches_reference(out, want64, sdpa(q, k, v, mask, scale))


# ---- the CUDA kernel (GPU) ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def cuda_op():
    ok, reason = kernels.cuda_kernels_available()
    assert ok, reason     # on a GPU machine a failed build is a failure, not a skip
    return OP


# Both CUDA kernels run every GPU test below: "auto" is the wgmma kernel on sm_90 where it applies
# (D 64/128; elsewhere, and on other GPUs, the mma.sync one) and "mma" forces mma.sync.
KERNELS = ["auto", "mma"]


@pytest.fixture(params=KERNELS)
def attention_kernel(request, monkeypatch):
    monkeypatch.setenv("STYLEFORGE_ATTENTION_KERNEL", request.param)
    return request.param


def _check_cuda(shape, dtype, mask_frac=0.0, seed=0):
    q, k, v, mask = make_qkv(*shape, dtype=dtype, device="cuda", seed=seed, mask_frac=mask_frac)
    scale = shape[-1] ** -0.5
    out = kernels.attention(q, k, v, mask, scale)
    assert out.dtype == dtype and out.shape == q.shape
    want = reference_attention.attention(q.double(), k.double(), v.double(), mask, scale)
    return assert_matches_reference(out, want, sdpa(q, k, v, mask, scale))


SHAPES = {
    "ViT 32x12x197 D=64": ((32, 12, 197, 197, 64), 0.0),
    "32x12x577 D=64": ((32, 12, 577, 577, 64), 0.0),
    "1x8x4096 D=64": ((1, 8, 4096, 4096, 64), 0.0),
    "D=32 masked": ((4, 4, 300, 300, 32), 0.3),
    "D=128 masked": ((2, 4, 257, 257, 128), 0.3),
    "cross Nq=100 Nk=1000": ((2, 3, 100, 1000, 64), 0.2),
    "cross Nq=1000 Nk=33 D=128": ((2, 3, 1000, 33, 128), 0.0),
    "B=1 H=1 Nq=1 Nk=1": ((1, 1, 1, 1, 64), 0.0),
    "odd D=80 (padded to 128)": ((2, 2, 65, 70, 80), 0.3),
}


@pytest.mark.gpu
@pytest.mark.parametrize("label", list(SHAPES))
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_cuda_matches_float64(cuda_op, attention_kernel, label, dtype):
    shape, frac = SHAPES[label]
    _check_cuda(shape, dtype, frac, seed=len(label))


@pytest.mark.gpu
def test_cuda_16k_tokens(cuda_op, attention_kernel):
    _check_cuda((1, 2, 16384, 16384, 64), torch.bfloat16, 0.1)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_cuda_fully_masked_rows_and_no_keys(cuda_op, attention_kernel, dtype):
    q, k, v, mask = make_qkv(3, 2, 130, 200, 64, dtype, "cuda", mask_frac=0.3)
    mask[1] = True
    out = cuda_op(q, k, v, mask, 0.125)
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    keep = [0, 2]
    want = reference_attention.attention(q.double(), k.double(), v.double(), mask, 0.125)
    assert_matches_reference(out[keep], want[keep], sdpa(q[keep], k[keep], v[keep], mask[keep], 0.125))
    assert torch.equal(cuda_op(q, k[:, :, :0], v[:, :, :0], None, 0.125), torch.zeros_like(q))


@pytest.mark.gpu
def test_cuda_fp32_opt_in_error(cuda_op, attention_kernel):
    q, k, v, mask = make_qkv(4, 4, 333, 333, 64, torch.float32, "cuda", mask_frac=0.2)
    want = reference_attention.attention(q.double(), k.double(), v.double(), mask, 0.125)
    fast = kernels.attention(q, k, v, mask, 0.125, fp32_via_bf16=True)
    assert fast.dtype == torch.float32
    err = rel_error(fast, want)
    assert err <= 2 * rel_error(sdpa(q.bfloat16(), k.bfloat16(), v.bfloat16(), mask, 0.125), want) + 1e-3
    assert_matches_reference(kernels.attention(q, k, v, mask, 0.125), want)   # default: exact twin


@pytest.mark.gpu
def test_cuda_poisoned_memory_noncontiguous_and_deterministic(cuda_op, attention_kernel):
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(2, 333, 3, 4, 64, generator=g, device="cuda").bfloat16()   # (B, N, qkv, H, D)
    q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))                   # strided views
    assert not q.is_contiguous()
    outs = []
    for _ in range(2):
        poison = torch.full((64 << 20,), float("nan"), device="cuda")
        del poison
        outs.append(cuda_op(q, k, v, None, 0.125))
        assert not torch.isnan(outs[-1]).any()
    assert torch.equal(outs[0], outs[1]), "two runs differ: the kernel must be deterministic"
    want = reference_attention.attention(q.double(), k.double(), v.double(), None, 0.125)
    assert_matches_reference(outs[0], want, sdpa(q, k, v, None, 0.125))


@pytest.mark.gpu
def test_cuda_backward_matches_reference(cuda_op, attention_kernel):
    q, k, v, mask = make_qkv(2, 2, 70, 90, 64, torch.bfloat16, "cuda", mask_frac=0.2)
    grad = torch.randn_like(q)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    kernels.attention(*leaves, mask, 0.125).backward(grad)
    ref = [t.double().requires_grad_() for t in (q, k, v)]
    reference_attention.attention(*ref, mask, 0.125).backward(grad.double())
    for got, want in zip(leaves, ref):
        assert rel_error(got.grad, want.grad) <= 2e-2


@pytest.mark.gpu
def test_cuda_graph_capture_and_replay(cuda_op, attention_kernel):
    q, k, v, mask = make_qkv(2, 4, 200, 200, 64, torch.bfloat16, "cuda", mask_frac=0.2)
    static = [t.clone() for t in (q, k, v)]
    cuda_op(*static, mask, 0.125)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = cuda_op(*static, mask, 0.125)
    fresh = make_qkv(2, 4, 200, 200, 64, torch.bfloat16, "cuda", seed=9)[:3]
    for s, f in zip(static, fresh):
        s.copy_(f)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(static_out, cuda_op(*fresh, mask, 0.125), rtol=0, atol=0)


@pytest.mark.gpu
def test_cuda_opcheck(cuda_op, attention_kernel):
    q, k, v, mask = make_qkv(2, 2, 70, 90, 64, torch.bfloat16, "cuda", mask_frac=0.2)
    torch.library.opcheck(cuda_op, (q, k, v, mask, 0.125))
    q, k, v, _ = make_qkv(1, 2, 33, 17, 32, torch.float16, "cuda")
    torch.library.opcheck(cuda_op, (q, k, v, None, 0.2))


@pytest.mark.gpu
def test_cuda_module_matches_nn_multihead_attention_in_bf16(cuda_op, attention_kernel):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(768, 12, batch_first=True).cuda().eval()
    ours = MultiheadAttention(768, 12, batch_first=True).cuda()
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(4, 197, 768, device="cuda")
    want = theirs.double()(x.double(), x.double(), x.double(), need_weights=False)[0]
    got = ours.bfloat16()(x.bfloat16(), x.bfloat16(), x.bfloat16())[0]
    assert got.dtype == torch.bfloat16
    assert rel_error(got, want) <= 2e-2


@pytest.mark.gpu
@pytest.mark.parametrize("d", [32, 64, 128])
def test_cuda_kernel_choice(cuda_op, monkeypatch, d):
    q, k, v, _ = make_qkv(2, 2, 70, 90, d, dtype=torch.bfloat16, device="cuda")
    call = (lambda: torch.ops.styleforge.attention(q, k, v, None, d ** -0.5))
    call()
    hopper = torch.cuda.get_device_capability() == (9, 0)
    names = " ".join(cuda_kernel_names(call))
    assert ("attention_sm90_kernel" in names) == (hopper and d in (64, 128)), names
    monkeypatch.setenv("STYLEFORGE_ATTENTION_KERNEL", "mma")
    assert "attention_sm90_kernel" not in " ".join(cuda_kernel_names(call))
    monkeypatch.setenv("STYLEFORGE_ATTENTION_KERNEL", "fast")
    with pytest.raises(RuntimeError, match="STYLEFORGE_ATTENTION_KERNEL"):
        call()
