// Flash-style attention forward on tensor cores: softmax(scale · Q Kᵀ + mask) V per (batch, head),
// fp16/bf16 in and out, fp32 online softmax, the Nq × Nk matrix never leaves registers.
// Pure CUDA (runtime, fp16/bf16 headers, no torch) so CI compile-checks it without a GPU;
// attention_binding.cpp turns tensors into AttentionArgs. Semantics, including "a query row
// whose keys are all masked returns zeros": styleforge/kernels/reference/attention.py.
//
// Structure follows FlashAttention-2 (Dao, 2023, Algorithm 1), written directly on warp-level
// mma.sync.m16n8k16 (row.col, f32 accumulate). Fragment layouts as in conv9x9.cu (PTX ISA,
// "Matrix Fragments for mma.m16n8k16 with floating point type"): g = lane/4, t = lane%4; A regs
// {0,1,2,3} = A[g][2t..], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..]; B regs {0,1} =
// B[2t..2t+1][g], B[2t+8..2t+9][g]; C = C[g][2t..2t+1], C[g+8][2t..2t+1]; lower k/column in the
// low 16 bits.
//
// Grid: one CTA per (b, h, block of kBlockM query rows), the q blocks of one (b, h) adjacent so
// their K/V stay in L2. CTA: 4 warps; warp w owns kMTiles m16 tiles (16·kMTiles query rows):
// kMTiles = 2 for D ≤ 64 (kBlockM = 128), 1 for D = 128 (kBlockM = 64, register budget).
//  * Q: each lane loads its A fragments straight from global memory once (rows ≥ Nq → 0).
//  * K, V: tiles of kBlockN = 64 keys × D, double-buffered in shared memory with cp.async
//    (16-byte chunks; keys ≥ Nk are zero-filled by src-size 0, so they are finite). Rows are
//    padded to D + 8 elements: a row is then (D/2 + 4) words, so the 8 rows g of a K-fragment
//    load hit 8 distinct 4-bank groups, and the 8 row addresses of each ldmatrix phase (V) 8
//    distinct 16-byte bank groups (conflict-free for D = 32, 64, 128).
//  * S = Q Kᵀ: B[k][n] = K[n][k], so B reg 0 = K[n0+g][k0+2t..2t+1] is one aligned 32-bit
//    shared load, reg 1 the same at k0 + 8. Each B fragment serves all kMTiles m tiles. (One
//    ldmatrix.x4 per two fragments would load the same; for D = 64 it spills on sm_80.)
//  * Mask: per key tile, an fp32 additive bias (0 or −inf: masked or ≥ Nk) staged next to K.
//  * Online softmax in the exp2 domain (scale · log2 e folded in): the row max is reduced over
//    the 4 lanes of a row (shfl_xor 1, 2); each lane keeps a partial row sum, reduced once at the
//    end. A row whose running max is still −inf shifts by 0 instead, so its p are exactly 0 and
//    its output 0 (l = 0 → 0, never 0/0).
//  * O += P V: the C fragments of S for key columns 16j..16j+15 (n tiles 2j, 2j+1) are, after
//    packing pairs to 16 bits, exactly the A fragment of P for k-step j (FA2's register trick).
//    B[k][n] = V[key k][d n] is column-wise in V's rows: ldmatrix.x4.trans gives lane l the pair
//    V[k0+2t..2t+1][d0+g] for four 8×8 blocks (keys 0–7 / 8–15 × d 0–7 / 8–15) in one go.
// Not covered: other head dims (the Python entry pads them), fp32 (the entry rounds to bf16 on
// opt-in), attention masks other than key padding, dropout, a backward kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "../common/packed16.cuh"
#include "../common/smem_optin.cuh"
#include "attention.h"

namespace styleforge {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockN = 64;

template <int D>
struct Cfg {
  static constexpr int kMTiles = D <= 64 ? 2 : 1;
  static constexpr int kBlockM = kWarps * 16 * kMTiles;
  static constexpr int kStride = D + 8;                         // shared row, elements
  static constexpr int kKSteps = D / 16;                        // k steps of S = Q Kᵀ
  static constexpr int kDTiles = D / 8;                         // n tiles of O
  static constexpr size_t kTileElems = size_t(kBlockN) * kStride;
  static constexpr size_t kSmem = 2 * 2 * kTileElems * 2 + 2 * kBlockN * sizeof(float);
};

// ---- warp primitives ----------------------------------------------------------------------
// STYLEFORGE_ATTN_WARP_EMULATION lets a CPU emulator supply these with the same semantics.
#ifndef STYLEFORGE_ATTN_WARP_EMULATION
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;   // 0: nothing is read, the 16 bytes are zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
#endif

__device__ __forceinline__ uint32_t load32(const uint16_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

struct Params {
  const uint16_t* q;      // raw 16-bit elements: moved untouched until the mma
  const uint16_t* k;
  const uint16_t* v;
  const uint8_t* mask;    // (B, Nk) or null
  uint16_t* out;
  int64_t H, Nq, Nk, q_blocks;
  float scale_log2;       // scale · log2(e)
};

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) attention_kernel(Params p) {
  using C = Cfg<D>;
  constexpr int kM = C::kMTiles, kS = C::kStride;
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* k_s = reinterpret_cast<uint16_t*>(smem);                   // [stage][key][kS]
  uint16_t* v_s = k_s + 2 * C::kTileElems;                              // [stage][key][kS]
  float* bias_s = reinterpret_cast<float*>(v_s + 2 * C::kTileElems);    // [stage][key]

  const int64_t bh = blockIdx.x / p.q_blocks, qb = blockIdx.x % p.q_blocks;
  const int64_t b = bh / p.H;
  const uint16_t* qg = p.q + bh * p.Nq * D;
  const uint16_t* kg = p.k + bh * p.Nk * D;
  const uint16_t* vg = p.v + bh * p.Nk * D;
  const uint8_t* mask = p.mask ? p.mask + b * p.Nk : nullptr;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int64_t row0 = qb * C::kBlockM + warp * 16 * kM;   // this warp's first query row

  uint32_t qf[kM][C::kKSteps][4];
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
    const int64_t r0 = row0 + mt * 16 + g, r1 = r0 + 8;
#pragma unroll
    for (int ks = 0; ks < C::kKSteps; ++ks) {
      const int c = ks * 16 + 2 * t;
      qf[mt][ks][0] = r0 < p.Nq ? load32(qg + r0 * D + c) : 0u;
      qf[mt][ks][1] = r1 < p.Nq ? load32(qg + r1 * D + c) : 0u;
      qf[mt][ks][2] = r0 < p.Nq ? load32(qg + r0 * D + c + 8) : 0u;
      qf[mt][ks][3] = r1 < p.Nq ? load32(qg + r1 * D + c + 8) : 0u;
    }
  }

  float o[kM][C::kDTiles][4];
  float m[kM][2], l[kM][2];
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int dt = 0; dt < C::kDTiles; ++dt)
#pragma unroll
      for (int c = 0; c < 4; ++c) o[mt][dt][c] = 0.f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.f;
  }

  const int64_t n_tiles = (p.Nk + kBlockN - 1) / kBlockN;
  auto load_tile = [&](int64_t tile, int stage) {
    constexpr int kChunks = D / 8;   // 16-byte chunks per row
    for (int i = threadIdx.x; i < kBlockN * kChunks; i += kThreads) {
      const int r = i / kChunks, c = i - r * kChunks;
      const int64_t key = tile * kBlockN + r;
      const bool ok = key < p.Nk;
      const int64_t off = (ok ? key : 0) * D + c * 8;
      cp_async16(k_s + stage * C::kTileElems + r * kS + c * 8, kg + off, ok);
      cp_async16(v_s + stage * C::kTileElems + r * kS + c * 8, vg + off, ok);
    }
    if (threadIdx.x < kBlockN) {
      const int64_t key = tile * kBlockN + threadIdx.x;
      const bool keep = key < p.Nk && !(mask && mask[key]);
      bias_s[stage * kBlockN + threadIdx.x] = keep ? 0.f : -INFINITY;
    }
  };

  if (n_tiles > 0) load_tile(0, 0);
  cp_async_commit();
  for (int64_t j = 0; j < n_tiles; ++j) {
    const int stage = static_cast<int>(j & 1);
    if (j + 1 < n_tiles) {
      load_tile(j + 1, stage ^ 1);   // that stage's readers finished at the previous iteration's barrier
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const uint16_t* ks_ = k_s + stage * C::kTileElems;
    const uint16_t* vs_ = v_s + stage * C::kTileElems;
    const float* bias = bias_s + stage * kBlockN;

    // S = Q Kᵀ for 64 keys: n tile nt covers keys 8nt..8nt+7.
    float s[kM][8][4];
#pragma unroll
    for (int mt = 0; mt < kM; ++mt)
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) s[mt][nt][c] = 0.f;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int ks = 0; ks < C::kKSteps; ++ks) {
        const uint16_t* kp = ks_ + (nt * 8 + g) * kS + ks * 16 + 2 * t;
        const uint32_t b0 = load32(kp), b1 = load32(kp + 8);
#pragma unroll
        for (int mt = 0; mt < kM; ++mt) mma_16816<T>(s[mt][nt], qf[mt][ks], b0, b1);
      }
    }

    uint32_t pa[kM][4][4];   // P as A fragments: [m tile][k step of 16 keys][reg]
#pragma unroll
    for (int mt = 0; mt < kM; ++mt) {
      float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        const float b0 = bias[nt * 8 + 2 * t], b1 = bias[nt * 8 + 2 * t + 1];
        s[mt][nt][0] = s[mt][nt][0] * p.scale_log2 + b0;
        s[mt][nt][1] = s[mt][nt][1] * p.scale_log2 + b1;
        s[mt][nt][2] = s[mt][nt][2] * p.scale_log2 + b0;
        s[mt][nt][3] = s[mt][nt][3] * p.scale_log2 + b1;
        mx0 = fmaxf(mx0, fmaxf(s[mt][nt][0], s[mt][nt][1]));
        mx1 = fmaxf(mx1, fmaxf(s[mt][nt][2], s[mt][nt][3]));
      }
      mx0 = fmaxf(mx0, shfl_xor(mx0, 1));
      mx0 = fmaxf(mx0, shfl_xor(mx0, 2));
      mx1 = fmaxf(mx1, shfl_xor(mx1, 1));
      mx1 = fmaxf(mx1, shfl_xor(mx1, 2));
      const float new0 = fmaxf(m[mt][0], mx0), new1 = fmaxf(m[mt][1], mx1);
      const float use0 = new0 == -INFINITY ? 0.f : new0, use1 = new1 == -INFINITY ? 0.f : new1;
      const float alpha0 = exp2f(m[mt][0] - use0), alpha1 = exp2f(m[mt][1] - use1);
      m[mt][0] = new0;
      m[mt][1] = new1;
      float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        s[mt][nt][0] = exp2f(s[mt][nt][0] - use0);
        s[mt][nt][1] = exp2f(s[mt][nt][1] - use0);
        s[mt][nt][2] = exp2f(s[mt][nt][2] - use1);
        s[mt][nt][3] = exp2f(s[mt][nt][3] - use1);
        sum0 += s[mt][nt][0] + s[mt][nt][1];
        sum1 += s[mt][nt][2] + s[mt][nt][3];
      }
      l[mt][0] = l[mt][0] * alpha0 + sum0;
      l[mt][1] = l[mt][1] * alpha1 + sum1;
#pragma unroll
      for (int dt = 0; dt < C::kDTiles; ++dt) {
        o[mt][dt][0] *= alpha0;
        o[mt][dt][1] *= alpha0;
        o[mt][dt][2] *= alpha1;
        o[mt][dt][3] *= alpha1;
      }
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        pa[mt][kk][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][kk][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][kk][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][kk][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    }

    // O += P V. ldmatrix.trans blocks: lanes 0–7 keys 0–7 / d 0–7, 8–15 keys 8–15 / d 0–7,
    // 16–23 keys 0–7 / d 8–15, 24–31 keys 8–15 / d 8–15 → B regs (0, 1) of d tile 2dp, then 2dp+1.
    const int v_row = (lane & 7) + ((lane >> 3) & 1) * 8, v_col = (lane >> 4) * 8;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, vs_ + (kk * 16 + v_row) * kS + dp * 16 + v_col);
#pragma unroll
        for (int mt = 0; mt < kM; ++mt) {
          mma_16816<T>(o[mt][2 * dp], pa[mt][kk], vb[0], vb[1]);
          mma_16816<T>(o[mt][2 * dp + 1], pa[mt][kk], vb[2], vb[3]);
        }
      }
    }
    __syncthreads();   // this stage is refilled by the next iteration's load
  }

  uint16_t* og = p.out + bh * p.Nq * D;
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
    float l0 = l[mt][0], l1 = l[mt][1];
    l0 += shfl_xor(l0, 1);
    l0 += shfl_xor(l0, 2);
    l1 += shfl_xor(l1, 1);
    l1 += shfl_xor(l1, 2);
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
    const int64_t r0 = row0 + mt * 16 + g, r1 = r0 + 8;
#pragma unroll
    for (int dt = 0; dt < C::kDTiles; ++dt) {
      const int c = dt * 8 + 2 * t;
      if (r0 < p.Nq) {
        *reinterpret_cast<uint32_t*>(og + r0 * D + c) = pack2<T>(o[mt][dt][0] * inv0, o[mt][dt][1] * inv0);
      }
      if (r1 < p.Nq) {
        *reinterpret_cast<uint32_t*>(og + r1 * D + c) = pack2<T>(o[mt][dt][2] * inv1, o[mt][dt][3] * inv1);
      }
    }
  }
}

// ---- host -----------------------------------------------------------------------------------


template <typename T, int D>
cudaError_t launch(const AttentionArgs& a, cudaStream_t stream, int id) {
  using C = Cfg<D>;
  Params p;
  p.q = static_cast<const uint16_t*>(a.q);
  p.k = static_cast<const uint16_t*>(a.k);
  p.v = static_cast<const uint16_t*>(a.v);
  p.mask = a.key_padding_mask;
  p.out = static_cast<uint16_t*>(a.out);
  p.H = a.H;
  p.Nq = a.Nq;
  p.Nk = a.Nk;
  p.q_blocks = (a.Nq + C::kBlockM - 1) / C::kBlockM;
  p.scale_log2 = a.scale * 1.4426950408889634f;
  const int64_t blocks = p.q_blocks * a.B * a.H;
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
  const cudaError_t err = allow_smem(attention_kernel<T, D>, C::kSmem, id);
  if (err != cudaSuccess) return err;
  attention_kernel<T, D><<<static_cast<unsigned>(blocks), kThreads, C::kSmem, stream>>>(p);
  return cudaPeekAtLastError();
}

}  // namespace

bool attention_supported(int head_dim) { return head_dim == 32 || head_dim == 64 || head_dim == 128; }

cudaError_t attention_launch(const AttentionArgs& a, cudaStream_t stream) {
  if (a.out_fp32) return cudaErrorInvalidValue;   // 16-bit output only; the binding converts
  if (!attention_supported(a.D) || a.B < 0 || a.H < 0 || a.Nq < 0 || a.Nk < 0) return cudaErrorInvalidValue;
  const bool bf16 = a.dtype == AttnDtype::kBFloat16;
  switch (a.D) {
    case 32: return bf16 ? launch<__nv_bfloat16, 32>(a, stream, 0) : launch<__half, 32>(a, stream, 1);
    case 64: return bf16 ? launch<__nv_bfloat16, 64>(a, stream, 2) : launch<__half, 64>(a, stream, 3);
    default: return bf16 ? launch<__nv_bfloat16, 128>(a, stream, 4) : launch<__half, 128>(a, stream, 5);
  }
}

}  // namespace styleforge
