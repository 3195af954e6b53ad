// Sums across the 8 lanes of an mma fragment's g index (lanes sharing lane % 4), by recursive
// halving: the epilogue statistics of the fused 3×3 convolution (conv3x3_tile.cuh) and of conv1's
// 9×9 kernel (conv9x9.cu). Pure CUDA; the conv9x9 warp emulator supplies its own shuffle.
#pragma once

#include <cstdint>

namespace styleforge {
namespace {

// One halving step of sum_over_g: the lanes `kMask` apart swap halves of v[0 .. 2·kWidth); the lane
// with that bit set keeps (and sums) the upper half, its partner the lower, into v[0 .. kWidth).
// The selects are bit masks: a `c ? v[i] : v[j]` becomes an indexed load from a local-memory copy.
template <int V, int kWidth, int kMask>
__device__ __forceinline__ void halve(float (&v)[V], int lane) {
  const uint32_t keep_hi = (lane & kMask) != 0 ? 0xffffffffu : 0u;
#pragma unroll
  for (int k = 0; k < kWidth; ++k) {
    const uint32_t lo = __float_as_uint(v[k]), hi = __float_as_uint(v[k + kWidth]);
    const float send = __uint_as_float((lo & keep_hi) | (hi & ~keep_hi));
    const float keep = __uint_as_float((hi & keep_hi) | (lo & ~keep_hi));
    v[k] = keep + __shfl_xor_sync(0xffffffffu, send, kMask);
  }
}
// Sums each of v[0 .. V) over the 8 lanes that share lane % 4 (the g index of an mma fragment):
// V/2 + V/4 + V/8 shuffles instead of 3·V. Afterwards lane (g, t) holds in v[0 .. V/8) the sums of
// v[first .. first + V/8), first = halving_first<V>(g) (V = 8: v[0] is the sum of v[g]).
template <int V>
__device__ __forceinline__ void sum_over_g(float (&v)[V], int lane) {
  static_assert(V % 8 == 0, "three halvings");
  halve<V, V / 2, 16>(v, lane);
  halve<V, V / 4, 8>(v, lane);
  halve<V, V / 8, 4>(v, lane);
}
template <int V>
__device__ __forceinline__ int halving_first(int g) {
  return (V / 2) * ((g >> 2) & 1) + (V / 4) * ((g >> 1) & 1) + (V / 8) * (g & 1);
}

}  // namespace
}  // namespace styleforge
