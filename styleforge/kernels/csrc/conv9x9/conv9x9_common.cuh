// What the two 9×9 convolution files share (conv9x9.cu, the portable mma.sync kernels; and
// conv9x9_sm90.cu, conv1 on wgmma): T's 16-bit element conversions, the reflection of a padded
// coordinate, the raw 9×9 weight's size, the kernels' Params and a tile's origin.
// Pure CUDA; the conv9x9 CPU emulator compiles it too (its warp_emu.h supplies __ldg and the thread
// indices).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../common/cache_hints.cuh"
#include "../norm_sums/norm_sums.cuh"
#include "../common/packed16.cuh"   // styleforge::pack2<T>: two floats rounded into a pair in one conversion
#include "conv9x9.h"

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
  // (A bf16 is the high half of its fp32: a shift, which unpack2 below folds to a shift and a mask
  // per pair; cuda_bf16's conversion extracted each half first, one PRMT more per pair.)
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

// One element of x as T's 16 bits: raw when x is T already, else rounded as .to(T) rounds.
template <typename T> __device__ __forceinline__ uint16_t as_bits(uint16_t v) { return v; }
template <typename T> __device__ __forceinline__ uint16_t as_bits(float v) { return to_bits<T>(v); }

__device__ __forceinline__ uint32_t pack2(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// The two T values of a packed pair as floats (exact).
template <typename T> __device__ __forceinline__ void unpack2(uint32_t w, float& lo, float& hi) {
  lo = from_bits<T>(static_cast<uint16_t>(w & 0xffffu));
  hi = from_bits<T>(static_cast<uint16_t>(w >> 16));
}

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
  const uint16_t* weight_b;  // conv9x9_sm90's B image of it, or null (Conv9x9Args::weight_b)
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
  bool l2_evict_first;     // the 32-channel activation (conv1's output, the head's input) evict-first
};

// Whether `func` is one of a 3 → 32 kernel template's eight instantiations (T bf16 or fp16, In float
// or uint16_t, kStats): `address(T{}, In{}, std::bool_constant<kStats>{})` gives each one's address.
// For graph_io.cpp, through conv9x9_kernel_role and conv9x9_sm90_is_kernel.
template <typename Address>
bool is_conv1_instantiation(const void* func, Address address) {
  bool found = false;
  auto either_stats = [&](auto t, auto in) {
    found = found || func == address(t, in, std::false_type{}) || func == address(t, in, std::true_type{});
  };
  either_stats(__nv_bfloat16{}, float{});
  either_stats(__half{}, float{});
  either_stats(__nv_bfloat16{}, uint16_t{});
  either_stats(__half{}, uint16_t{});
  return found;
}

// A 9×9 kernel's input, one load: evict-first where kEvictFirst (cache_hints.cuh), else as __ldg. The
// choice is made once for a tile's loads (with_load_hint from Params::l2_evict_first): as a condition
// per load, each load of a staging loop sat in its own branch region.
template <bool kEvictFirst, typename V>
__device__ __forceinline__ V load_hinted(const V* ptr, uint64_t policy) {
  if constexpr (kEvictFirst) {
    return ldg_evict_first(ptr, policy);
  } else {
    return __ldg(ptr);
  }
}
// f(std::true_type{}) where the launch loads its input evict-first, else f(std::false_type{}).
template <class F>
__device__ __forceinline__ void with_load_hint(const Params& p, F&& f) {
  if (p.l2_evict_first) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

Params make_params(const Conv9x9Args& a, int th, int tw) {
  Params p;
  p.x = a.x;
  p.weight = static_cast<const uint16_t*>(a.weight);
  p.weight_b = static_cast<const uint16_t*>(a.weight_b);
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
  // (cache_hints.cuh) conv1's output or the head's input, 64 bytes a pixel, and the 3-channel side.
  p.l2_evict_first = activations_evict_first((a.N * a.H * a.W + static_cast<int64_t>(p.N) * p.H * p.W) * 64,
                                             a.l2_bytes);
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

}  // namespace
}  // namespace styleforge
