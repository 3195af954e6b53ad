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
// bindings_conv.cpp turns tensors into Conv9x9Args. Semantics: styleforge/kernels/reference_conv.py.
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
// Tails: the input tile is zero-filled past the padded input's edge and stores are bounds-checked,
// so any output size ≥ 1 works. Global offsets are 64-bit. Not covered: other channel counts (the
// bindings refuse them and the engine keeps cuDNN), fp32 input to the head, conv strides or dilations.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "smem_optin.cuh"
#include "../conv9x9.h"

namespace styleforge {
namespace {

// ---- warp primitives ----------------------------------------------------------------------
// The emulator (dev/kernels/conv9x9/emulator) defines STYLEFORGE_CONV_WARP_EMULATION and its own
// versions of these two with the same semantics, so the rest of this file runs unchanged on a CPU.
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
#endif

template <typename T> __device__ __forceinline__ uint16_t to_bits(float v);
template <> __device__ __forceinline__ uint16_t to_bits<__half>(float v) {
  return __half_as_ushort(__float2half_rn(v));
}
template <> __device__ __forceinline__ uint16_t to_bits<__nv_bfloat16>(float v) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

template <typename T> __device__ __forceinline__ float from_bits(uint16_t b);
template <> __device__ __forceinline__ float from_bits<__half>(uint16_t b) {
  return __half2float(__ushort_as_half(b));
}
template <> __device__ __forceinline__ float from_bits<__nv_bfloat16>(uint16_t b) {
  return __bfloat162float(__ushort_as_bfloat16(b));
}

// x·scale + shift rounded twice, as the twin (and PyTorch) computes it: no FMA contraction, so the
// value rounded to T is the twin's bit for bit.
__device__ __forceinline__ float affine(float x, float scale, float shift) {
  return __fadd_rn(__fmul_rn(x, scale), shift);
}

// One element of x as T's 16 bits: raw when x is T already, else rounded as .to(T) rounds.
template <typename T> __device__ __forceinline__ uint16_t as_bits(uint16_t v) { return v; }
template <typename T> __device__ __forceinline__ uint16_t as_bits(float v) { return to_bits<T>(v); }

template <typename Out> __device__ __forceinline__ void store_one(Out* p, float v);
template <> __device__ __forceinline__ void store_one<float>(float* p, float v) { *p = v; }
template <> __device__ __forceinline__ void store_one<__half>(__half* p, float v) {
  *reinterpret_cast<uint16_t*>(p) = to_bits<__half>(v);
}
template <> __device__ __forceinline__ void store_one<__nv_bfloat16>(__nv_bfloat16* p, float v) {
  *reinterpret_cast<uint16_t*>(p) = to_bits<__nv_bfloat16>(v);
}

__device__ __forceinline__ uint32_t pack2(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

struct Params {
  const void* x;           // T's raw 16-bit elements (the kernels only move them until the mma) or fp32
  const uint16_t* weight;
  const float* bias;
  const float* scale;      // head: (N, 32) prologue norm, or null
  const float* shift;
  void* out;
  int64_t sn, sc, sh, sw;  // rgb: x's element strides
  int64_t Hin, Win;        // x's sizes
  int64_t Hp, Wp, H, W;    // padded input, output
  int pad;                 // the reflection pad resolved in the addressing (0 or 4)
  int64_t tiles_x, tiles_y, tiles;
};

// Source row/column of padded coordinate i + pad under reflection (needs pad < n): the staging
// loops map every padded input position to x itself, so no padded copy exists.
__device__ __forceinline__ int64_t reflect(int64_t i, int64_t n) {
  return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
}

// ---- rgb_kernel: 3 → 32 -------------------------------------------------------------------

constexpr int kRgbThreads = 256;
constexpr int kRgbTH = 8, kRgbTW = 64;                 // output tile
constexpr int kRgbRows = kRgbTH + 8;                   // staged input rows
constexpr int kRgbCopy = 224;                          // elements per copy: ≥ 3·63 + 32, and 112 words ≡ 16 (mod 32)
constexpr int kRgbLoad = kRgbCopy + 1;                 // copy 1 needs one element past copy 0
constexpr int kRgbStaged = kRgbRows * kRgbLoad;         // elements staged per tile
constexpr int kRgbPerThread = (kRgbStaged + kRgbThreads - 1) / kRgbThreads;   // 15
constexpr int kRgbBatch = 8;                                                  // loads in flight
constexpr int kRgbSlots = 9 * 2 * 4;                   // B fragments: ky × k-step × n-tile
constexpr int kRgbStage = 40;                          // staged output pixel stride (elements), 80 B
constexpr size_t kRgbInBytes = size_t(kRgbRows) * 2 * kRgbCopy * 2;
constexpr size_t kRgbWBytes = size_t(kRgbSlots) * 32 * 8;
constexpr size_t kRgbSmem = kRgbInBytes + kRgbWBytes + size_t(kRgbTH) * kRgbTW * kRgbStage * 2;

template <typename T, typename In>
__global__ void __launch_bounds__(kRgbThreads, 2) rgb_kernel(Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* in_s = reinterpret_cast<uint16_t*>(smem);                  // [row][copy][kRgbCopy]
  uint2* w_s = reinterpret_cast<uint2*>(smem + kRgbInBytes);           // [ky][ks][nt][lane]
  uint16_t* st_s = reinterpret_cast<uint16_t*>(smem + kRgbInBytes + kRgbWBytes);  // [pixel][kRgbStage]

  // B[k][n] = W[n][c][ky][kx] with k = 3·kx + c (< 27), else 0.
  for (int i = threadIdx.x; i < kRgbSlots * 32; i += kRgbThreads) {
    const int lane = i & 31, slot = i >> 5;
    const int nt = slot & 3, ks = (slot >> 2) & 1, ky = slot >> 3;
    const int n = nt * 8 + (lane >> 2), k0 = ks * 16 + (lane & 3) * 2;
    uint16_t v[4];
    const int ks4[4] = {k0, k0 + 1, k0 + 8, k0 + 9};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int k = ks4[j];
      v[j] = k < 27 ? p.weight[((n * 3 + k % 3) * 9 + ky) * 9 + k / 3] : uint16_t(0);
    }
    w_s[i] = make_uint2(pack2(v[0], v[1]), pack2(v[2], v[3]));
  }

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

  for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const int64_t rest = tile / p.tiles_x, n = rest / p.tiles_y;
    const int y0 = static_cast<int>(rest % p.tiles_y) * kRgbTH, x0 = static_cast<int>(tile % p.tiles_x) * kRgbTW;
    __syncthreads();   // the previous tile's readers of in_s and st_s are done
    // Element e of a staged row is channel e % 3 of padded pixel e / 3 (the NHWC order of K).
    // Staging in batches whose loads are all issued before the first is used (one memory latency
    // per batch, not per element).
    const In* xn = x + n * p.sn;
#pragma unroll 1
    for (int b = 0; b < kRgbPerThread; b += kRgbBatch) {
      In raw[kRgbBatch];
#pragma unroll
      for (int k = 0; k < kRgbBatch; ++k) {
        const int i = threadIdx.x + (b + k) * kRgbThreads, r = i / kRgbLoad, j = i - r * kRgbLoad;
        const int y = y0 + r, e = x0 * 3 + j, px = e / 3, c = e - 3 * px;
        raw[k] = In(0);
        if (i < kRgbStaged && y < p.Hp && px < p.Wp) {
          raw[k] = xn[c * p.sc + reflect(y - p.pad, p.Hin) * p.sh + reflect(px - p.pad, p.Win) * p.sw];
        }
      }
#pragma unroll
      for (int k = 0; k < kRgbBatch; ++k) {
        const int i = threadIdx.x + (b + k) * kRgbThreads, r = i / kRgbLoad, j = i - r * kRgbLoad;
        if (i < kRgbStaged) {
          const uint16_t v = as_bits<T>(raw[k]);
          if (j < kRgbCopy) in_s[(r * 2) * kRgbCopy + j] = v;
          if (j > 0) in_s[(r * 2 + 1) * kRgbCopy + j - 1] = v;
        }
      }
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

    // Epilogue: + bias, round, stage [pixel][channel], then 16-byte stores of whole pixels.
    uint32_t* st_w = reinterpret_cast<uint32_t*>(st_s);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      const int ch = nt * 8 + t * 2;
      const float b0 = p.bias ? p.bias[ch] : 0.f, b1 = p.bias ? p.bias[ch + 1] : 0.f;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int pix = (wr0 + i) * kRgbTW + cs + g;
        st_w[(pix * kRgbStage + ch) / 2] =
            pack2(to_bits<T>(acc[i][nt][0] + b0), to_bits<T>(acc[i][nt][1] + b1));
        st_w[((pix + 8) * kRgbStage + ch) / 2] =
            pack2(to_bits<T>(acc[i][nt][2] + b0), to_bits<T>(acc[i][nt][3] + b1));
      }
    }
    __syncthreads();
    uint16_t* out = static_cast<uint16_t*>(p.out);
    for (int i = threadIdx.x; i < kRgbTH * kRgbTW * 4; i += kRgbThreads) {
      const int q = i & 3, pix = i >> 2, r = pix / kRgbTW, c = pix - r * kRgbTW;
      const int y = y0 + r, xx = x0 + c;
      if (y < p.H && xx < p.W) {
        *reinterpret_cast<uint4*>(out + ((n * p.H + y) * p.W + xx) * 32 + q * 8) =
            *reinterpret_cast<const uint4*>(st_s + pix * kRgbStage + q * 8);
      }
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
constexpr size_t kHeadSmem = kHeadInBytes + size_t(kHeadSlots) * 32 * 8;

// Byte offset of 16-byte chunk q (channels 8q..8q+7) of tile pixel P: any 8 consecutive pixels
// of one chunk land in 8 distinct 16-byte bank groups.
__device__ __forceinline__ int head_chunk_offset(int P, int q) { return P * 64 + ((q ^ ((P >> 1) & 3)) << 4); }

template <typename T, typename Out>
__global__ void __launch_bounds__(kHeadThreads, 2) head_kernel(Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* in_s = smem;                                          // swizzled [pixel][4 chunks]
  uint2* w_s = reinterpret_cast<uint2*>(smem + kHeadInBytes);          // [G][kx][ks][lane]

  // B[k][n] = W[co][16·ks + k][2G + j][kx] for n = 2·co + j < 6 and 2G + j < 9, else 0.
  for (int i = threadIdx.x; i < kHeadSlots * 32; i += kHeadThreads) {
    const int lane = i & 31, slot = i >> 5;
    const int ks = slot & 1, kx = (slot >> 1) % 9, G = (slot >> 1) / 9;
    const int n = lane >> 2, co = n >> 1, ky = 2 * G + (n & 1), c0 = ks * 16 + (lane & 3) * 2;
    uint16_t v[4] = {0, 0, 0, 0};
    if (n < 6 && ky < 9) {
      const int cs4[4] = {c0, c0 + 1, c0 + 8, c0 + 9};
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = p.weight[(co * 32 + cs4[e]) * 81 + ky * 9 + kx];
    }
    w_s[i] = make_uint2(pack2(v[0], v[1]), pack2(v[2], v[3]));
  }

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wr0 = (warp >> 1) * kHeadRW, cs = (warp & 1) * 16;
  // ldmatrix.x4: lanes 0–7 address pixels 0–7 at k 0–7 (→ a[0]), 8–15 pixels 8–15 (→ a[1]),
  // 16–23 pixels 0–7 at k 8–15 (→ a[2]), 24–31 pixels 8–15 at k 8–15 (→ a[3]).
  const int lrow = lane & 15, lhalf = lane >> 4;
  const uint4* x = static_cast<const uint4*>(p.x);
  const int q = threadIdx.x & 3;   // the staging loop strides by a multiple of 4: one chunk, always

  for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const int64_t rest = tile / p.tiles_x, n = rest / p.tiles_y;
    const int y0 = static_cast<int>(rest % p.tiles_y) * kHeadTH, x0 = static_cast<int>(tile % p.tiles_x) * kHeadTW;
    // The prologue norm of this thread's 8 channels (8q .. 8q + 7) in sample n.
    float nscale[8], nshift[8];
    if (p.scale != nullptr) {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        nscale[e] = p.scale[n * 32 + 8 * q + e];
        nshift[e] = p.shift[n * 32 + 8 * q + e];
      }
    }
    __syncthreads();   // the previous tile's ldmatrix reads are done
    // Staging in batches whose loads are all issued before the first is used (one memory latency
    // per batch, not per chunk).
    const uint4* xn = x + n * p.Hin * p.Win * 4 + q;
#pragma unroll 1
    for (int b = 0; b < kHeadPerThread; b += kHeadBatch) {
      uint4 raw[kHeadBatch];
#pragma unroll
      for (int k = 0; k < kHeadBatch; ++k) {
        const int P = (threadIdx.x + (b + k) * kHeadThreads) >> 2, r = P / kHeadCols, c = P - r * kHeadCols;
        const int y = y0 + r, xx = x0 + c;
        raw[k] = make_uint4(0, 0, 0, 0);
        if (y < p.Hp && xx < p.Wp) {
          raw[k] = __ldg(xn + (reflect(y - p.pad, p.Hin) * p.Win + reflect(xx - p.pad, p.Win)) * 4);
        }
      }
#pragma unroll
      for (int k = 0; k < kHeadBatch; ++k) {
        const int P = (threadIdx.x + (b + k) * kHeadThreads) >> 2, r = P / kHeadCols, c = P - r * kHeadCols;
        uint4 v = raw[k];
        // x' = round(relu(x·scale + shift)), as the InstanceNorm op writes it; zeros past the
        // padded input stay zeros (they feed only outputs that are not stored).
        if (p.scale != nullptr && y0 + r < p.Hp && x0 + c < p.Wp) {
          uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int h = 0; h < 4; ++h) {
            const float lo = fmaxf(affine(from_bits<T>(static_cast<uint16_t>(w[h] & 0xffffu)), nscale[2 * h],
                                          nshift[2 * h]), 0.f);
            const float hi = fmaxf(affine(from_bits<T>(static_cast<uint16_t>(w[h] >> 16)), nscale[2 * h + 1],
                                          nshift[2 * h + 1]), 0.f);
            w[h] = pack2(to_bits<T>(lo), to_bits<T>(hi));
          }
          v = make_uint4(w[0], w[1], w[2], w[3]);
        }
        *reinterpret_cast<uint4*>(in_s + head_chunk_offset(P, q)) = v;
      }
    }
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
      Out* out = static_cast<Out*>(p.out);
      const float bias = p.bias ? p.bias[t] : 0.f;
#pragma unroll
      for (int i = 0; i < kHeadRW; ++i) {
        const int y = y0 + wr0 + i;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int xx = x0 + cs + g + half * 8;
          if (y < p.H && xx < p.W) {
            store_one<Out>(out + ((n * p.H + y) * p.W + xx) * 3 + t,
                           acc[i][half * 2] + acc[i + 1][half * 2 + 1] + bias);
          }
        }
      }
    }
  }
}

// ---- host -----------------------------------------------------------------------------------


Params make_params(const Conv9x9Args& a, int th, int tw) {
  Params p;
  p.x = a.x;
  p.weight = static_cast<const uint16_t*>(a.weight);
  p.bias = a.bias;
  p.scale = a.scale;
  p.shift = a.shift;
  p.out = a.out;
  p.sn = a.stride_n;
  p.sc = a.stride_c;
  p.sh = a.stride_h;
  p.sw = a.stride_w;
  p.Hin = a.H;
  p.Win = a.W;
  p.pad = a.pad;
  p.Hp = a.H + 2 * a.pad;
  p.Wp = a.W + 2 * a.pad;
  p.H = p.Hp - 8;
  p.W = p.Wp - 8;
  p.tiles_x = (p.W + tw - 1) / tw;
  p.tiles_y = (p.H + th - 1) / th;
  p.tiles = a.N * p.tiles_x * p.tiles_y;
  return p;
}

unsigned grid_for(int64_t tiles, int num_sms) {
  const int64_t resident = 2 * static_cast<int64_t>(std::max(num_sms, 1));   // 2 blocks per SM
  return static_cast<unsigned>(std::min(tiles, resident));
}

template <typename T, typename In>
cudaError_t launch_rgb(const Conv9x9Args& a, cudaStream_t stream, int id) {
  const Params p = make_params(a, kRgbTH, kRgbTW);
  if (p.tiles == 0) return cudaSuccess;
  const cudaError_t err = allow_smem(rgb_kernel<T, In>, kRgbSmem, id);
  if (err != cudaSuccess) return err;
  rgb_kernel<T, In><<<grid_for(p.tiles, a.num_sms), kRgbThreads, kRgbSmem, stream>>>(p);
  return cudaPeekAtLastError();
}

template <typename T, typename Out>
cudaError_t launch_head(const Conv9x9Args& a, cudaStream_t stream, int id) {
  const Params p = make_params(a, kHeadTH, kHeadTW);
  if (p.tiles == 0) return cudaSuccess;
  const cudaError_t err = allow_smem(head_kernel<T, Out>, kHeadSmem, id);
  if (err != cudaSuccess) return err;
  head_kernel<T, Out><<<grid_for(p.tiles, a.num_sms), kHeadThreads, kHeadSmem, stream>>>(p);
  return cudaPeekAtLastError();
}

}  // namespace

bool conv9x9_supported(int cin, int cout, bool out_float32) {
  return (cin == 3 && cout == 32 && !out_float32) || (cin == 32 && cout == 3);
}

cudaError_t conv9x9_launch(const Conv9x9Args& a, cudaStream_t stream) {
  const bool head = a.cin == 32;
  if (!conv9x9_supported(a.cin, a.cout, a.out_float32) || (a.pad != 0 && a.pad != 4) || a.H <= a.pad ||
      a.W <= a.pad || a.H + 2 * a.pad < 9 || a.W + 2 * a.pad < 9 || a.N < 0 || (a.scale == nullptr) != (a.shift == nullptr) ||
      (a.scale != nullptr && !head) || (a.x_float32 && head)) {
    return cudaErrorInvalidValue;
  }
  const bool bf16 = a.dtype == ConvDtype::kBFloat16;
  if (!head) {
    if (a.x_float32) return bf16 ? launch_rgb<__nv_bfloat16, float>(a, stream, 6) : launch_rgb<__half, float>(a, stream, 7);
    return bf16 ? launch_rgb<__nv_bfloat16, uint16_t>(a, stream, 0) : launch_rgb<__half, uint16_t>(a, stream, 1);
  }
  if (a.out_float32) {
    return bf16 ? launch_head<__nv_bfloat16, float>(a, stream, 2) : launch_head<__half, float>(a, stream, 3);
  }
  return bf16 ? launch_head<__nv_bfloat16, __nv_bfloat16>(a, stream, 4) : launch_head<__half, __half>(a, stream, 5);
}

}  // namespace styleforge
