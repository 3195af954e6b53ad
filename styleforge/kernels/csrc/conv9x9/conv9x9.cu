// Tensor-core kernels for the style network's two 9×9 convolutions, fp16/bf16 in, fp32 accumulate:
//   conv1   3 → 32 on the image                        (rgb_kernel)
//   deconv3 32 → 3 on IN5's input, IN5 applied on load (head_kernel)
// Both are VALID convolutions, stride 1, over x padded by `pad` (0, or the layer's reflection pad
// of 4, resolved in the staging loops' addressing so no padded copy is ever written); NHWC
// (channels_last) out: (Hp−8)×(Wp−8) with Hp = H + 2·pad. conv1 reads x through any strides and
// in fp32 too (the 0–255 image, rounded to T on load: the engine's pad + cast pass is gone);
// deconv3 reads dense NHWC x and can apply the InstanceNorm before it on load (x·scale + shift,
// ReLU, rounded to T: bit for bit what the norm op would have written), so IN5 costs no pass.
// Pure CUDA (runtime, fp16/bf16 headers, no torch) so CI compile-checks it without a GPU;
// conv9x9_binding.cpp turns tensors into Conv9x9Args. Semantics: styleforge/kernels/reference/conv9x9.py.
//
// Both are implicit GEMMs on warp-level mma.sync.m16n8k16 (row.col, f32 accumulate): a warp's M
// is 16 consecutive output pixels of one row, and A fragments are read straight out of an input
// tile staged in shared memory, with no im2col. Fragment layouts follow the PTX ISA ("Matrix
// Fragments for mma.m16n8k16 with floating point type", also CUTLASS's SM80_16x8x16 traits):
// with g = lane/4 and t = lane%4, A regs {0,1,2,3} hold A[g][2t..2t+1], A[g+8][2t..], A[g][2t+8..],
// A[g+8][2t+8..]; B regs {0,1} hold B[2t..2t+1][g], B[2t+8..2t+9][g]; C holds C[g][2t..2t+1] and
// C[g+8][2t..2t+1]; the lower k (or column) of a pair sits in the low 16 bits.
//
// rgb_kernel (3→32). K is grouped per kernel row ky as k = kx·3 + c (27 values, padded to 32:
// two k-steps). In an NHWC row the 27 values of output pixel p for one ky are the 27 contiguous
// elements starting at element 3p of input row y+ky, so A[m][k] = row[3(p0+m) + k]. For odd
// pixels that start is odd and a pair is not 4-byte aligned, so each staged row is kept twice:
// copy 0 as is, copy 1 shifted by one element; every A register is then one aligned 32-bit
// shared load (copy 1 sits 16 banks away from copy 0, so a warp's loads are conflict-free).
// B (zero for k ≥ 27; A there reads real, finite neighbours) is pre-arranged in shared memory in
// fragment order, one 8-byte load per lane. Block: 8 warps = 2 row groups × 4 column segments,
// each warp 4 rows × 16 pixels × 32 channels (4 n-tiles); the block tile is 8×64 pixels. The
// epilogue stages the tile in shared memory (pixel stride 80 B, conflict-free) and writes each
// pixel's 64 bytes with 16-byte stores.
//
// head_kernel (32→3). K = the 32 input channels of one tap (two k-steps). N = 8 columns hold two
// kernel rows of the 3 output channels: n = 2·co + j is (co, ky = 2G + j) for ky pair G = 0..4
// (n 6, 7 and ky 9 are zeros), so 6 of 8 columns are useful, not 3 (a 3-channel N alone wastes 5/8
// of every mma). The input tile (24×40 pixels × 64 B) is stored with the 16-byte chunks of each
// pixel XOR-swizzled by bits 1..2 of the pixel index, so that ldmatrix.x4 of 16 consecutive
// pixels is conflict-free. An A fragment (input row R, column shift kx, k-step) serves every ky
// pair G through accumulator row r = R − 2G: column j of acc[r] is kernel row 2G + j, i.e. output
// row r − j. So each warp keeps 9 accumulator rows for its 8 output rows, and output row y is
// acc[y] column (co, 0) + acc[y + 1] column (co, 1): both in the same thread (C holds columns 2t,
// 2t + 1), no shuffle. Per (kx, k-step) a warp issues 44 mma instead of 72 (0.61×), with 5 B
// fragments in registers instead of 9. Block: 4 warps = 2 row groups × 2 column segments, tile
// 16×32 output pixels; the weights (90 fragments of (G, kx, k-step), 23 KB) are staged once per
// block, so the grid is persistent.
//
// Weights: both kernels first copy the raw (Cout, Cin, 9, 9) tensor (15,552 B, 16-byte aligned) into
// shared memory that is free at that point with coalesced 16-byte loads, all issued before any is
// used (one memory round trip, not one per dependent 2-byte load), then build the B fragments from it.
//
// conv1's InstanceNorm (IN1) statistics, optionally (rgb_kernel<..., kStats>, conv9x9_norm): each
// tile's epilogue computes per channel the sum and M2 = Σ(v − mean)² (two passes, fp32) of the
// rounded outputs it stores, over its valid pixels, and adds them to the zeroed state's fp64 sums;
// the grid's last block turns the sums into the norm's (scale, shift) and zeroes the state
// (norm_sums.cuh). The no-statistics kernels are separate instantiations, unchanged by this.
//
// Tails: the input tile is zero-filled past the padded input's edge (the head's norm then makes
// those pixels relu(shift)), which feeds only outputs that are not stored, and stores are
// bounds-checked, so any output size ≥ 1 works. Indices are 32-bit (the launcher refuses the
// planes of about 2^31 pixels or elements where they would not be); per-sample bases and products
// with conv1's strides are 64-bit. Not covered: other channel counts (the bindings refuse them and
// the engine keeps cuDNN), fp32 input to the head, conv strides or dilations. Two kernels that
// share the fragment conventions, the staging idioms and the launcher make one file of ~800 lines.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>

#include "conv9x9_common.cuh"
#include "../norm_sums/norm_sums.cuh"
#include "../common/pdl.cuh"
#include "../common/smem_optin.cuh"
#include "../common/warp_sums.cuh"
#include "conv9x9.h"

namespace styleforge {
namespace {

// ---- warp primitives ----------------------------------------------------------------------
// The emulator (dev/kernels/conv9x9/emulator) defines STYLEFORGE_CONV_WARP_EMULATION and its own
// versions of these four with the same semantics, so the rest of this file runs unchanged on a CPU.
#ifndef STYLEFORGE_CONV_WARP_EMULATION
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint2& b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
  }
}

// T's pair (round(relu(lo)), round(relu(hi))), lo in the low half, in one instruction (sm_80+; the
// first source fills the upper half). .relu clamps the converted value to 0 if negative; for finite
// v that is round(relu(v)) because rounding is monotonic and maps 0 to 0: v < 0 rounds to a value
// ≤ 0, clamped to 0, and v ≥ 0 rounds to a value ≥ 0, left alone (overflow: ±inf, then inf or 0,
// both ways). At most the sign of a zero can differ, which changes no mma sum. A NaN stays a NaN
// (the canonical one), as torch.relu keeps it (the fmaxf(NaN, 0) this replaces made it 0).
template <typename T>
__device__ __forceinline__ uint32_t relu_pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.relu.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

// The same pointer, opaque to the optimiser: a per-tile base then stays one register and each
// staged address is one IMAD.WIDE off it, instead of the base's terms being folded into every
// address's 64-bit arithmetic.
template <typename P>
__device__ __forceinline__ P* opaque(P* ptr) {
  asm("" : "+l"(ptr));
  return ptr;
}
#endif

// x·scale + shift rounded twice, as the twin (and PyTorch) computes it: no FMA contraction, so the
// value rounded to T is the twin's bit for bit.
__device__ __forceinline__ float affine(float x, float scale, float shift) {
  return __fadd_rn(__fmul_rn(x, scale), shift);
}

template <typename Out> __device__ __forceinline__ void store_one(Out* p, float v);
template <> __device__ __forceinline__ void store_one<float>(float* p, float v) { *p = v; }
template <> __device__ __forceinline__ void store_one<__half>(__half* p, float v) {
  *reinterpret_cast<uint16_t*>(p) = to_bits<__half>(v);
}
template <> __device__ __forceinline__ void store_one<__nv_bfloat16>(__nv_bfloat16* p, float v) {
  *reinterpret_cast<uint16_t*>(p) = to_bits<__nv_bfloat16>(v);
}
// The head's output value: evict-first (cache_hints.cuh) where kEvictFirst, for the float output.
template <bool kEvictFirst, typename Out>
__device__ __forceinline__ void store_head(Out* p, float v, uint64_t policy) {
  if constexpr (kEvictFirst && std::is_same_v<Out, float>) {
    st_evict_first(p, v, policy);
  } else {
    store_one<Out>(p, v);
  }
}

// The raw weight tensor (Cout·Cin·81 16-bit values, 15,552 B for either layer), or kChunks 16-byte
// chunks of a packed one, copied to dst with kThreads threads: every 16-byte load issued before the first store, so one memory latency. The
// loads past the end re-read the last chunk rather than being predicated off: with one predicate
// per load ptxas issued the head's eighth load only after the first store.
template <int kThreads, int kChunks = kWeightChunks>
__device__ __forceinline__ void stage_weight(const uint16_t* weight, uint4* dst) {
  constexpr int kPer = (kChunks + kThreads - 1) / kThreads;
  const uint4* src = reinterpret_cast<const uint4*>(weight);
  const int tid = static_cast<int>(threadIdx.x);
  uint4 v[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) v[k] = __ldg(src + imin(tid + k * kThreads, kChunks - 1));
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    if (tid + k * kThreads < kChunks) dst[tid + k * kThreads] = v[k];
  }
}

// ---- rgb_kernel: 3 → 32 -------------------------------------------------------------------

constexpr int kRgbThreads = 256;
constexpr int kRgbTH = 8, kRgbTW = 64;                 // output tile
constexpr int kRgbRows = kRgbTH + 8;                   // staged input rows
constexpr int kRgbCopy = 224;                          // elements per copy: ≥ 3·63 + 32, and 112 words ≡ 16 (mod 32)
constexpr int kRgbLoad = kRgbCopy + 1;                 // copy 1 needs one element past copy 0
static_assert(kRgbLoad <= kRgbThreads, "one staged column per thread");
constexpr int kRgbSlots = 9 * 2 * 4;                   // B fragments: ky × k-step × n-tile
constexpr int kRgbStage = 40;                          // staged output pixel stride (elements), 80 B
constexpr size_t kRgbInBytes = size_t(kRgbRows) * 2 * kRgbCopy * 2;
constexpr size_t kRgbWBytes = size_t(kRgbSlots) * 32 * 8;
constexpr size_t kRgbStBytes = size_t(kRgbTH) * kRgbTW * kRgbStage * 2;
static_assert(kRgbStBytes >= kWeightChunks * 16, "the raw weight is staged where the output is later");
constexpr size_t kRgbSmem = kRgbInBytes + kRgbWBytes + kRgbStBytes;
// kStats only: red [8 warps][32 channels], mean [32], the hand-off's flag word.
constexpr size_t kRgbStatBytes = (8 * 32 + 32 + 4) * 4;

// ---- rgb_kernel's pieces -----------------------------------------------------------------
// rgb_kernel is: prologue (rgb_build_b), per tile rgb_stage_tile, the main loop (inline: as a
// function its accumulators' phis were numbered in another order and ptxas's output changed),
// rgb_round_and_stage, the statistics' two passes (inline), rgb_store_tile, the atomics.

// B[k][n] = W[n][c][ky][kx] with k = 3·kx + c (< 27), else 0, in fragment order w_s
// [ky][k-step][n-tile][lane] (one 8-byte load per lane), from the raw weight staged in st_s (free
// until the first epilogue, which the tile loop's first barrier orders after these reads).
__device__ __forceinline__ void rgb_build_b(const Params& p, uint2* w_s, uint16_t* st_s) {
  stage_weight<kRgbThreads>(p.weight, reinterpret_cast<uint4*>(st_s));
  __syncthreads();
  for (int i = threadIdx.x; i < kRgbSlots * 32; i += kRgbThreads) {
    const int lane = i & 31, slot = i >> 5;
    const int nt = slot & 3, ks = (slot >> 2) & 1, ky = slot >> 3;
    const int n = nt * 8 + (lane >> 2), k0 = ks * 16 + (lane & 3) * 2;
    uint16_t v[4];
    const int ks4[4] = {k0, k0 + 1, k0 + 8, k0 + 9};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int k = ks4[j];
      v[j] = k < 27 ? st_s[((n * 3 + k % 3) * 9 + ky) * 9 + k / 3] : uint16_t(0);
    }
    w_s[i] = make_uint2(pack2(v[0], v[1]), pack2(v[2], v[3]));
  }
}

// Staging of one tile by thread sj < kRgbLoad: element sj of each of the kRgbRows padded input rows,
// channel sj_c = sj % 3 of padded column px = x0 + sj / 3, rounded to T, into both copies of in_s
// [row][copy][kRgbCopy] (copy 1 at sj − 1). The column's address is worked out once, each row adds
// one stride; all kRgbRows loads (into raw) are issued before the first is used: one memory latency
// per tile.
template <typename T, typename In>
__device__ __forceinline__ void rgb_stage_tile(const Params& p, In (&raw)[kRgbRows], const In* x, uint16_t* in_s,
                                               int n, int y0, int px, int sj, int sj_c, uint64_t policy) {
  const bool col_in = px < p.Wp;
  const In* xc = x + static_cast<int64_t>(n) * p.sn + static_cast<int64_t>(sj_c) * p.sc +
                 static_cast<int64_t>(reflect((col_in ? px : p.pad) - p.pad, 2 * (p.Win - 1))) * p.sw;
  with_load_hint(p, [&](auto hint) {
#pragma unroll
    for (int r = 0; r < kRgbRows; ++r) {
      const int y = y0 + r;
      const In* src = xc + static_cast<int64_t>(reflect(y - p.pad, 2 * (p.Hin - 1))) * p.sh;
      raw[r] = col_in && y < p.Hp ? load_hinted<decltype(hint)::value>(src, policy) : In(0);
    }
  });
#pragma unroll
  for (int r = 0; r < kRgbRows; ++r) {
    const uint16_t v = as_bits<T>(raw[r]);
    if (sj < kRgbCopy) in_s[(r * 2) * kRgbCopy + sj] = v;
    if (sj > 0) in_s[(r * 2 + 1) * kRgbCopy + sj - 1] = v;
  }
}

// Epilogue, first part: acc + bias rounded to T and staged [pixel][channel] (pixel stride
// kRgbStage) through st_lane, this lane's word for (row 0, pixel cs + g, channel 2t): the words it
// writes are st_lane + compile-time offsets. kStats: acc takes the rounded values (what the
// statistics must see).
template <typename T, bool kStats>
__device__ __forceinline__ void rgb_round_and_stage(const Params& p, float (&acc)[4][4][4], uint32_t* st_lane, int t) {
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int ch = nt * 8 + t * 2;
    const float b0 = p.bias ? p.bias[ch] : 0.f, b1 = p.bias ? p.bias[ch + 1] : 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t lo = styleforge::pack2<T>(acc[i][nt][0] + b0, acc[i][nt][1] + b1);
      const uint32_t hi = styleforge::pack2<T>(acc[i][nt][2] + b0, acc[i][nt][3] + b1);
      st_lane[(i * kRgbTW * kRgbStage + nt * 8) / 2] = lo;
      st_lane[((i * kRgbTW + 8) * kRgbStage + nt * 8) / 2] = hi;
      if constexpr (kStats) {   // the statistics see the stored values
        unpack2<T>(lo, acc[i][nt][0], acc[i][nt][1]);
        unpack2<T>(hi, acc[i][nt][2], acc[i][nt][3]);
      }
    }
  }
}

// Epilogue, stores: the staged tile (sample n, origin y0, x0) to NHWC out, a 16-byte chunk (8
// channels) per thread and step, whole pixels inside the output only.
__device__ __forceinline__ void rgb_store_tile(const Params& p, const uint16_t* st_s, int n, int y0, int x0) {
  uint16_t* out = static_cast<uint16_t*>(p.out);
  for (int i = threadIdx.x; i < kRgbTH * kRgbTW * 4; i += kRgbThreads) {
    const int q = i & 3, pix = i >> 2, r = pix / kRgbTW, c = pix - r * kRgbTW;
    const int y = y0 + r, xx = x0 + c;
    if (y < p.H && xx < p.W) {
      uint4* o = reinterpret_cast<uint4*>(out + ((static_cast<int64_t>(n) * p.H + y) * p.W + xx) * 32 + q * 8);
      const uint4 v = *reinterpret_cast<const uint4*>(st_s + pix * kRgbStage + q * 8);
      if (p.l2_evict_first) {
        st_evict_first(o, v, evict_first_policy());
      } else {
        *o = v;
      }
    }
  }
}

template <typename T, typename In, bool kStats>
__global__ void __launch_bounds__(kRgbThreads, 2) rgb_kernel(Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* in_s = reinterpret_cast<uint16_t*>(smem);                  // [row][copy][kRgbCopy]
  uint2* w_s = reinterpret_cast<uint2*>(smem + kRgbInBytes);           // [ky][ks][nt][lane]
  uint16_t* st_s = reinterpret_cast<uint16_t*>(smem + kRgbInBytes + kRgbWBytes);  // [pixel][kRgbStage]
  float* red_s = reinterpret_cast<float*>(smem + kRgbSmem);           // kStats: [warp][channel]
  float* mean_s = red_s + 8 * 32;

  rgb_build_b(p, w_s, st_s);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wr0 = (warp >> 2) * 4, cs = (warp & 3) * 16;   // this warp's rows and columns in the tile
  // Word offset of this lane's A pair inside a staged row: pixel cs + g, k = 2t. The pixel's
  // parity is g's (cs is even); odd pixels read copy 1, which starts one element later.
  const int e0 = (cs + g) * 3 + t * 2;
  const int a_word = (g & 1) ? kRgbCopy / 2 + (e0 - 1) / 2 : e0 / 2;
  constexpr int kRowWords = kRgbCopy;                      // two copies of kRgbCopy 16-bit elements
  const uint32_t* a_base = reinterpret_cast<const uint32_t*>(in_s) + wr0 * kRowWords + a_word;
  const In* x = static_cast<const In*>(p.x);
  allow_dependents_launch();
  grid_dependency_wait();   // x comes from the kernel before this one (the weights did not)
  // Staging: thread j < kRgbLoad stages element j of every staged row, i.e. channel j % 3 of padded
  // pixel x0 + j / 3 (the NHWC order of K), so the column's address is worked out once per tile and
  // each row adds one stride; the row's two copies take it at j and j − 1.
  const int sj = threadIdx.x, sj_px = sj / 3, sj_c = sj - 3 * sj_px;
  const uint64_t policy = evict_first_policy();   // (load_hinted: where Params::l2_evict_first)

  for (int tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    int n, y0, x0;
    tile_origin(p, tile, kRgbTH, kRgbTW, n, y0, x0);
    __syncthreads();   // the previous tile's readers of in_s and st_s are done
    if (sj < kRgbLoad) {
      In raw[kRgbRows];
      rgb_stage_tile<T>(p, raw, x, in_s, n, y0, x0 + sj_px, sj, sj_c, policy);
    }
    __syncthreads();

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[i][nt][c] = 0.f;

#pragma unroll 1
    for (int ky = 0; ky < 9; ++ky) {
#pragma unroll 1
      for (int ks = 0; ks < 2; ++ks) {
        uint2 b[4];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) b[nt] = w_s[((ky * 2 + ks) * 4 + nt) * 32 + lane];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t* base = a_base + (i + ky) * kRowWords + ks * 8;
          // +12 words = pixel + 8 (24 elements), +4 words = k + 8.
          const uint32_t a[4] = {base[0], base[12], base[4], base[16]};
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) mma_16816<T>(acc[i][nt], a, b[nt]);
        }
      }
    }

    // Epilogue: + bias, round, stage [pixel][channel], then 16-byte stores of whole pixels. The
    // words this thread writes are st_lane + compile-time offsets (one register, not 32 addresses
    // kept live across the tile loop).
    uint32_t* st_lane = reinterpret_cast<uint32_t*>(st_s) + ((wr0 * kRgbTW + cs + g) * kRgbStage + t * 2) / 2;
    rgb_round_and_stage<T, kStats>(p, acc, st_lane, t);
    // kStats: this thread's pixels inside the output (rows wr0 + i; columns cs + g and cs + g + 8).
    bool row_in[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) row_in[i] = y0 + wr0 + i < p.H;
    const bool col0_in = x0 + cs + g < p.W, col1_in = x0 + cs + g + 8 < p.W;
    const float count = static_cast<float>(imin(kRgbTH, p.H - y0) * imin(kRgbTW, p.W - x0));
    // The channel of lane (g, t) after sum_over_g: v[g] = channel 8·(g / 2) + 2t + g % 2.
    const int my_ch = (g >> 1) * 8 + 2 * t + (g & 1);
    if constexpr (kStats) {
      float v[8];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          float s = 0.f;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            s += (row_in[i] && col0_in ? acc[i][nt][j] : 0.f) + (row_in[i] && col1_in ? acc[i][nt][2 + j] : 0.f);
          }
          v[2 * nt + j] = s;
        }
      sum_over_g(v, lane);
      red_s[warp * 32 + my_ch] = v[0];
    }
    __syncthreads();
    float tile_sum = 0.f;
    if constexpr (kStats) {
      if (threadIdx.x < 32) {
#pragma unroll
        for (int w = 0; w < 8; ++w) tile_sum += red_s[w * 32 + threadIdx.x];
        mean_s[threadIdx.x] = tile_sum / count;
      }
      __syncthreads();
      // The second pass, M2 about the tile's mean: fp32 Σ(v − mean)², not Σv² − sum²/count. Before
      // the stores, so that the accumulators are dead while the store loop runs.
      float v[8];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const float2 m = *reinterpret_cast<const float2*>(mean_s + nt * 8 + 2 * t);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float mj = j ? m.y : m.x;
          float s = 0.f;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float d0 = row_in[i] && col0_in ? acc[i][nt][j] - mj : 0.f;
            const float d1 = row_in[i] && col1_in ? acc[i][nt][2 + j] - mj : 0.f;
            s += d0 * d0 + d1 * d1;
          }
          v[2 * nt + j] = s;
        }
      }
      sum_over_g(v, lane);
      red_s[warp * 32 + my_ch] = v[0];
      __syncthreads();
    }
    rgb_store_tile(p, st_s, n, y0, x0);
    // The atomics after the stores, so that they do not hold them up.
    if (kStats && threadIdx.x < 32) {
      float m2 = 0.f;
#pragma unroll
      for (int w = 0; w < 8; ++w) m2 += red_s[w * 32 + threadIdx.x];
      norm_state_add(p.norm_state, p.N * 32, n, 32, static_cast<int>(threadIdx.x), tile_sum, m2, count);
    }
  }
  if constexpr (kStats) {   // without norm.scale the consumer forms the affine from the sums
    if (p.norm.scale != nullptr) {
      norm_state_finish(p.norm_state, p.N * 32, 32, p.inv_count, p.norm, reinterpret_cast<unsigned*>(mean_s + 32),
                        static_cast<int>(threadIdx.x), kRgbThreads, [] { __syncthreads(); });
    }
  }
}

// ---- head_kernel: 32 → 3 ------------------------------------------------------------------

constexpr int kHeadThreads = 128;
constexpr int kHeadTH = 16, kHeadTW = 32;              // output tile
constexpr int kHeadRW = 8;                             // output rows per warp (kHeadRW + 1 accumulator rows)
constexpr int kHeadRows = kHeadTH + 8, kHeadCols = kHeadTW + 8;
constexpr int kHeadPairs = 5;                          // ky pairs (0,1) (2,3) (4,5) (6,7) (8,-)
constexpr int kHeadSlots = kHeadPairs * 9 * 2;         // B fragments: ky pair × kx × k-step
constexpr int kHeadPerThread = kHeadRows * kHeadCols * 4 / kHeadThreads;   // staged 16-byte chunks
constexpr int kHeadBatch = 10;                                              // loads in flight
static_assert(kHeadRows * kHeadCols * 4 % kHeadThreads == 0 && kHeadPerThread % kHeadBatch == 0,
              "the staging loop covers the tile exactly");
constexpr size_t kHeadInBytes = size_t(kHeadRows) * kHeadCols * 64;
constexpr size_t kHeadWBytes = size_t(kHeadSlots) * 32 * 8;
// + the prologue norm's affine from sums (scale [32], shift [32]) and a flag word.
constexpr size_t kHeadSmem = kHeadInBytes + kHeadWBytes + 2 * 32 * 4 + 16;

// Byte offset of 16-byte chunk q (channels 8q..8q+7) of tile pixel P: any 8 consecutive pixels
// of one chunk land in 8 distinct 16-byte bank groups.
__device__ __forceinline__ int head_chunk_offset(int P, int q) { return P * 64 + ((q ^ ((P >> 1) & 3)) << 4); }

// ---- head_kernel's pieces -----------------------------------------------------------------
// head_kernel is: prologue (B fragments, inline), per tile the norm (head_affine_from_sums once per
// sample), head_stage_tile, the main loop (inline), head_store. The B gather and the main loop stay
// in the kernel, as in rgb_kernel: as functions they compiled to other machine code
// (docs/kernels/conv9x9.md, "Code structure").

// The prologue norm of sample n from the producer's sums into aff_s (scale [32], shift [32]):
// kG threads per channel (tid / kG), kPer of the kNormSumCopies copies each, summed through
// shuffles.
template <int kG, int kPer>
__device__ __forceinline__ void head_affine_from_sums(const Params& p, float* aff_s, int n) {
  const int c = threadIdx.x / kG, grp = threadIdx.x % kG;
  double s1 = 0.0, s2 = 0.0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const double* copy = p.in_sums + static_cast<size_t>(2 * (grp * kPer + k)) * p.N * 32 + n * 32 + c;
    s1 += __ldcg(copy);
    s2 += __ldcg(copy + p.N * 32);
  }
#pragma unroll
  for (int o = 1; o < kG; o <<= 1) {
    s1 += __shfl_xor_sync(0xffffffffu, s1, o);
    s2 += __shfl_xor_sync(0xffffffffu, s2, o);
  }
  if (grp == 0) {
    norm_affine_from_sums(s1, s2, p.in_inv_count, p.in_gamma ? p.in_gamma[c] : 1.f, p.in_beta ? p.in_beta[c] : 0.f,
                          p.in_eps, aff_s[c], aff_s[32 + c]);
  }
}

// Staging of one tile: this thread's kHeadPerThread 16-byte chunks (chunk q of tile pixels P0, P0 +
// 32, ...) from sample n's pixels xn, reflected at y_last / x_last and zero past the padded input's
// end (y_end, x_end), walked from padded-input pixel (ys, xs) by 32 columns (wrapping at xs_wrap),
// normed where `normed` (x' = round(relu(x·scale + shift)) with this thread's 8 channels' nscale,
// nshift), to st_chunk + 32 pixels per step. In batches whose loads are all issued before the first
// is used (one memory latency per batch, not per chunk); the loads' L2 hint chosen once.
template <typename T>
__device__ __forceinline__ void head_stage_tile(const Params& p, const float (&nscale)[8], const float (&nshift)[8],
                                                bool normed, const unsigned char* xn, unsigned char* st_chunk, int ys,
                                                int xs, int xs_wrap, int y_last, int x_last, int y_end, int x_end,
                                                uint64_t policy) {
  constexpr int kStepBytes = 32 * 64;
  with_load_hint(p, [&](auto hint) {
#pragma unroll 1
    for (int b = 0; b < kHeadPerThread; b += kHeadBatch) {
      uint4 raw[kHeadBatch];
#pragma unroll
      for (int k = 0; k < kHeadBatch; ++k) {
        const int pix = reflect(ys, y_last) * p.Win + reflect(xs, x_last);
        const uint4* src = reinterpret_cast<const uint4*>(xn + pix * 64LL);
        raw[k] = ys < y_end && xs < x_end ? load_hinted<decltype(hint)::value>(src, policy) : make_uint4(0, 0, 0, 0);
        xs += 32;
        if (xs >= xs_wrap) {
          xs -= kHeadCols;
          ++ys;
        }
      }
#pragma unroll
      for (int k = 0; k < kHeadBatch; ++k) {
        uint4 v = raw[k];
        // Past the padded input x is 0 and x' = relu(shift), finite: those pixels feed only outputs
        // that are not stored.
        if (normed) {
          uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int h = 0; h < 4; ++h) {
            float lo, hi;
            unpack2<T>(w[h], lo, hi);
            w[h] = relu_pack2<T>(affine(lo, nscale[2 * h], nshift[2 * h]),
                                 affine(hi, nscale[2 * h + 1], nshift[2 * h + 1]));
          }
          v = make_uint4(w[0], w[1], w[2], w[3]);
        }
        *reinterpret_cast<uint4*>(st_chunk + (b + k) * kStepBytes) = v;
      }
    }
  });
}

// Epilogue (lanes t < 3): output channel co = t of the lane's 16 outputs, two columns (col0, col1:
// inside the output) of kHeadRW rows from y_first, one image row (row_step elements) apart, from
// o_first. Output row y_first + i is acc[i] column (t, 0) + acc[i + 1] column (t, 1) + bias. The
// column tests once, the row test per row, the pointer stepped (one address per store, with its
// branch region, was most of this loop's instructions). One loop per store kind: the float output's
// evict-first (cache_hints.cuh) chosen once. (o_first and the tests are formed in the kernel: formed
// here, the 64-bit address compiled to other instructions.)
template <typename Out>
__device__ __forceinline__ void head_store(const Params& p, const float (&acc)[kHeadRW + 1][4], Out* const o_first,
                                           int64_t row_step, int y_first, bool col0, bool col1, float bias,
                                           uint64_t policy) {
  auto store_rows = [&](auto evict_first) {
    Out* o = o_first;
#pragma unroll
    for (int i = 0; i < kHeadRW; ++i) {
      if (y_first + i < p.H) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float v = acc[i][half * 2] + acc[i + 1][half * 2 + 1] + bias;
          if (half == 0 ? col0 : col1) {
            store_head<decltype(evict_first)::value>(o + half * 24, v, policy);
          }
        }
      }
      o += row_step;
    }
  };
  if constexpr (std::is_same_v<Out, float>) {   // the frame's output
    if (p.l2_evict_first) {
      store_rows(std::true_type{});
    } else {
      store_rows(std::false_type{});
    }
  } else {
    store_rows(std::false_type{});
  }
}

template <typename T, typename Out>
__global__ void __launch_bounds__(kHeadThreads, 2) head_kernel(Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* in_s = smem;                                          // swizzled [pixel][4 chunks]
  uint2* w_s = reinterpret_cast<uint2*>(smem + kHeadInBytes);          // [G][kx][ks][lane]

  // B[k][n] = W[co][16·ks + k][2G + j][kx] for n = 2·co + j < 6 and 2G + j < 9, else 0: copied as
  // made once (Params::weight_b, reference_conv.pack_head_weight), or gathered here from the raw
  // weight staged in in_s (the tile loop's first barrier orders these reads before the staging).
  const bool packed = p.weight_b != nullptr;   // uniform
  if (packed) {
    stage_weight<kHeadThreads, static_cast<int>(kHeadWBytes / 16)>(p.weight_b, reinterpret_cast<uint4*>(w_s));
  } else {
    stage_weight<kHeadThreads>(p.weight, reinterpret_cast<uint4*>(in_s));
  }
  __syncthreads();
  const uint16_t* w_raw = reinterpret_cast<const uint16_t*>(in_s);
  for (int i = packed ? kHeadSlots * 32 : static_cast<int>(threadIdx.x); i < kHeadSlots * 32; i += kHeadThreads) {
    const int lane = i & 31, slot = i >> 5;
    const int ks = slot & 1, kx = (slot >> 1) % 9, G = (slot >> 1) / 9;
    const int n = lane >> 2, co = n >> 1, ky = 2 * G + (n & 1), c0 = ks * 16 + (lane & 3) * 2;
    uint16_t v[4] = {0, 0, 0, 0};
    if (n < 6 && ky < 9) {
      const int cs4[4] = {c0, c0 + 1, c0 + 8, c0 + 9};
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = w_raw[(co * 32 + cs4[e]) * 81 + ky * 9 + kx];
    }
    w_s[i] = make_uint2(pack2(v[0], v[1]), pack2(v[2], v[3]));
  }

  float* aff_s = reinterpret_cast<float*>(smem + kHeadInBytes + kHeadWBytes);   // scale [32], shift [32]
  unsigned* flag_s = reinterpret_cast<unsigned*>(aff_s + 64);
  allow_dependents_launch();
  grid_dependency_wait();   // x and its norm come from the kernels before this one (the weights did not)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wr0 = (warp >> 1) * kHeadRW, cs = (warp & 1) * 16;
  // The prologue norm from sums: kG threads per channel (tid / kG), kPer copies each, summed through
  // shuffles; formed once per sample this block meets. Its last tile's sample is its last read of the
  // sums, after which thread 0 counts the block (ticket, checked at the end).
  constexpr int kG = kHeadThreads / 32, kPer = kNormSumCopies / kG;
  static_assert(kG * 32 == kHeadThreads && kPer * kG == kNormSumCopies, "sums layout");
  const int last_tile = blockIdx.x + (p.tiles - 1 - static_cast<int>(blockIdx.x)) / gridDim.x * gridDim.x;
  const int last_n = last_tile / (p.tiles_x * p.tiles_y);
  int aff_n = -1;
  unsigned ticket = 0;
  // ldmatrix.x4: lanes 0–7 address pixels 0–7 at k 0–7 (→ a[0]), 8–15 pixels 8–15 (→ a[1]),
  // 16–23 pixels 0–7 at k 8–15 (→ a[2]), 24–31 pixels 8–15 at k 8–15 (→ a[3]).
  const int lrow = lane & 15, lhalf = lane >> 4;
  // Staging: chunk q of tile pixels P0, P0 + 32, P0 + 64, ... (the loop strides by kHeadThreads
  // chunks = 32 pixels). 32 ≡ 0 (mod 8), so every one has P0's swizzle and its shared address steps
  // by 32 pixels; (row, column) steps by 32 columns with at most one wrap (kHeadCols > 32).
  static_assert(kHeadThreads == 128 && kHeadCols > 32 && kHeadCols <= 64, "the staging walk below");
  const int q = threadIdx.x & 3, P0 = threadIdx.x >> 2;
  unsigned char* st_chunk = in_s + head_chunk_offset(P0, q);
  const int y_last = 2 * (p.Hin - 1), x_last = 2 * (p.Win - 1);
  const int y_end = p.Hin + p.pad, x_end = p.Win + p.pad;   // the padded input's end, in x's coordinates

  for (int tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    int n, y0, x0;
    tile_origin(p, tile, kHeadTH, kHeadTW, n, y0, x0);
    // The prologue norm of this thread's 8 channels (8q .. 8q + 7) in sample n.
    float nscale[8], nshift[8];
    if (p.scale != nullptr) {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        nscale[e] = p.scale[n * 32 + 8 * q + e];
        nshift[e] = p.shift[n * 32 + 8 * q + e];
      }
    }
    const bool refresh = p.in_sums != nullptr && n != aff_n;   // uniform
    if (refresh) {
      head_affine_from_sums<kG, kPer>(p, aff_s, n);
      aff_n = n;
    }
    __syncthreads();   // the previous tile's ldmatrix reads are done (and aff_s is written)
    if (p.in_sums != nullptr) {
      // Every thread's loads of the sums have returned (the barrier): the block's last read counts.
      if (refresh && n == last_n && threadIdx.x == 0) ticket = atomicAdd(p.in_counter, 1u);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        nscale[e] = aff_s[8 * q + e];
        nshift[e] = aff_s[32 + 8 * q + e];
      }
    }
    const bool normed = p.scale != nullptr || p.in_sums != nullptr;
    // Chunk q of sample n's pixels (64 B each): a 64-bit base per tile, 32-bit pixel indices.
    const unsigned char* xn =
        opaque(static_cast<const unsigned char*>(p.x) + (static_cast<int64_t>(n) * p.Hin * p.Win) * 64 + q * 16);
    // The padded-input pixel this thread stages next, in x's coordinates (padded minus pad).
    int ys = y0 - p.pad, xs = x0 + P0 - p.pad;
    const int xs_wrap = x0 + kHeadCols - p.pad;
    const uint64_t policy = evict_first_policy();   // (cache_hints.cuh: where Params::l2_evict_first)
    head_stage_tile<T>(p, nscale, nshift, normed, xn, st_chunk, ys, xs, xs_wrap, y_last, x_last, y_end, x_end, policy);
    __syncthreads();

    float acc[kHeadRW + 1][4];   // accumulator row r: column j belongs to output row wr0 + r − j
#pragma unroll
    for (int i = 0; i <= kHeadRW; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][c] = 0.f;

#pragma unroll 1
    for (int kx = 0; kx < 9; ++kx) {
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        uint2 b[kHeadPairs];
#pragma unroll
        for (int G = 0; G < kHeadPairs; ++G) b[G] = w_s[((G * 9 + kx) * 2 + ks) * 32 + lane];
        const int q = ks * 2 + lhalf;
#pragma unroll
        for (int R = 0; R < kHeadRW + 8; ++R) {          // input row wr0 + R of the tile
          uint32_t a[4];
          ldmatrix_x4(a, in_s + head_chunk_offset((wr0 + R) * kHeadCols + cs + kx + lrow, q));
#pragma unroll
          for (int G = 0; G < kHeadPairs; ++G) {         // kernel rows 2G, 2G + 1 → accumulator row R − 2G
            const int r = R - 2 * G;
            // acc[kHeadRW] only needs column j = 1 (output row kHeadRW − 1): ky 9 is zero, so G = 4 adds nothing.
            if (r >= 0 && r <= kHeadRW && !(r == kHeadRW && G == kHeadPairs - 1)) mma_16816<T>(acc[r], a, b[G]);
          }
        }
      }
    }

    // C[m][n]: m = pixel cs + g (+8), n = 2t (kernel rows 2G) and 2t + 1 (rows 2G + 1) of channel
    // co = t; lanes t = 3 hold the zero columns.
    if (t < 3) {
      const float bias = p.bias ? p.bias[t] : 0.f;
      const int y_first = y0 + wr0, x_first = x0 + cs + g;
      const bool col0 = x_first < p.W, col1 = x_first + 8 < p.W;
      Out* const o_first = static_cast<Out*>(p.out) + ((static_cast<int64_t>(n) * p.H + y_first) * p.W + x_first) * 3 + t;
      const int64_t row_step = static_cast<int64_t>(p.W) * 3;
      head_store<Out>(p, acc, o_first, row_step, y_first, col0, col1, bias, policy);
    }
  }
  if (p.in_counter != nullptr) {   // the prologue norm's sums: the block that counted last clears them
    norm_state_release(p.in_counter, p.N * 32, ticket, flag_s, static_cast<int>(threadIdx.x), kHeadThreads,
                       [] { __syncthreads(); });
  }
}

// ---- host -----------------------------------------------------------------------------------


// Whether the kernels' 32-bit indices hold: sizes, the tile count, N·32 (the norm vectors), the
// head's in-plane pixel index H·W and conv1's strides but the sample's. Only planes of about 2^31
// pixels or elements fail.
bool fits_int32(const Conv9x9Args& a) {
  constexpr int64_t kMax = INT32_MAX;
  const bool head = a.cin == 32;
  const int64_t hp = a.H + 2 * a.pad, wp = a.W + 2 * a.pad, th = head ? kHeadTH : kRgbTH, tw = head ? kHeadTW : kRgbTW;
  if (hp >= kMax / 2 || wp >= kMax / 2 || a.N * 32 > kMax) return false;
  const int64_t tiles = a.N * ((hp - 8 + th - 1) / th) * ((wp - 8 + tw - 1) / tw);
  if (head) return tiles <= kMax && a.H * a.W <= kMax;
  auto stride_ok = [](int64_t s) { return s >= 0 && s <= kMax; };
  return tiles <= kMax && stride_ok(a.stride_c) && stride_ok(a.stride_h) && stride_ok(a.stride_w);
}

unsigned grid_for(int tiles, int num_sms) {
  return static_cast<unsigned>(std::min(tiles, 2 * std::max(num_sms, 1)));   // 2 blocks per SM
}

template <typename T, typename In, bool kStats>
cudaError_t launch_rgb(const Conv9x9Args& a, cudaStream_t stream, int id) {
  const Params p = make_params(a, kRgbTH, kRgbTW);
  if (p.tiles == 0) return cudaSuccess;
  const size_t smem = kRgbSmem + (kStats ? kRgbStatBytes : 0);
  const cudaError_t err = allow_smem(rgb_kernel<T, In, kStats>, smem, id);
  if (err != cudaSuccess) return err;
  if (a.pdl) {
    const cudaError_t launched = launch_pdl(true, rgb_kernel<T, In, kStats>, dim3(grid_for(p.tiles, a.num_sms)),
                                            dim3(kRgbThreads), smem, stream, p);
    if (launched != cudaSuccess) return launched;
  } else {
    rgb_kernel<T, In, kStats><<<grid_for(p.tiles, a.num_sms), kRgbThreads, smem, stream>>>(p);
  }
  return cudaPeekAtLastError();
}

template <bool kStats>
cudaError_t launch_rgb_any(const Conv9x9Args& a, cudaStream_t stream, int id) {
  const bool bf16 = a.dtype == ConvDtype::kBFloat16;
  if (a.x_float32) {
    return bf16 ? launch_rgb<__nv_bfloat16, float, kStats>(a, stream, id)
                : launch_rgb<__half, float, kStats>(a, stream, id + 1);
  }
  return bf16 ? launch_rgb<__nv_bfloat16, uint16_t, kStats>(a, stream, id + 2)
              : launch_rgb<__half, uint16_t, kStats>(a, stream, id + 3);
}

template <typename T, typename Out>
cudaError_t launch_head(const Conv9x9Args& a, cudaStream_t stream, int id) {
  const Params p = make_params(a, kHeadTH, kHeadTW);
  if (p.tiles == 0) return cudaSuccess;
  const cudaError_t err = allow_smem(head_kernel<T, Out>, kHeadSmem, id);
  if (err != cudaSuccess) return err;
  if (a.pdl) {   // (the plain launch is also the one the CPU emulator rewrites)
    const cudaError_t launched = launch_pdl(true, head_kernel<T, Out>, dim3(grid_for(p.tiles, a.num_sms)),
                                            dim3(kHeadThreads), kHeadSmem, stream, p);
    if (launched != cudaSuccess) return launched;
  } else {
    head_kernel<T, Out><<<grid_for(p.tiles, a.num_sms), kHeadThreads, kHeadSmem, stream>>>(p);
  }
  return cudaPeekAtLastError();
}

}  // namespace

bool conv9x9_supported(int cin, int cout, bool out_float32) {
  return (cin == 3 && cout == 32 && !out_float32) || (cin == 32 && cout == 3);
}

bool conv9x9_args_valid(const Conv9x9Args& a) {
  const bool head = a.cin == 32;
  const bool stats = a.norm_state != nullptr;   // IN1's sums; with norm.scale also its affine
  return conv9x9_supported(a.cin, a.cout, a.out_float32) && (a.pad == 0 || a.pad == 4) && a.H > a.pad &&
         a.W > a.pad && a.H + 2 * a.pad >= 9 && a.W + 2 * a.pad >= 9 && a.N >= 0 &&
         (a.scale == nullptr) == (a.shift == nullptr) && (a.scale == nullptr || head) && !(a.x_float32 && head) &&
         (a.in_state == nullptr || (head && a.scale == nullptr)) && reinterpret_cast<uintptr_t>(a.weight) % 16 == 0 &&
         (a.norm.scale == nullptr) == (a.norm.shift == nullptr) && (a.norm.scale == nullptr || stats) &&
         !(stats && head) && fits_int32(a);
}

cudaError_t conv9x9_launch(const Conv9x9Args& a, cudaStream_t stream) {
  if (!conv9x9_args_valid(a)) return cudaErrorInvalidValue;
  const bool head = a.cin == 32;
  const bool stats = a.norm_state != nullptr;
  const bool bf16 = a.dtype == ConvDtype::kBFloat16;
  // Kernel ids (allow_smem's cache slots): rgb 0–3, head 4–7, rgb with statistics 8–11.
  if (!head) return stats ? launch_rgb_any<true>(a, stream, 8) : launch_rgb_any<false>(a, stream, 0);
  if (a.out_float32) {
    return bf16 ? launch_head<__nv_bfloat16, float>(a, stream, 4) : launch_head<__half, float>(a, stream, 5);
  }
  return bf16 ? launch_head<__nv_bfloat16, __nv_bfloat16>(a, stream, 6) : launch_head<__half, __half>(a, stream, 7);
}

Conv9x9Role conv9x9_kernel_role(const void* func) {
  const bool image = is_conv1_instantiation(func, [](auto t, auto in, auto stats) {
    return reinterpret_cast<const void*>(rgb_kernel<decltype(t), decltype(in), decltype(stats)::value>);
  });
  if (image) return Conv9x9Role::kImage;
  const void* output[] = {reinterpret_cast<const void*>(head_kernel<__nv_bfloat16, float>),
                          reinterpret_cast<const void*>(head_kernel<__half, float>),
                          reinterpret_cast<const void*>(head_kernel<__nv_bfloat16, __nv_bfloat16>),
                          reinterpret_cast<const void*>(head_kernel<__half, __half>)};
  return std::find(std::begin(output), std::end(output), func) != std::end(output) ? Conv9x9Role::kOutput
                                                                                    : Conv9x9Role::kNone;
}

Conv9x9ParamsLayout conv9x9_params_layout() {
  return {sizeof(Params), offsetof(Params, x), offsetof(Params, out)};
}

}  // namespace styleforge
