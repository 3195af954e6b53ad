// What the two 9×9 convolution files share (conv9x9.cu, the portable mma.sync kernels; and
// conv9x9_sm90.cu, conv1 on wgmma): T's 16-bit element conversions, the reflection of a padded
// coordinate, the raw 9×9 weight's size, the kernels' Params, a tile's origin and the head's
// prologue norm from sums.
// Pure CUDA; the conv9x9 CPU emulator compiles it too (its warp_emu.h supplies __ldg and the thread
// indices).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "norm_state.cuh"
#include "../conv9x9.h"

namespace styleforge {
namespace {

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

// One element of x as T's 16 bits: raw when x is T already, else rounded as .to(T) rounds.
template <typename T> __device__ __forceinline__ uint16_t as_bits(uint16_t v) { return v; }
template <typename T> __device__ __forceinline__ uint16_t as_bits(float v) { return to_bits<T>(v); }

// One output value as Out (the head's fp32 or T output).
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

// The two T values of a packed pair as floats (exact).
template <typename T> __device__ __forceinline__ void unpack2(uint32_t w, float& lo, float& hi) {
  lo = from_bits<T>(static_cast<uint16_t>(w & 0xffffu));
  hi = from_bits<T>(static_cast<uint16_t>(w >> 16));
}

#ifndef STYLEFORGE_CONV_WARP_EMULATION   // (the conv9x9 emulator supplies its own)
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
#endif

// x·scale + shift rounded twice, as the twin (and PyTorch) computes it: no FMA contraction, so the
// value rounded to T is the twin's bit for bit.
__device__ __forceinline__ float affine(float x, float scale, float shift) {
  return __fadd_rn(__fmul_rn(x, scale), shift);
}

// Byte offset of 16-byte chunk q (channels 8q..8q+7) of tile pixel P: any 8 consecutive pixels
// of one chunk land in 8 distinct 16-byte bank groups.
__device__ __forceinline__ int head_chunk_offset(int P, int q) { return P * 64 + ((q ^ ((P >> 1) & 3)) << 4); }

// Source row/column of padded coordinate i + pad under reflection, last = 2·(n − 1) for a size n
// > pad: the staging loops map every padded input position to x itself, so no padded copy exists.
// min(|i|, last − |i|) is i inside, −i before the start and last − i past the end (for −n < i < 2n − 1).
__device__ __forceinline__ int reflect(int i, int last) {
  const int a = i < 0 ? -i : i;
  return a < last - a ? a : last - a;
}
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }

// The raw weight (Cout·Cin·81 16-bit values, 15,552 B for either layer) in 16-byte chunks.
constexpr int kWeightChunks = 32 * 3 * 81 * 2 / 16;
static_assert(32 * 3 * 81 * 2 % 16 == 0, "the weight is whole 16-byte chunks");

// The kernels' parameters: Conv9x9Args resolved for tiles of th × tw output pixels.
struct Params {
  const void* x;           // T's raw 16-bit elements (the kernels only move them until the mma) or fp32
  const uint16_t* weight;  // (Cout, Cin, 9, 9), 16-byte aligned
  const float* bias;
  const float* scale;      // head: (N, 32) prologue norm, or null
  const float* shift;
  void* out;
  int64_t sn;              // rgb: x's element strides (sc, sh, sw < 2^31)
  int sc, sh, sw;
  int N, Hin, Win;         // x's sizes
  int Hp, Wp, H, W;        // padded input, output
  int pad;                 // the reflection pad resolved in the addressing (0 or 4)
  int tiles_x, tiles_y, tiles;
  NormHandoff norm;        // rgb_kernel<..., true>: the IN1 hand-off (norm.scale null: the sums only) ...
  void* norm_state;        // ... and its zeroed state
  double inv_count;        // 1 / (H·W)
  // head: the prologue norm from its producer's sums instead of scale/shift (Conv9x9Args::in_state).
  const double* in_sums;   // [copies][2][N][32] Σx, Σx²
  unsigned* in_counter;    // the state's counter: the last CTA to count clears the sums
  const float* in_gamma;
  const float* in_beta;
  float in_eps;
  double in_inv_count;     // 1 / (Hin·Win)
};

Params make_params(const Conv9x9Args& a, int th, int tw) {
  Params p;
  p.x = a.x;
  p.weight = static_cast<const uint16_t*>(a.weight);
  p.bias = a.bias;
  p.scale = a.scale;
  p.shift = a.shift;
  p.out = a.out;
  p.sn = a.stride_n;
  p.sc = static_cast<int>(a.stride_c);
  p.sh = static_cast<int>(a.stride_h);
  p.sw = static_cast<int>(a.stride_w);
  p.N = static_cast<int>(a.N);
  p.Hin = static_cast<int>(a.H);
  p.Win = static_cast<int>(a.W);
  p.pad = a.pad;
  p.Hp = p.Hin + 2 * a.pad;
  p.Wp = p.Win + 2 * a.pad;
  p.H = p.Hp - 8;
  p.W = p.Wp - 8;
  p.tiles_x = (p.W + tw - 1) / tw;
  p.tiles_y = (p.H + th - 1) / th;
  p.tiles = p.N * p.tiles_x * p.tiles_y;
  p.norm = a.norm;
  p.norm_state = a.norm_state;
  p.inv_count = 1.0 / (static_cast<double>(p.H) * p.W);
  p.in_sums = nullptr;
  p.in_counter = nullptr;
  if (a.in_state != nullptr) {
    p.in_counter = static_cast<unsigned*>(a.in_state);
    p.in_sums = norm_state_sums(a.in_state);
  }
  p.in_gamma = a.in_norm_weight;
  p.in_beta = a.in_norm_bias;
  p.in_eps = a.in_eps;
  p.in_inv_count = 1.0 / (static_cast<double>(p.Hin) * p.Win);
  return p;
}


// Tile `tile` of a grid of tiles_x × tiles_y tiles per sample (th × tw output pixels each): its
// sample n and its first output row y0 and column x0.
__host__ __device__ __forceinline__ void tile_origin(const Params& p, int tile, int th, int tw, int& n, int& y0,
                                                     int& x0) {
  const int rest = tile / p.tiles_x;
  n = rest / p.tiles_y;
  y0 = (rest - n * p.tiles_y) * th;
  x0 = (tile - rest * p.tiles_x) * tw;
}

// The head's prologue norm of sample n from its producer's fp64 sums (Params::in_sums), by all
// kThreads threads of the CTA: kG = kThreads / 32 adjacent threads share channel tid / kG, each
// summing kNormSumCopies / kG of the copies; they meet through shuffles and the group's first thread
// writes the channel's (scale, shift) to aff[c], aff[32 + c]. The caller's barrier publishes aff.
template <int kThreads>
__device__ __forceinline__ void head_affine_from_sums(const Params& p, int n, float* aff, int tid) {
  constexpr int kG = kThreads / 32, kPer = kNormSumCopies / kG;
  static_assert(kG * 32 == kThreads && kPer * kG == kNormSumCopies && kG <= 32, "sums layout");
  const int c = tid / kG, grp = tid % kG;
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
                          p.in_eps, aff[c], aff[32 + c]);
  }
}

}  // namespace
}  // namespace styleforge
