// Hopper (sm_90a) attention forward: softmax(scale · Q Kᵀ + key mask) V per (batch, head), fp16/bf16
// in and out, fp32 online softmax, on wgmma (asynchronous warpgroup MMA) fed by TMA. Pure CUDA
// (runtime, fp16/bf16 headers; cuda.h for the tensor-map type only, the encoder is fetched with
// cudaGetDriverEntryPointByVersion, so no -lcuda). Built for sm_80 the body is empty and
// attention_sm90_supported says false; callers then use attention.cu (mma.sync, FA2-style), whose
// semantics this file shares, as does styleforge/kernels/reference/attention.py (the oracle).
//
// Structure: FlashAttention-3 (Shah et al., 2024); written from the PTX ISA sections
// "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (fragments, matrix descriptors,
// shared memory matrix layouts), "Tensor copy" (cp.async.bulk.tensor), mbarrier, bar and
// setmaxnreg, no library code. Over 600 lines because the two kernels share the TMA set-up, the
// tile loaders and the online-softmax step, which separate files would each restate. Two kernels,
// chosen by shape (use_ws, at the end):
//  * attention_sm90_kernel: CTA = ONE warpgroup (128 threads) owning kBM = 64 query rows (the
//    wgmma M); 3–4 independent CTAs share an SM, so one CTA's softmax overlaps another's MMAs and
//    one CTA's prologue (Q load, first tile) another's main loop. Thread 0 issues the TMA; K and V
//    have separate 2-stage rings, K_{j+2} and V_{j+1} issued at the end of step j after a CTA
//    barrier. kBN = 128 (≤ 168 registers, 3 CTAs/SM), or 64 (≈ 110, 4 CTAs/SM) for grids that then
//    fit one wave (1×8×4096 is 512 CTAs on 132 SMs). Best for short and medium sequences.
//  * attention_sm90_kernel_ws (FA3 §3.1): CTA = a producer warpgroup + kCons consumer warpgroups of
//    64 rows each, 1 CTA/SM. The producer gives its registers to the consumers (setmaxnreg); one
//    lane of it issues the TMA of Q and of kStages-deep K and V rings with full/empty mbarriers
//    (its warp also writes the mask bias). Each consumer runs the loop below; they share every
//    K/V tile (kCons× less L2 → shared memory traffic) and take turns to issue their MMAs through
//    named barriers, so one's softmax runs while the others' MMAs do. D = 128: kCons = 2, kBN = 128;
//    D = 64 (long Nk): kCons = 4, kBN = 64.
//    Compiler traps, each of which serializes every wgmma of the kernel (ptxas info C75xx, not a
//    warning): role branches on a value ptxas cannot prove warp-uniform (C7520: the warp index is
//    therefore broadcast from lane 0); too few registers (C7512: a producer warp beside 2 consumer
//    warpgroups without setmaxnreg is allocated as a whole warpgroup); a bar.arrive between a
//    wgmma issue and the wait for S (C7514: the turn passes after S_j is complete).
// Common to both:
//  * Every tile (Q, K, V, and O on the way out) is stored as [D/64][rows][64 elements]: 128-byte
//    rows with the 128-byte swizzle (16-byte chunk c of row r at chunk c ^ (r % 8)), which is what
//    TMA with CU_TENSOR_MAP_SWIZZLE_128B writes and what the wgmma descriptors with layout type 1
//    read; each tile 1024-byte aligned (the swizzle is a function of address bits 4–9). The TMA
//    maps are 3-D (BH, N, D), so rows past Nq or Nk of a head read as zeros.
//  * S = Q Kᵀ: wgmma m64n{kBN}k16, A = Q and B = K from shared memory, both K-major (d is
//    contiguous): descriptor LBO = 16 (unused), SBO = 1024 (next 8 rows), start advanced 32 bytes
//    per k16 step inside a 128-byte row, + rows·128 per 64-column block.
//  * Online softmax in registers, exp2 domain: the row max is taken on raw scores (scale > 0 is a
//    supported() rule), p = 2^(s·scale·log2e − m·scale·log2e) with one FFMA. A row whose max is
//    still −inf shifts by 0, so masked p are exactly 0 and a fully masked row ends with l = 0 →
//    zeros (never 0/0). Key padding mask: per-tile fp32 bias (0 or −inf) staged in shared memory;
//    without a mask only the last tile's columns ≥ Nk are set to −inf.
//  * O += P V: the S accumulator fragment of a warp is the m16n8 C layout repeated along N, so
//    after packing pairs to 16 bits it is the A register fragment of the next wgmma (FA2/FA3's
//    trick). B = V tile [key][d]: d contiguous = MN-major, read with the transpose bit; descriptor
//    LBO = stride between 64-wide d blocks (kBN·128 bytes), SBO = 1024 (next 8 keys).
//  * Overlap inside the warpgroup (FA3 §3.2): step j issues S_j = Q K_jᵀ and O += P_{j−1} V_{j−1}
//    back to back, waits for S_j only, does the softmax of S_j while the P V MMAs run, then waits
//    for them before rescaling O and overwriting P.
//  * O rescale by alpha = 2^(m_old − m_new) is skipped when alpha = 1 for every row of the warp.
//  * Epilogue: O / l → 16-bit, through the (dead) Q tile in shared memory, 16-byte coalesced stores;
//    or, with out_fp32 (fp32 inputs opted in through bf16), fp32 stores straight from registers,
//    which saves the caller a conversion pass over the output.
// Tried and dropped (dev/kernels/attention_sm90/NOTES.md): 2-CTA clusters with TMA multicast (2×
// slower), 128-row CTAs without warp specialisation, 2 consumers with kBN = 128 at D = 64.
// Not covered: D other than 64/128, fp32, scale ≤ 0 (→ attention.cu), masks other than key
// padding, dropout, backward. About 840 lines, over the house 600: two kernels sharing their
// softmax/epilogue pieces and their own wgmma wrappers (shared-memory A, transposed B; the wrappers
// spell out 32/64 accumulator operands); the mbarrier/descriptor ones come from sm90_ptx.cuh.
#include <cuda.h>   // CUtensorMap and its enums only
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "../common/packed16.cuh"
#include "../common/sm90_ptx.cuh"   // STYLEFORGE_SM90A and the mbarrier / descriptor / wgmma-discipline wrappers
#include "attention_sm90.h"


namespace styleforge {
namespace {

constexpr int kThreads = 128;   // one warpgroup
constexpr int kBM = 64;         // query rows per CTA = wgmma M

// One-warpgroup kernel. kBN keys per step: 128 for D = 64 (3 CTAs/SM: registers), 64 for D = 64
// grids that fit one wave at 4 CTAs/SM but not at 3 (see dispatch) and for D = 128 (2 CTAs/SM:
// shared memory; dispatch now sends D = 128 to the warp-specialised kernel).
template <int D, int BN>
struct Cfg {
  static constexpr int kBN = BN;
  static constexpr uint32_t kQBytes = kBM * D * 2;
  static constexpr uint32_t kKVBytes = kBN * D * 2;             // one K or V tile
  static constexpr uint32_t kBiasOff = kQBytes + 4 * kKVBytes;  // after Q, K[2], V[2]
  static constexpr uint32_t kBarOff = kBiasOff + 2 * kBN * 4;   // mbarriers: Q, K[2], V[2]
  static constexpr size_t kSmem = kBarOff + 5 * 8 + 1024;       // + slack to 1024-align the base
  static constexpr int kMinBlocks = D == 128 ? 2 : BN == 64 ? 4 : 3;
};

// Warp-specialised kernel (attention_sm90_kernel_ws): CTA = producer warpgroup + kCons consumer
// warpgroups of kBM rows each, 1 CTA/SM; K, V (and the mask bias, which travels with V) in rings
// of kStages. The producer drops to 24 registers a thread and the consumers take the rest
// (setmaxnreg): kBN = 128 with 2 consumers (168 at launch → 240), kBN = 64 with 4 (96 → 112).
template <int D, int BN, int kCons>
struct WSCfg {
  static constexpr int kThreads = 128 * (1 + kCons);
  static constexpr int kStages = BN == 64 ? 4 : 2;
  static constexpr uint32_t kQBytes = kBM * D * 2;                   // one consumer's 64 rows
  static constexpr uint32_t kKVBytes = BN * D * 2;
  static constexpr uint32_t kKOff = kCons * kQBytes;
  static constexpr uint32_t kVOff = kKOff + kStages * kKVBytes;
  static constexpr uint32_t kBiasOff = kVOff + kStages * kKVBytes;
  static constexpr uint32_t kBarOff = kBiasOff + kStages * BN * 4;   // Q, full/empty K, full/empty V
  static constexpr size_t kSmem = kBarOff + (1 + 4 * kStages) * 8 + 1024;
};

struct Params {
  uint16_t* out;          // (BH, Nq, D), or null when out_f32 is set
  float* out_f32;         // (BH, Nq, D) fp32 output (the fp32-input opt-in path), or null
  const uint8_t* mask;    // (B, Nk) or null
  int H, Nq, Nk, q_blocks, n_tiles;
  float scale_log2;       // scale · log2(e)
};

#if STYLEFORGE_SM90A
// ---- PTX wrappers ---------------------------------------------------------------------------
using namespace sm90;

// Named barriers (0 is __syncthreads): sync waits for `count` threads, arrive only counts.
__device__ __forceinline__ void bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// One box {64 elements, rows, 1} of a 3-D map at (c0 = element, c1 = row, c2 = head) → dst.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                         int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// A [rows × D] tile as kDBlocks boxes of [rows × 64], each rows·128 bytes.
template <int D, int kRows>
__device__ __forceinline__ void tma_tile(uint32_t dst, const CUtensorMap* map, uint32_t bar, int row0, int bh) {
#pragma unroll
  for (int b = 0; b < D / 64; ++b) tma_load(dst + b * kRows * 128, map, bar, 64 * b, row0, bh);
}

#define STYLEFORGE_F8(d, i)                                                                                   \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define STYLEFORGE_F32(d, i) STYLEFORGE_F8(d, i), STYLEFORGE_F8(d, i + 8), STYLEFORGE_F8(d, i + 16), STYLEFORGE_F8(d, i + 24)
#define STYLEFORGE_ACC32                                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define STYLEFORGE_ACC64                                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "  \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "  \
  "%62, %63}"

// D (m64 × N f32) = [D +] A · B, A and B K-major in shared memory; acc = 0 overwrites D.
// Operand numbers: accumulators first, then the A and B descriptors, then acc.
#define STYLEFORGE_SS(N, TY, ACC, IA, IB, IP, ...)                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IP ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N \
               "k16.f32." TY "." TY " " ACC ", %" IA ", %" IB ", p, 1, 1, 0, 0;\n}\n"              \
               : __VA_ARGS__                                                                       \
               : "l"(a), "l"(b), "r"(acc))
template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[32], uint64_t a, uint64_t b, int acc) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    STYLEFORGE_SS(64, "bf16", STYLEFORGE_ACC32, "32", "33", "34", STYLEFORGE_F32(d, 0));
  } else {
    STYLEFORGE_SS(64, "f16", STYLEFORGE_ACC32, "32", "33", "34", STYLEFORGE_F32(d, 0));
  }
}
template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b, int acc) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    STYLEFORGE_SS(128, "bf16", STYLEFORGE_ACC64, "64", "65", "66", STYLEFORGE_F32(d, 0), STYLEFORGE_F32(d, 32));
  } else {
    STYLEFORGE_SS(128, "f16", STYLEFORGE_ACC64, "64", "65", "66", STYLEFORGE_F32(d, 0), STYLEFORGE_F32(d, 32));
  }
}

// D (m64 × N f32) += A · B, A from registers (per warp the m16n8k16 A fragment of its 16 rows),
// B MN-major in shared memory (imm-trans-b = 1). Operands: accumulators, A regs, B descriptor, 1.
#define STYLEFORGE_RS(N, TY, ACC, A0, A1, A2, A3, IB, IP, ...)                                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IP ", 0;\nwgmma.mma_async.sync.aligned.m64n"    \
               #N "k16.f32." TY "." TY " " ACC ", {%" A0 ", %" A1 ", %" A2 ", %" A3 "}, %" IB          \
               ", p, 1, 1, 1;\n}\n"                                                                    \
               : __VA_ARGS__                                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
template <typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    STYLEFORGE_RS(64, "bf16", STYLEFORGE_ACC32, "32", "33", "34", "35", "36", "37", STYLEFORGE_F32(d, 0));
  } else {
    STYLEFORGE_RS(64, "f16", STYLEFORGE_ACC32, "32", "33", "34", "35", "36", "37", STYLEFORGE_F32(d, 0));
  }
}
template <typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    STYLEFORGE_RS(128, "bf16", STYLEFORGE_ACC64, "64", "65", "66", "67", "68", "69", STYLEFORGE_F32(d, 0), STYLEFORGE_F32(d, 32));
  } else {
    STYLEFORGE_RS(128, "f16", STYLEFORGE_ACC64, "64", "65", "66", "67", "68", "69", STYLEFORGE_F32(d, 0), STYLEFORGE_F32(d, 32));
  }
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }


// ---- pieces shared by both kernels (one warpgroup's 64 rows; lane (g, t) of warp w holds rows
// 16w + g and 16w + g + 8, columns 8i + 2t and 8i + 2t + 1 of n8 block i) -----------------------

// S = Q Kᵀ (acc overwritten), Q a [D/64][64][128 B] tile and K a [D/64][BN][128 B] tile, both
// K-major: k16 step kk starts 32 bytes further in a 128-byte row, + rows·128 per 64-column block.
template <typename T, int D, int BN>
__device__ __forceinline__ void issue_s(float (&s)[BN / 2], uint32_t q_tile, uint32_t k_tile) {
  const uint64_t dq = sw128_desc(q_tile, 16, 1024), dk = sw128_desc(k_tile, 16, 1024);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint32_t qo = (kk >> 2) * kBM * 128 + (kk & 3) * 32, ko = (kk >> 2) * BN * 128 + (kk & 3) * 32;
    wgmma_ss<T>(s, dq + (qo >> 4), dk + (ko >> 4), kk > 0);
  }
}

// O += P V, V a [D/64][BN][128 B] tile read MN-major: k16 step kk = keys 16kk.., 2048 bytes further.
template <typename T, int D, int BN>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&pf)[BN / 16][4], uint32_t v_tile) {
  const uint64_t dv = sw128_desc(v_tile, BN * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) wgmma_rs<T>(o, pf[kk], dv + ((kk * 16 * 128) >> 4));
}

// Online softmax of one S tile: adds the key bias (kMask) or sets columns ≥ valid to −inf,
// updates the running row max m (raw scores) and sum l, overwrites s with P = 2^(s·sl2 − m·sl2)
// and returns O's rescale factors alpha = 2^((m_old − m_new)·sl2) (0 while m_old = −inf).
template <int BN, bool kMask>
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 2], const float* bias, int valid, float sl2, int t,
                                             float& m0, float& m1, float& l0, float& l1, float& alpha0,
                                             float& alpha1) {
  constexpr int kNB = BN / 8;
  if constexpr (kMask) {
#pragma unroll
    for (int i = 0; i < kNB; ++i) {
      const float2 b = *reinterpret_cast<const float2*>(bias + 8 * i + 2 * t);
      s[4 * i] += b.x;
      s[4 * i + 1] += b.y;
      s[4 * i + 2] += b.x;
      s[4 * i + 3] += b.y;
    }
  } else if (valid < BN) {
#pragma unroll
    for (int i = 0; i < kNB; ++i) {
      const int col = 8 * i + 2 * t;
      if (col >= valid) s[4 * i] = s[4 * i + 2] = -INFINITY;
      if (col + 1 >= valid) s[4 * i + 1] = s[4 * i + 3] = -INFINITY;
    }
  }
  float mx0 = m0, mx1 = m1;
#pragma unroll
  for (int i = 0; i < kNB; ++i) {
    mx0 = fmaxf(mx0, fmaxf(s[4 * i], s[4 * i + 1]));
    mx1 = fmaxf(mx1, fmaxf(s[4 * i + 2], s[4 * i + 3]));
  }
  mx0 = fmaxf(mx0, shfl_xor(mx0, 1));
  mx0 = fmaxf(mx0, shfl_xor(mx0, 2));
  mx1 = fmaxf(mx1, shfl_xor(mx1, 1));
  mx1 = fmaxf(mx1, shfl_xor(mx1, 2));
  const float sh0 = mx0 == -INFINITY ? 0.f : mx0 * sl2, sh1 = mx1 == -INFINITY ? 0.f : mx1 * sl2;
  alpha0 = ex2(m0 * sl2 - sh0);   // m = −inf → 0
  alpha1 = ex2(m1 * sl2 - sh1);
  m0 = mx0;
  m1 = mx1;
  float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
  for (int i = 0; i < kNB; ++i) {
    s[4 * i] = ex2(fmaf(s[4 * i], sl2, -sh0));
    s[4 * i + 1] = ex2(fmaf(s[4 * i + 1], sl2, -sh0));
    s[4 * i + 2] = ex2(fmaf(s[4 * i + 2], sl2, -sh1));
    s[4 * i + 3] = ex2(fmaf(s[4 * i + 3], sl2, -sh1));
    sum0 += s[4 * i] + s[4 * i + 1];
    sum1 += s[4 * i + 2] + s[4 * i + 3];
  }
  l0 = l0 * alpha0 + sum0;
  l1 = l1 * alpha1 + sum1;
}

// O *= alpha, then P → 16-bit A fragments (k16 step kk = n8 blocks 2kk in a0, a1 and 2kk + 1 in
// a2, a3). alpha is exactly 1 when a row's max did not move (the common case after the first
// tiles): the rescale is skipped unless some row of the warp needs it.
template <typename T, int D, int BN>
__device__ __forceinline__ void rescale_pack(float (&o)[D / 2], uint32_t (&pf)[BN / 16][4], const float (&s)[BN / 2],
                                             float alpha0, float alpha1) {
  if (__any_sync(0xffffffffu, alpha0 != 1.f || alpha1 != 1.f)) {
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      o[4 * i] *= alpha0;
      o[4 * i + 1] *= alpha0;
      o[4 * i + 2] *= alpha1;
      o[4 * i + 3] *= alpha1;
    }
  }
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    pf[kk][0] = pack2<T>(s[8 * kk], s[8 * kk + 1]);
    pf[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
    pf[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
    pf[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

// Epilogue of 64 rows (q0.. of head bh; wtid = thread index in the warpgroup): O / l, fp32
// straight from the accumulators, or 16-bit through `tile` (the warpgroup's dead Q tile,
// [D/64][64][128 B] swizzled) for 16-byte coalesced stores. sync() is a barrier over the threads
// that read `tile` through wgmma, so the first one also orders their last Q reads before the writes.
template <typename T, int D, typename Sync>
__device__ __forceinline__ void store_o(const Params& p, const float (&o)[D / 2], float l0, float l1, int bh, int q0,
                                        unsigned char* tile, int wtid, Sync&& sync) {
  constexpr int kDB = D / 8;   // n8 column blocks of O
  const int lane = wtid & 31, g = lane >> 2, t = lane & 3;
  l0 += shfl_xor(l0, 1);
  l0 += shfl_xor(l0, 2);
  l1 += shfl_xor(l1, 1);
  l1 += shfl_xor(l1, 2);
  const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
  const int r0 = (wtid >> 5) * 16 + g;   // r0 + 8 has the same r % 8
  if (p.out_f32 != nullptr) {
    // The 4 lanes of a row write 32 contiguous bytes per i (whole sectors).
    float* of = p.out_f32 + (static_cast<int64_t>(bh) * p.Nq + q0) * D;
#pragma unroll
    for (int i = 0; i < kDB; ++i) {
      if (q0 + r0 < p.Nq) {
        *reinterpret_cast<float2*>(of + static_cast<int64_t>(r0) * D + 8 * i + 2 * t) =
            make_float2(o[4 * i] * inv0, o[4 * i + 1] * inv0);
      }
      if (q0 + r0 + 8 < p.Nq) {
        *reinterpret_cast<float2*>(of + static_cast<int64_t>(r0 + 8) * D + 8 * i + 2 * t) =
            make_float2(o[4 * i + 2] * inv1, o[4 * i + 3] * inv1);
      }
    }
    return;
  }
  sync();
#pragma unroll
  for (int i = 0; i < kDB; ++i) {
    unsigned char* row = tile + (i >> 3) * kBM * 128 + r0 * 128 + (((i & 7) ^ (r0 & 7)) << 4) + 4 * t;
    *reinterpret_cast<uint32_t*>(row) = pack2<T>(o[4 * i] * inv0, o[4 * i + 1] * inv0);
    *reinterpret_cast<uint32_t*>(row + 8 * 128) = pack2<T>(o[4 * i + 2] * inv1, o[4 * i + 3] * inv1);
  }
  sync();
  uint16_t* out = p.out + (static_cast<int64_t>(bh) * p.Nq + q0) * D;
#pragma unroll
  for (int i = wtid; i < kBM * kDB; i += 128) {
    const int r = i / kDB, c = i - r * kDB;
    if (q0 + r < p.Nq) {
      const uint4 v = *reinterpret_cast<const uint4*>(tile + (c >> 3) * kBM * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
      *reinterpret_cast<uint4*>(out + static_cast<int64_t>(r) * D + c * 8) = v;
    }
  }
}
#endif  // STYLEFORGE_SM90A

// Grid: one CTA per (q block of 64 rows, b·H + h), q blocks of one head adjacent (K/V stay in L2).
template <typename T, int D, int BN_, bool kMask>
__global__ void __launch_bounds__(kThreads, Cfg<D, BN_>::kMinBlocks)
    attention_sm90_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                          const __grid_constant__ CUtensorMap tm_v, const Params p) {
#if STYLEFORGE_SM90A
  using C = Cfg<D, BN_>;
  constexpr int BN = C::kBN;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* smem = smem_raw + (base - raw);
  const uint32_t q_s = base;                        // [kDBlocks][64][128 B]; O on the way out
  const uint32_t k_s = base + C::kQBytes;           // [stage][kDBlocks][BN][128 B]
  const uint32_t v_s = k_s + 2 * C::kKVBytes;       // [stage][kDBlocks][BN][128 B]
  float* bias_s = reinterpret_cast<float*>(smem + C::kBiasOff);   // [stage][BN]
  const uint32_t bar_q = base + C::kBarOff;
  auto bar_k = [&](int st) { return bar_q + 8 + 8 * st; };
  auto bar_v = [&](int st) { return bar_q + 24 + 8 * st; };

  const int tid = threadIdx.x, t = tid & 3;
  const int bh = blockIdx.x / p.q_blocks;
  const int q0 = (blockIdx.x - bh * p.q_blocks) * kBM;
  const int n = p.n_tiles;
  const uint8_t* mask = kMask ? p.mask + static_cast<int64_t>(bh / p.H) * p.Nk : nullptr;
  auto stage_bias = [&](int tile, int st) {   // 0 = keep, −inf = masked or ≥ Nk
    if (tid < BN) {
      const int key = tile * BN + tid;
      bias_s[st * BN + tid] = key < p.Nk && mask[key] == 0 ? 0.f : -INFINITY;
    }
  };

  if (tid == 0) {
    mbar_init(bar_q, 1);
    for (int st = 0; st < 2; ++st) {
      mbar_init(bar_k(st), 1);
      mbar_init(bar_v(st), 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (kMask) stage_bias(0, 0);
  __syncthreads();
  if (tid == 0) {
    mbar_expect_tx(bar_q, C::kQBytes);
    tma_tile<D, kBM>(q_s, &tm_q, bar_q, q0, bh);
    mbar_expect_tx(bar_k(0), C::kKVBytes);
    tma_tile<D, BN>(k_s, &tm_k, bar_k(0), 0, bh);
    mbar_expect_tx(bar_v(0), C::kKVBytes);
    tma_tile<D, BN>(v_s, &tm_v, bar_v(0), 0, bh);
    if (n > 1) {
      mbar_expect_tx(bar_k(1), C::kKVBytes);
      tma_tile<D, BN>(k_s + C::kKVBytes, &tm_k, bar_k(1), BN, bh);
    }
  }

  // Accumulators: wgmma fragment, n8 block i in regs 4i..4i+3 = (row g, cols 2t, 2t+1) and
  // (row g + 8, same cols), rows relative to this warp's 16.
  float s[BN / 2], o[D / 2];
  uint32_t pf[BN / 16][4];   // P as A fragments, one per k16 step of keys
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) s[i] = 0.f;
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
#pragma unroll
  for (int i = 0; i < BN / 16; ++i) pf[i][0] = pf[i][1] = pf[i][2] = pf[i][3] = 0u;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;   // rows g and g + 8
  const float sl2 = p.scale_log2;

  mbar_wait(bar_q, 0);
  for (int j = 0; j < n; ++j) {
    const int st = j & 1;
    mbar_wait(bar_k(st), (j >> 1) & 1);
    if (j > 0) mbar_wait(bar_v(st ^ 1), ((j - 1) >> 1) & 1);   // issued a step earlier than K_j
    wg_fence();
    issue_s<T, D, BN>(s, q_s, k_s + st * C::kKVBytes);
    wg_commit();
    if (j > 0) {
      issue_pv<T, D, BN>(o, pf, v_s + (st ^ 1) * C::kKVBytes);
      wg_commit();
      wg_wait<1>();
    } else {
      wg_wait<0>();
    }
    reg_fence(s);
    float alpha0, alpha1;
    softmax_tile<BN, kMask>(s, bias_s + st * BN, j == n - 1 ? p.Nk - j * BN : BN, sl2, t, m0, m1, l0, l1, alpha0,
                            alpha1);
    wg_wait<0>();   // P_{j-1} V_{j-1} done: O may be rescaled and P overwritten
    reg_fence(o);
    reg_fence(pf);
    rescale_pack<T, D, BN>(o, pf, s, alpha0, alpha1);

    if constexpr (kMask) {
      if (j + 1 < n) stage_bias(j + 1, st ^ 1);   // its last reader was step j − 1
    }
    __syncthreads();   // every warp is past K_j and V_{j-1}: their stages may be refilled
    if (tid == 0) {
      if (j + 2 < n) {
        mbar_expect_tx(bar_k(st), C::kKVBytes);
        tma_tile<D, BN>(k_s + st * C::kKVBytes, &tm_k, bar_k(st), (j + 2) * BN, bh);
      }
      if (j + 1 < n) {
        mbar_expect_tx(bar_v(st ^ 1), C::kKVBytes);
        tma_tile<D, BN>(v_s + (st ^ 1) * C::kKVBytes, &tm_v, bar_v(st ^ 1), (j + 1) * BN, bh);
      }
    }
  }
  {
    const int st = (n - 1) & 1;
    mbar_wait(bar_v(st), ((n - 1) >> 1) & 1);
    wg_fence();
    issue_pv<T, D, BN>(o, pf, v_s + st * C::kKVBytes);
    wg_commit();
    wg_wait<0>();
    reg_fence(o);
  }

  store_o<T, D>(p, o, l0, l1, bh, q0, smem, tid, [] { __syncthreads(); });
#else
  __trap();   // built without sm_90a code: attention_sm90_supported() keeps launches away
#endif
}

// Grid: one CTA per (q block of 64·kCons rows, b·H + h). Warpgroup 0 is the producer: its warp 0
// loads Q, K and V (one lane issues the TMA) and writes the mask bias. Warpgroups 1..kCons each
// run the loop of attention_sm90_kernel on 64 rows against the shared K/V tiles. Stage release:
// every consumer warp arrives on the empty barrier once the MMAs reading the stage are complete
// (K after S_j, V after P_j V_j; with a mask every consumer thread, as each read the bias), so
// a consumer may run up to a ring's length ahead of the slowest.
template <typename T, int D, int BN, int kCons, bool kMask>
__global__ void __launch_bounds__(WSCfg<D, BN, kCons>::kThreads, 1)
    attention_sm90_kernel_ws(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                             const __grid_constant__ CUtensorMap tm_v, const Params p) {
#if STYLEFORGE_SM90A
  using C = WSCfg<D, BN, kCons>;
  constexpr int S = C::kStages;
  constexpr int kProducerRegs = 24, kConsumerRegs = kCons == 2 ? 240 : 112;   // 128·(24 + kCons·this) ≤ 64K
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* smem = smem_raw + (base - raw);
  const uint32_t q_s = base;                 // [consumer][kDBlocks][64][128 B]; O on the way out
  const uint32_t k_s = base + C::kKOff;      // [stage][kDBlocks][BN][128 B]
  const uint32_t v_s = base + C::kVOff;      // [stage][kDBlocks][BN][128 B]
  float* bias_s = reinterpret_cast<float*>(smem + C::kBiasOff);   // [stage][BN], with V
  const uint32_t bar_q = base + C::kBarOff;
  auto full_k = [&](int st) { return bar_q + 8 + 8 * st; };
  auto empty_k = [&](int st) { return bar_q + 8 + 8 * (S + st); };
  auto full_v = [&](int st) { return bar_q + 8 + 8 * (2 * S + st); };
  auto empty_v = [&](int st) { return bar_q + 8 + 8 * (3 * S + st); };

  const int tid = threadIdx.x;
  const int bh = blockIdx.x / p.q_blocks;
  const int qb = (blockIdx.x - bh * p.q_blocks) * kCons * kBM;
  const int n = p.n_tiles;
  if (tid == 0) {
    mbar_init(bar_q, 1);
    for (int st = 0; st < S; ++st) {
      mbar_init(full_k(st), 1);
      mbar_init(empty_k(st), 4 * kCons);        // every consumer warp
      mbar_init(full_v(st), kMask ? 32 : 1);    // with a mask, every producer lane (bias stores)
      mbar_init(empty_v(st), kMask ? 128 * kCons : 4 * kCons);   // with a mask, every bias reader
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();   // the last CTA-wide barrier: the roles part here
  // The warp index read from lane 0, so the compiler knows it is warp-uniform: otherwise it takes
  // the consumer branch for divergent code and serializes its wgmma (ptxas info C7520).
  const int warp = __shfl_sync(0xffffffffu, tid >> 5, 0);

  if (warp < 4) {   // producer warpgroup
    regs_dec<kProducerRegs>();
    if (warp != 0) return;
    const int lane = tid & 31;
    const uint8_t* mask = kMask ? p.mask + static_cast<int64_t>(bh / p.H) * p.Nk : nullptr;
    if (lane == 0) {
      mbar_expect_tx(bar_q, kCons * C::kQBytes);
      for (int c = 0; c < kCons; ++c) tma_tile<D, kBM>(q_s + c * C::kQBytes, &tm_q, bar_q, qb + c * kBM, bh);
    }
    for (int j = 0, st = 0, ph = 0; j < n; ++j) {   // tile j in stage st, its fill number's parity ph
      if (lane == 0) {
        mbar_wait(empty_k(st), ph ^ 1);   // a fresh barrier passes parity 1
        mbar_expect_tx(full_k(st), C::kKVBytes);
        tma_tile<D, BN>(k_s + st * C::kKVBytes, &tm_k, full_k(st), j * BN, bh);
      }
      if constexpr (kMask) {
        mbar_wait(empty_v(st), ph ^ 1);
#pragma unroll
        for (int c = lane; c < BN; c += 32) {   // 0 = keep, −inf = masked or ≥ Nk
          const int key = j * BN + c;
          bias_s[st * BN + c] = key < p.Nk && mask[key] == 0 ? 0.f : -INFINITY;
        }
        if (lane != 0) mbar_arrive(full_v(st));
      } else if (lane == 0) {
        mbar_wait(empty_v(st), ph ^ 1);
      }
      if (lane == 0) {
        mbar_expect_tx(full_v(st), C::kKVBytes);
        tma_tile<D, BN>(v_s + st * C::kKVBytes, &tm_v, full_v(st), j * BN, bh);
      }
      if (++st == S) st = 0, ph ^= 1;
    }
    return;
  }

  regs_inc<kConsumerRegs>();
  const int c = (warp >> 2) - 1, wtid = tid & 127, lane = tid & 31, t = lane & 3;
  const int q0 = qb + c * kBM;
  const uint32_t q_c = q_s + c * C::kQBytes;
  // Turns (FA3's inter-warpgroup overlap): consumer c issues its MMAs only after consumer c − 1
  // (mod kCons) issued its own and saw its S complete, so the consumers' S and P V reach the tensor
  // cores in a fixed rotation and each one's softmax runs while the others' MMAs do. Named barrier
  // 1 + c: c's 128 threads sync, its predecessor's 128 arrive. The last consumer opens the ring.
  auto wait_turn = [&] { bar_sync(1 + c, 256); };
  auto pass_turn = [&] { bar_arrive(1 + (c + 1) % kCons, 256); };
  if (c == kCons - 1) pass_turn();

  float s[BN / 2], o[D / 2];
  uint32_t pf[BN / 16][4];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) s[i] = 0.f;
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
#pragma unroll
  for (int i = 0; i < BN / 16; ++i) pf[i][0] = pf[i][1] = pf[i][2] = pf[i][3] = 0u;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  const float sl2 = p.scale_log2;

  mbar_wait(bar_q, 0);
  int pst = 0, pph = 0;   // stage and parity of tile j − 1
  for (int j = 0, st = 0, ph = 0; j < n; ++j) {
    mbar_wait(full_k(st), ph);
    if (j > 0) mbar_wait(full_v(pst), pph);
    wait_turn();
    wg_fence();
    issue_s<T, D, BN>(s, q_c, k_s + st * C::kKVBytes);
    wg_commit();
    if (j > 0) {
      issue_pv<T, D, BN>(o, pf, v_s + pst * C::kKVBytes);
      wg_commit();
    }
    if (j > 0) {
      wg_wait<1>();
    } else {
      wg_wait<0>();
    }
    reg_fence(s);
    pass_turn();   // here, not before S_j is complete: ptxas then serializes every wgmma (C7514)
    if (lane == 0) mbar_arrive(empty_k(st));
    if constexpr (kMask) mbar_wait(full_v(st), ph);   // the bias of tile j comes with V_j
    float alpha0, alpha1;
    softmax_tile<BN, kMask>(s, bias_s + st * BN, j == n - 1 ? p.Nk - j * BN : BN, sl2, t, m0, m1, l0, l1, alpha0,
                            alpha1);
    wg_wait<0>();   // P_{j-1} V_{j-1} done: O may be rescaled and P overwritten
    reg_fence(o);
    reg_fence(pf);
    if (j > 0 && (kMask || lane == 0)) mbar_arrive(empty_v(pst));
    rescale_pack<T, D, BN>(o, pf, s, alpha0, alpha1);
    pst = st;
    pph = ph;
    if (++st == S) st = 0, ph ^= 1;
  }
  if (c == 0) wait_turn();   // takes the last consumer's last pass: no arrival left unmatched
  mbar_wait(full_v(pst), pph);
  wg_fence();
  issue_pv<T, D, BN>(o, pf, v_s + pst * C::kKVBytes);
  wg_commit();
  wg_wait<0>();
  reg_fence(o);

  store_o<T, D>(p, o, l0, l1, bh, q0, smem + c * C::kQBytes, wtid, [&] { bar_sync(1 + kCons + c, 128); });
#else
  __trap();
#endif
}

// ---- host -----------------------------------------------------------------------------------

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encoder() {
  static const EncodeTiled fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      f = nullptr;
    }
    return reinterpret_cast<EncodeTiled>(f);
  }();
  return fn;
}

// (BH, rows, D) 16-bit tensor, box {64, box_rows, 1}, 128-byte swizzle, out-of-range rows → zeros.
bool make_map(CUtensorMap* map, AttnDtype dtype, const void* ptr, int64_t bh, int64_t rows, int d, int box_rows) {
  const EncodeTiled encode = encoder();
  if (!encode) return false;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(bh)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(d) * 2, static_cast<cuuint64_t>(rows * d) * 2};
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t unit[3] = {1, 1, 1};
  const CUtensorMapDataType type =
      dtype == AttnDtype::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return encode(map, type, 3, const_cast<void*>(ptr), dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The current device's multiprocessor count if it runs our sm_90a code (compute capability 9.0 and
// a kernel image built for it: binaryVersion 90, not a JIT of older PTX; ptxVersion 0 = no PTX
// recorded), else 0. Cached per device.
int device_sms() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> state[kMaxDevices];   // 0 unknown, −1 unusable, else the SM count
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return 0;
  int s = state[dev].load(std::memory_order_relaxed);
  if (s == 0) {
    int major = 0, minor = 0, sms = 0;
    cudaFuncAttributes attr{};
    const bool ok =
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && major == 9 &&
        minor == 0 && sms > 0 &&
        cudaFuncGetAttributes(&attr, attention_sm90_kernel<__nv_bfloat16, 64, 128, false>) == cudaSuccess &&
        attr.binaryVersion == 90 && (attr.ptxVersion == 0 || attr.ptxVersion >= 90);
    s = ok ? sms : -1;
    state[dev].store(s, std::memory_order_relaxed);
  }
  return s > 0 ? s : 0;
}

// Raises a kernel's dynamic shared memory limit once per device (outside any graph capture's
// steady state, as smem_optin.cuh does for the other kernels; one flag set per instantiation).
template <auto kKernel, size_t kSmem>
cudaError_t opt_in_smem() {
  constexpr int kMaxDevices = 64;
  static std::mutex mutex;
  static bool done[kMaxDevices] = {};
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  const std::lock_guard<std::mutex> lock(mutex);
  if (dev >= 0 && dev < kMaxDevices && done[dev]) return cudaSuccess;
  err = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem));
  if (err == cudaSuccess && dev >= 0 && dev < kMaxDevices) done[dev] = true;
  return err;
}

// kCons > 0: attention_sm90_kernel_ws (64·kCons rows per CTA), else attention_sm90_kernel (64).
template <typename T, int D, int BN, int kCons, bool kMask>
constexpr auto kernel_of() {
  if constexpr (kCons > 0) {
    return attention_sm90_kernel_ws<T, D, BN, kCons, kMask>;
  } else {
    return attention_sm90_kernel<T, D, BN, kMask>;
  }
}

template <typename T, int D, int BN, int kCons, bool kMask>
cudaError_t launch(const AttentionArgs& a, cudaStream_t stream) {
  using C = std::conditional_t<(kCons > 0), WSCfg<D, BN, kCons>, Cfg<D, BN>>;
  constexpr auto kernel = kernel_of<T, D, BN, kCons, kMask>();
  constexpr int rows = kCons > 0 ? kCons * kBM : kBM;
  const int64_t bh = a.B * a.H;
  CUtensorMap tm_q, tm_k, tm_v;
  if (!make_map(&tm_q, a.dtype, a.q, bh, a.Nq, D, kBM) || !make_map(&tm_k, a.dtype, a.k, bh, a.Nk, D, BN) ||
      !make_map(&tm_v, a.dtype, a.v, bh, a.Nk, D, BN)) {
    return cudaErrorInvalidValue;
  }
  Params p;
  p.out = a.out_fp32 ? nullptr : static_cast<uint16_t*>(a.out);
  p.out_f32 = a.out_fp32 ? static_cast<float*>(a.out) : nullptr;
  p.mask = a.key_padding_mask;
  p.H = static_cast<int>(a.H);
  p.Nq = static_cast<int>(a.Nq);
  p.Nk = static_cast<int>(a.Nk);
  p.q_blocks = static_cast<int>((a.Nq + rows - 1) / rows);
  p.n_tiles = static_cast<int>((a.Nk + BN - 1) / BN);
  p.scale_log2 = a.scale * 1.4426950408889634f;
  const int64_t blocks = p.q_blocks * bh;
  if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
  const cudaError_t err = opt_in_smem<kernel, C::kSmem>();
  if (err != cudaSuccess) return err;
  kernel<<<static_cast<unsigned>(blocks), 128 * (1 + kCons), C::kSmem, stream>>>(tm_q, tm_k, tm_v, p);
  return cudaPeekAtLastError();
}

template <typename T, int D, int BN, int kCons>
cudaError_t dispatch_mask(const AttentionArgs& a, cudaStream_t stream) {
  return a.key_padding_mask ? launch<T, D, BN, kCons, true>(a, stream) : launch<T, D, BN, kCons, false>(a, stream);
}

// Kernel choice, from timing both on Hopper (dev/kernels/attention_sm90/NOTES.md):
//  * D = 128: the warp-specialised kernel (2 consumers, kBN = 128), faster than the one-warpgroup
//    kernel at every Nk, whose 64-key tiles at 2 CTAs/SM leave it well behind SDPA.
//  * D = 64, long key sequences (Nk ≥ 2048) where 256-row q blocks pad Nq by at most 1/16 more
//    than 64-row ones: the warp-specialised kernel (4 consumers, kBN = 64), the faster there.
//    Otherwise the one-warpgroup kernel: at Nk of a few hundred to a thousand it is the faster,
//    because its 3–4 independent CTAs per SM overlap one CTA's
//    fill and drain with the others' loops, which a 1-CTA/SM kernel pays per q block, and it pads
//    Nq to 64 rows only.
bool use_ws(const AttentionArgs& a) {
  if (a.D == 128) return true;
  const int64_t rows64 = (a.Nq + 63) / 64 * 64, rows256 = (a.Nq + 255) / 256 * 256;
  return a.Nk >= 2048 && rows256 * 16 <= rows64 * 17;
}

// One-warpgroup kernel, D = 64: kBN = 128 at 3 CTAs/SM is the faster loop, but a grid of 3–4 CTAs
// per SM would run a second, mostly empty wave; kBN = 64 fits 4 CTAs/SM, one wave.
template <typename T>
cudaError_t dispatch(const AttentionArgs& a, int sms, cudaStream_t stream) {
  if (use_ws(a)) {
    return a.D == 128 ? dispatch_mask<T, 128, 128, 2>(a, stream) : dispatch_mask<T, 64, 64, 4>(a, stream);
  }
  const int64_t blocks = (a.Nq + kBM - 1) / kBM * a.B * a.H;
  if (blocks > 3 * static_cast<int64_t>(sms) && blocks <= 4 * static_cast<int64_t>(sms)) {
    return dispatch_mask<T, 64, 64, 0>(a, stream);
  }
  return dispatch_mask<T, 64, 128, 0>(a, stream);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool attention_sm90_supported(const AttentionArgs& a) {
  constexpr int64_t kMax = 0x7fffffff;
  return (a.dtype == AttnDtype::kBFloat16 || a.dtype == AttnDtype::kFloat16) && (a.D == 64 || a.D == 128) &&
         a.scale > 0.f && std::isfinite(a.scale) && aligned16(a.q) && aligned16(a.k) && aligned16(a.v) &&
         aligned16(a.out) && a.B >= 0 && a.H >= 0 && a.Nq >= 0 && a.Nk >= 0 && a.Nq < kMax && a.Nk < kMax &&
         (a.H == 0 || a.B <= kMax / a.H) && device_sms() > 0;
}

cudaError_t attention_sm90_launch(const AttentionArgs& a, cudaStream_t stream) {
  if (!attention_sm90_supported(a)) return cudaErrorInvalidValue;
  if (a.B * a.H * a.Nq == 0) return cudaSuccess;
  if (a.Nk == 0) {   // every row fully masked: zeros
    return cudaMemsetAsync(a.out, 0, static_cast<size_t>(a.B * a.H * a.Nq) * a.D * (a.out_fp32 ? 4 : 2), stream);
  }
  const int sms = device_sms();
  return a.dtype == AttnDtype::kBFloat16 ? dispatch<__nv_bfloat16>(a, sms, stream) : dispatch<__half>(a, sms, stream);
}

}  // namespace styleforge
