// conv1 of the style network, 9×9 3 → 32 on the 0–255 image, as an implicit GEMM on Hopper's
// warpgroup MMA (wgmma m64n32k16, A from registers, B from shared memory), fp16/bf16 in, fp32
// accumulate, NHWC out, with IN1's statistics optionally. The semantics are conv9x9.cu's rgb_kernel
// (the reflection pad in the addressing, x read through its strides in fp32 or T, rounded to T on
// load; the statistics of the rounded outputs into a norm state); that kernel stays the path on other
// GPUs. Not here: the head (32 → 3), which stays in conv9x9.cu on every GPU.
//
// Why a second kernel: rgb_kernel issues mma.sync, whose m16n8k16 rate on Hopper is about half of
// wgmma's, stages 16 input rows for its 8 output rows and reads each A fragment from shared memory
// once per (output row, ky). Here:
//  * M = 64 consecutive output pixels of one row (warp w: pixels 16w..16w+15, the m16 rows of its
//    A fragment), N = the 32 output channels, K per kernel row ky = (kx, c), 27 values padded to 32
//    (two k16 steps, B zero for k ≥ 27; A there reads finite neighbours). A[m][k] = row[3(p0 + m) + k]
//    of the staged NHWC input row, kept twice (copy 1 shifted by one element) so every A register is
//    one aligned 32-bit shared load, as in rgb_kernel.
//  * Kernel-row reuse: an A fragment of input row R feeds every output row R − ky of the current
//    group, so each group of kG = 4 output rows loads kG + 8 rows' fragments (12) instead of 36, and
//    issues 4 × 9 × 2 wgmmas into four accumulators (64 fp32 per thread).
//  * B: the 9 kernel rows as 5 blocks [32 n][64 k] (ky pair (2b, 2b + 1), k 32..63 the odd one) in
//    128-byte rows with the 128-byte swizzle (16-byte chunk c of row n at slot c ^ (n % 8)): K-major
//    B with descriptor SBO = 1024, the k16 step at start + 32 bytes, the odd ky at + 64, as the 3×3
//    kernels' packed weight (conv3x3_tile.cuh). Built once per CTA: the raw weight arrives by
//    cp.async while the first tile's input is loaded and staged (one memory round trip for both),
//    then each element is written to its place with plain stores, so a proxy fence orders them
//    before the wgmmas read them. (A loop of 8-element gathers, one round trip each, was slower.)
//  * Block: one warpgroup; tile 64 × kTH = 16 output pixels; the grid is persistent (every CTA that
//    fits, 3 per SM), so one CTA's staging and epilogue run under another's wgmmas. The next
//    kernel (PDL) may start once every CTA is in its last group.
//  * Pipeline inside a group: the fragments of input row r + 1 load while row r's wgmmas run (two
//    register buffers, wgmma.wait_group 1).
//  * Epilogue per group: + bias, round to T, a 4 × 4 word transpose inside each lane quad so that a
//    lane holds a 16-byte chunk of its pixel, 16-byte stores (a warp's 8 pixels: 512 contiguous bytes;
//    4-byte stores of channel pairs cost 16 % at 4K). Statistics: per thread and channel, fp32 sums
//    of d = v − K and d² about K = the warp's first value of that channel (lane g = 0's pixel in
//    the tile's first row), so that a large mean does not cancel the variance away; at the tile's
//    end summed over the warp's 8 lanes of a channel in fp32, then over the 4 warps as fp64 Σx, Σx²,
//    added to the norm state. (The first form, one K per thread kept in shared memory between groups
//    and fp64 shuffles, made conv9x9_norm twice conv9x9's time: docs/kernels/conv9x9.md.)
// Pure CUDA (no torch) so CI compile-checks it; STYLEFORGE_SM90A = 0 (other targets) leaves the kernel body
// empty and conv9x9_sm90_supported false. Written from the PTX ISA's wgmma sections.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "conv9x9_common.cuh"
#include "../norm_sums/norm_sums.cuh"
#include "../common/pdl.cuh"
#include "../common/sm90_ptx.cuh"
#include "../common/smem_optin.cuh"
#include "../common/warp_sums.cuh"
#include "conv9x9_sm90.h"

namespace styleforge {
namespace {

constexpr int kThreads = 128;                 // one warpgroup
constexpr int kTW = 64;                       // output tile columns: the wgmma's M
constexpr int kTH = 16;                       // output tile rows
constexpr int kG = 4;                         // output rows per accumulator group
constexpr int kGroupRows = kG + 8;            // staged input rows a group reads
constexpr int kRows = kTH + 8;                // staged input rows per tile
constexpr int kCopy = 224;                    // elements per row copy: ≥ 3·63 + 32, 112 words ≡ 16 (mod 32)
constexpr int kLoad = kCopy + 1;              // staged columns (copy 1 needs one element past copy 0)
constexpr int kRowWords = kCopy;              // a staged row's two copies in 32-bit words
constexpr uint32_t kBBlockBytes = 32 * 128;   // one ky pair: [32 n][64 k], 128-byte rows
constexpr uint32_t kBBytes = 5 * kBBlockBytes;
constexpr uint32_t kInOff = kBBytes;
constexpr uint32_t kInBytes = kRows * 2 * kCopy * 2;
constexpr uint32_t kRedOff = kInOff + kInBytes;          // fp32 [4 warps][Σd, Σd², K][32 channels]
constexpr uint32_t kFlagOff = kRedOff + 4 * 3 * 32 * 4;
constexpr uint32_t kRawWOff = kFlagOff + 16;                // the raw (32, 3, 9, 9) weight, once
constexpr uint32_t kSmemUsed = kRawWOff + kWeightChunks * 16;
constexpr size_t kSmem = kSmemUsed + 1024;               // + slack to 1024-align B (the swizzle's atoms)
static_assert(kTH % kG == 0 && kLoad <= 2 * kThreads, "tile geometry");


#if STYLEFORGE_SM90A
using namespace sm90;

// The four A registers of k16 step ks for one warp from a staged row: (pixel g, k 2t), (pixel g + 8:
// +24 elements = +12 words), (k + 8: +4 words), both. `row` already points at this lane's word.
__device__ __forceinline__ void load_a(uint32_t (&a)[2][4], const uint32_t* row) {
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    const uint32_t* b = row + ks * 8;
    a[ks][0] = b[0];
    a[ks][1] = b[12];
    a[ks][2] = b[4];
    a[ks][3] = b[16];
  }
}

// One exchange round of quad_transpose: with lane t ^ M, the two words whose index differs from t
// in bit M (0 and 2 or 1 for bit M clear, M and 3 for bit M set).
template <int M>
__device__ __forceinline__ void quad_exchange(uint32_t (&w)[4], bool high) {
  constexpr int lo0 = 0, lo1 = M == 1 ? 2 : 1, hi0 = M, hi1 = 3;
  const uint32_t r0 = __shfl_xor_sync(0xffffffffu, high ? w[lo0] : w[hi0], M);
  const uint32_t r1 = __shfl_xor_sync(0xffffffffu, high ? w[lo1] : w[hi1], M);
  if (high) {   // (static indices: an indexed store would put w in local memory)
    w[lo0] = r0;
    w[lo1] = r1;
  } else {
    w[hi0] = r0;
    w[hi1] = r1;
  }
}

// The quad's (lanes 4g .. 4g + 3) 4 × 4 words transposed: lane t's w[j] (channels 8j + 2t, + 1 of
// its pixel) becomes w[j] = lane j's old w[t] (channels 8t + 2j, + 1), so that each lane holds one
// 16-byte chunk of the pixel and a warp's stores of 8 pixels are 512 contiguous bytes.
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4], int t) {
  quad_exchange<1>(w, (t & 1) != 0);
  quad_exchange<2>(w, (t & 2) != 0);
}

// ---- the kernel's pieces -------------------------------------------------------------------
// rgb_sm90_kernel is: prologue (start_weight_copy, the bias, the first tile's StageTile while the
// copy is in flight, arrange_b); per tile StageTile; per group of kG output rows group_mma (main
// loop) and row_epilogue per row; per tile tile_moments (kStats). All inlined. They compile to the
// single function's machine code because the arrays that live across them (raw, bias, shift_k /
// s1 / s2, acc, a0 / a1, lo / hi) stay the kernel's locals in their original order, passed by
// reference, and the loop over a group's rows stays in the kernel (inside row_epilogue its 64-bit
// row address compiled to other arithmetic): docs/kernels/conv9x9.md, "Code structure".

// The weight's copy to shared memory started with cp.async (no registers held while in flight):
// the B image itself where Params::weight_b (pack_conv1_weight made it once, on the host side: no
// zeroing, no rearranging, a fifth of this kernel's time at 512²), else the raw (32, 3, 9, 9) weight
// to w_raw and the B image zeroed (its k ≥ 27 columns and the missing ninth ky stay zero).
__device__ __forceinline__ void start_weight_copy(const Params& p, unsigned char* b_s, const uint16_t* w_raw,
                                                  bool packed, int tid) {
  if (packed) {
    for (int i = tid; i < static_cast<int>(kBBytes / 16); i += kThreads) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(b_s) + 16 * i),
                   "l"(reinterpret_cast<const uint4*>(p.weight_b) + i) : "memory");
    }
  } else {
    for (int i = tid; i < kWeightChunks; i += kThreads) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(w_raw) + 16 * i),
                   "l"(reinterpret_cast<const uint4*>(p.weight) + i) : "memory");
    }
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  if (!packed) {
    for (int i = tid; i < static_cast<int>(kBBytes / 16); i += kThreads) {
      reinterpret_cast<uint4*>(b_s)[i] = make_uint4(0u, 0u, 0u, 0u);
    }
  }
}

// Each raw weight element to its B position (unless packed, where the loop is empty): W[n][c][ky][kx]
// is row n, k = 32·(ky % 2) + 3·kx + c of block ky / 2, its 16-byte chunk k / 8 stored at slot
// (k / 8) ^ (n % 8). Plain stores: the proxy fence orders them before the wgmmas read B (the tile
// loop's first barrier completes the ordering).
__device__ __forceinline__ void arrange_b(unsigned char* b_s, const uint16_t* w_raw, bool packed, int tid) {
  for (int i = packed ? kWeightChunks * 8 : tid; i < kWeightChunks * 8; i += kThreads) {
    const int n = i / 243, rem = i - 243 * n, c = rem / 81, tap = rem - 81 * c;
    const int ky = tap / 9, kx = tap - 9 * ky, kk = 32 * (ky & 1) + 3 * kx + c;
    *reinterpret_cast<uint16_t*>(b_s + (ky >> 1) * kBBlockBytes + n * 128 + (((kk >> 3) ^ (n & 7)) << 4) + (kk & 7) * 2) =
        w_raw[i];
  }
  fence_proxy_async_smem();
}

// Staging of one tile's kRows padded input rows into in_s [row][copy][kCopy]: thread j < kLoad
// stages element j of each row, channel j % 3 of padded column x0 + j / 3 (the NHWC order of K);
// copy 1 takes it at j − 1. load() issues all loads into raw (two columns for threads
// j < kLoad − kThreads) before store() uses the first. References to the kernel's locals.
template <typename T, typename In>
struct StageTile {
  const Params& p;
  const int& tid;
  const In* const& x;
  In (&raw)[2][kRows];
  const uint64_t& policy;
  uint16_t* const& in_s;

  template <typename Hint>
  __device__ __forceinline__ void load_as(int tile, Hint) const {
    int n, y0, x0;
    tile_origin(p, tile, kTH, kTW, n, y0, x0);
    const In* xc[2];
    bool col_in[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = tid + h * kThreads, jp = j / 3, jc = j - 3 * jp, px = x0 + jp;
      col_in[h] = px < p.Wp && (h == 0 || j < kLoad);
      xc[h] = x + static_cast<int64_t>(n) * p.sn + static_cast<int64_t>(jc) * p.sc +
              static_cast<int64_t>(reflect((px < p.Wp ? px : p.pad) - p.pad, 2 * (p.Win - 1))) * p.sw;
    }
    // Row by row, both columns: each row's offset is used at once (kept for a second pass it spilled).
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int y = y0 + r;
      const int64_t off = static_cast<int64_t>(reflect(y - p.pad, 2 * (p.Hin - 1))) * p.sh;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        raw[h][r] = col_in[h] && y < p.Hp ? load_hinted<Hint::value>(xc[h] + off, policy) : In(0);
      }
    }
  }
  // The L2 hint chosen once per tile (with_load_hint).
  __device__ __forceinline__ void load(int tile) const {
    with_load_hint(p, [&](auto hint) { load_as(tile, hint); });
  }
  __device__ __forceinline__ void store() const {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = tid + h * kThreads;
      if (h == 0 || j < kLoad) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const uint16_t v = as_bits<T>(raw[h][r]);
          if (j < kCopy) in_s[(2 * r) * kCopy + j] = v;
          if (j > 0) in_s[(2 * r + 1) * kCopy + j - 1] = v;
        }
      }
    }
  }
};

// Main loop of one group: acc[i] (m64n32, 16 fp32 per thread) = output row i of the group, from
// the group's kGroupRows staged rows at `rows` (this lane's A word of the first). Input row rr feeds
// output row i through kernel row ky = rr − i; the fragments of row rr + 1 load (into the other of
// a0/a1) while row rr's wgmmas run.
template <bool kBF16>
__device__ __forceinline__ void group_mma(float (&acc)[kG][16], uint32_t (&a0)[2][4], uint32_t (&a1)[2][4],
                                          const uint32_t* rows, uint32_t b_addr) {
#pragma unroll
  for (int i = 0; i < kG; ++i)
#pragma unroll
    for (int c = 0; c < 16; ++c) acc[i][c] = 0.f;
  reg_fence(acc);
  // Block 0's descriptor, opaque so that the 18 (ky, k-step) descriptors are formed next to
  // their wgmmas (one add each) rather than hoisted out of the group loop into 36 registers.
  uint64_t desc0 = sw128_desc(b_addr, 16, 1024);
  asm volatile("" : "+l"(desc0));
  load_a(a0, rows);
#pragma unroll
  for (int rr = 0; rr < kGroupRows; ++rr) {
    uint32_t(&a)[2][4] = (rr & 1) ? a1 : a0;
    uint32_t(&next)[2][4] = (rr & 1) ? a0 : a1;
    wg_fence();
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
#pragma unroll
      for (int i = 0; i < kG; ++i) {
        const int ky = rr - i;
        if (ky >= 0 && ky <= 8) {
          // (The start address is bits 0–13 of the descriptor, in 16-byte units: B ends below 256 KB.)
          wgmma_rs<kBF16>(acc[i], a[ks], desc0 + (((ky >> 1) * kBBlockBytes + (ky & 1) * 64 + ks * 32) >> 4));
        }
      }
    }
    wg_commit();
    if (rr > 0) {
      wg_wait<1>();   // row rr − 1's wgmmas are done: their A registers are free
      reg_fence(next);
    }
    if (rr + 1 < kGroupRows) load_a(next, rows + (rr + 1) * kRowWords);
  }
  wg_wait<0>();
  reg_fence(acc);
}

// Epilogue of one output row of a group: + bias, round to T, (kStats) the shifted sums of the
// rounded values, the quad transpose, 16-byte stores to o (this lane's pixel g; g + 8 at + 8 pixels).
// Lane (g, t) holds pixel g in acc[4j], [4j + 1] and pixel g + 8 in acc[4j + 2], [4j + 3], channels
// 8j + 2t and 8j + 2t + 1. Statistics: per channel (bias's order) Σd, Σd² of d = v − K, K = shift_k,
// the warp's first value of the channel (lane g = 0's pixel in the tile's first row, shuffled to
// the quad's lanes), taken where first_row.
template <typename T, bool kStats>
__device__ __forceinline__ void row_epilogue(const Params& p, const float (&acc)[16], const float (&bias)[8],
                                             float (&shift_k)[8], float (&s1)[8], float (&s2)[8], uint32_t (&lo)[4],
                                             uint32_t (&hi)[4], uint16_t* o, bool first_row, int t, bool px0_in,
                                             bool px1_in) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    lo[j] = styleforge::pack2<T>(acc[4 * j] + bias[2 * j], acc[4 * j + 1] + bias[2 * j + 1]);
    hi[j] = styleforge::pack2<T>(acc[4 * j + 2] + bias[2 * j], acc[4 * j + 3] + bias[2 * j + 1]);
    if constexpr (kStats) {   // the statistics see the stored values
      float v[4];
      unpack2<T>(lo[j], v[0], v[1]);
      unpack2<T>(hi[j], v[2], v[3]);
      if (first_row) {   // (uniform) lane t = (g 0, t): the warp's first pixel
        shift_k[2 * j] = __shfl_sync(0xffffffffu, v[0], t);
        shift_k[2 * j + 1] = __shfl_sync(0xffffffffu, v[1], t);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float d0 = px0_in ? v[h] - shift_k[2 * j + h] : 0.f;
        const float d1 = px1_in ? v[2 + h] - shift_k[2 * j + h] : 0.f;
        s1[2 * j + h] += d0 + d1;
        s2[2 * j + h] = fmaf(d0, d0, fmaf(d1, d1, s2[2 * j + h]));
      }
    }
  }
  quad_transpose(lo, t);
  quad_transpose(hi, t);
  const uint4 v0 = make_uint4(lo[0], lo[1], lo[2], lo[3]), v1 = make_uint4(hi[0], hi[1], hi[2], hi[3]);
  if (p.l2_evict_first) {   // (cache_hints.cuh)
    if (px0_in) st_evict_first(reinterpret_cast<uint4*>(o), v0, evict_first_policy());
    if (px1_in) st_evict_first(reinterpret_cast<uint4*>(o + 8 * 32), v1, evict_first_policy());
  } else {
    if (px0_in) *reinterpret_cast<uint4*>(o) = v0;
    if (px1_in) *reinterpret_cast<uint4*>(o + 8 * 32) = v1;
  }
}

// The tile's statistics into the norm state: Σd and Σd² over the warp's 8 lanes of each channel in
// fp32 (one K per warp and channel), then over the 4 warps in fp64 as Σx = Σd + count·K and
// Σx² = Σd² + 2K·Σd + count·K². red_s: fp32 [4 warps][Σd, Σd², K][32 channels].
__device__ __forceinline__ void tile_moments(const Params& p, float* red_s, const float (&shift_k)[8],
                                             const float (&s1)[8], const float (&s2)[8], int tid, int lane, int warp,
                                             int g, int t, int n, int y0, int x0) {
  float v[16];
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    v[c] = s1[c];
    v[8 + c] = s2[c];
  }
  sum_over_g(v, lane);   // lane (g, t) holds v[first], v[first + 1] of the 16
  const int first = halving_first<16>(g), q = first >> 3, c0 = first & 7;
#pragma unroll
  for (int h = 0; h < 2; ++h) red_s[(warp * 3 + q) * 32 + 8 * ((c0 + h) >> 1) + 2 * t + ((c0 + h) & 1)] = v[h];
  if (g == 0) {
#pragma unroll
    for (int c = 0; c < 8; ++c) red_s[(warp * 3 + 2) * 32 + 8 * (c >> 1) + 2 * t + (c & 1)] = shift_k[c];
  }
  __syncthreads();
  if (tid < 32) {
    const int rows = imin(kTH, p.H - y0);
    double a = 0.0, b = 0.0;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const double count = static_cast<double>(rows) * imin(16, imax(0, p.W - x0 - 16 * w));
      const double k = red_s[(w * 3 + 2) * 32 + tid], d = red_s[(w * 3) * 32 + tid];
      a += d + count * k;
      b += static_cast<double>(red_s[(w * 3 + 1) * 32 + tid]) + 2.0 * k * d + count * k * k;
    }
    norm_state_add_sums(p.norm_state, p.N * 32, n, 32, tid, a, b);
  }
}
#endif

template <typename T, typename In, bool kStats>
__global__ void __launch_bounds__(kThreads, 3) rgb_sm90_kernel(const Params p) {
#if STYLEFORGE_SM90A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char* b_s = smem;
  uint16_t* in_s = reinterpret_cast<uint16_t*>(smem + kInOff);    // [row][copy][kCopy]
  float* red_s = reinterpret_cast<float*>(smem + kRedOff);
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  constexpr bool kBF16 = std::is_same_v<T, __nv_bfloat16>;

  // Prologue: the weight's copy started, only then the wait for the kernel before (none of this
  // reads what it writes); the first tile staged while the copy is in flight; B arranged.
  const uint16_t* w_raw = reinterpret_cast<const uint16_t*>(smem + kRawWOff);
  const bool packed = p.weight_b != nullptr;   // uniform
  start_weight_copy(p, b_s, w_raw, packed, tid);
  float bias[8];   // channels 8j + 2t, 8j + 2t + 1 in bias[2j], bias[2j + 1]
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    bias[2 * j] = p.bias ? p.bias[8 * j + 2 * t] : 0.f;
    bias[2 * j + 1] = p.bias ? p.bias[8 * j + 2 * t + 1] : 0.f;
  }
  // This lane's A word in a staged row: pixel 16·warp + g, k = 2t; odd pixels read copy 1.
  const int e0 = (16 * warp + g) * 3 + 2 * t;
  const uint32_t* a_lane = reinterpret_cast<const uint32_t*>(in_s) + ((g & 1) ? kCopy / 2 + (e0 - 1) / 2 : e0 / 2);
  const In* x = static_cast<const In*>(p.x);
  grid_dependency_wait();   // x comes from the work before this kernel (the weights did not)

  // Staging (StageTile), in two halves so that the first tile's loads share the weight's round trip.
  In raw[2][kRows];
  const uint64_t policy = evict_first_policy();   // (load_hinted: where Params::l2_evict_first)
  const StageTile<T, In> stage{p, tid, x, raw, policy, in_s};
  // The first tile's input is loaded and staged while the weight's copy is in flight; then the
  // weight is rearranged. (Loaded before the rearranging and staged after it, its 48 registers
  // spilled.)
  if (blockIdx.x < p.tiles) {
    stage.load(blockIdx.x);
    stage.store();
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();   // the raw weight is in, B is zeroed (or B is in)
  arrange_b(b_s, w_raw, packed, tid);
  const uint32_t b_addr = smem_u32(b_s);

  for (int tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    int n, y0, x0;
    tile_origin(p, tile, kTH, kTW, n, y0, x0);
    if (tile != static_cast<int>(blockIdx.x)) {
      __syncthreads();   // the previous tile's fragment loads are done
      stage.load(tile);
      stage.store();
    }
    __syncthreads();

    // This thread's pixels 16·warp + g and + 8: inside the output or not (their stores and statistics).
    const int px = x0 + 16 * warp + g;
    const bool px0_in = px < p.W, px1_in = px + 8 < p.W;
    // After quad_transpose lane t stores 16-byte chunk t (channels 8t .. 8t + 7) of its pixels.
    uint16_t* out_px = static_cast<uint16_t*>(p.out) + ((static_cast<int64_t>(n) * p.H + y0) * p.W + px) * 32 + 8 * t;
    // kStats: per channel (bias's order) Σd, Σd² of d = v − K, K the warp's first value of the
    // channel (lane g = 0's pixel in the tile's first row, shuffled to the quad's lanes).
    float shift_k[8], s1[8], s2[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) shift_k[c] = s1[c] = s2[c] = 0.f;

#pragma unroll 1
    for (int gi = 0; gi < kTH / kG; ++gi) {
      if (y0 + gi * kG >= p.H) break;   // the rest of the tile is below the output
      // The next kernel's CTAs may start once every CTA is in its last group: earlier, they took
      // SMs' spare registers and shared memory while this grid still ran (conv2 ended later with the
      // trigger at this kernel's start).
      if (gi == kTH / kG - 1 && tile + static_cast<int>(gridDim.x) >= p.tiles) allow_dependents_launch();
      float acc[kG][16];                 // output row i of the group: m64n32, 16 fp32 per thread
      uint32_t a0[2][4], a1[2][4];       // A fragments of two input rows (k16 steps 0, 1)
      group_mma<kBF16>(acc, a0, a1, a_lane + gi * kG * kRowWords, b_addr);
      // Epilogue, row by row of the group (rows below the output skipped).
#pragma unroll
      for (int i = 0; i < kG; ++i) {
        const int y = y0 + gi * kG + i;
        if (y >= p.H) break;
        uint32_t lo[4], hi[4];   // pixel g, pixel g + 8: channels 8j + 2t, + 1 in word j
        uint16_t* o = out_px + static_cast<int64_t>(gi * kG + i) * p.W * 32;
        row_epilogue<T, kStats>(p, acc[i], bias, shift_k, s1, s2, lo, hi, o, gi == 0 && i == 0, t, px0_in, px1_in);
      }
    }
    if constexpr (kStats) tile_moments(p, red_s, shift_k, s1, s2, tid, lane, warp, g, t, n, y0, x0);
  }
  if constexpr (kStats) {   // without norm.scale the consumer forms the affine from the sums
    if (p.norm.scale != nullptr) {
      norm_state_finish(p.norm_state, p.N * 32, 32, p.inv_count, p.norm, reinterpret_cast<unsigned*>(smem + kFlagOff),
                        tid, kThreads, [] { __syncthreads(); });
    }
  }
#endif  // STYLEFORGE_SM90A
}

template <typename T, typename In, bool kStats>
cudaError_t launch(const Conv9x9Args& a, cudaStream_t stream, int id) {
  const Params p = make_params(a, kTH, kTW);
  if (p.tiles == 0) return cudaSuccess;
  auto kernel = rgb_sm90_kernel<T, In, kStats>;
  cudaError_t err = allow_smem(kernel, kSmem, id, true);
  int ctas = 0;
  if (err == cudaSuccess) err = resident_ctas(kernel, kThreads, kSmem, id, ctas);
  if (err != cudaSuccess) return err;
  err = launch_pdl(a.pdl, kernel, dim3(static_cast<unsigned>(std::min(p.tiles, ctas))), dim3(kThreads), kSmem,
                   stream, p);
  return err != cudaSuccess ? err : cudaPeekAtLastError();
}

template <bool kStats>
cudaError_t launch_any(const Conv9x9Args& a, cudaStream_t stream, int id) {
  const bool bf16 = a.dtype == ConvDtype::kBFloat16;
  if (a.x_float32) {
    return bf16 ? launch<__nv_bfloat16, float, kStats>(a, stream, id) : launch<__half, float, kStats>(a, stream, id + 1);
  }
  return bf16 ? launch<__nv_bfloat16, uint16_t, kStats>(a, stream, id + 2)
              : launch<__half, uint16_t, kStats>(a, stream, id + 3);
}

}  // namespace

bool conv9x9_sm90_supported(const Conv9x9Args& a) {
  return a.cin == 3 && conv9x9_args_valid(a) && device_runs_sm90a(rgb_sm90_kernel<__nv_bfloat16, float, false>);
}

cudaError_t conv9x9_sm90_launch(const Conv9x9Args& a, cudaStream_t stream) {
  if (!conv9x9_sm90_supported(a)) return cudaErrorInvalidValue;
  // Kernel ids (allow_smem's and resident_ctas's cache slots): 0–3, with statistics 4–7.
  return a.norm_state != nullptr ? launch_any<true>(a, stream, 4) : launch_any<false>(a, stream, 0);
}

bool conv9x9_sm90_is_kernel(const void* func) {
  return is_conv1_instantiation(func, [](auto t, auto in, auto stats) {
    return reinterpret_cast<const void*>(rgb_sm90_kernel<decltype(t), decltype(in), decltype(stats)::value>);
  });
}

}  // namespace styleforge
