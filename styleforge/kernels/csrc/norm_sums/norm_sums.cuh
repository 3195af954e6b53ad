// The in-kernel InstanceNorm hand-off (see norm_sums.h), device side: a tile's moments added
// to the state's fp64 sums, and either the grid's last CTA turning the sums into (scale, shift), or
// the consumer forming them itself and its last CTA clearing the state. Used by the fused 3×3
// convolution (conv3x3_tile.cuh, conv3x3.cu) and the 9×9 kernels (conv9x9.cu).
// Pure CUDA, no torch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "norm_sums.h"

namespace styleforge {
namespace {

__device__ __forceinline__ unsigned* norm_state_counter(void* state) { return static_cast<unsigned*>(state); }
// (Host side too: the launchers pass the sums of a consumer's input state.)
__host__ __device__ __forceinline__ double* norm_state_sums(void* state) {
  return reinterpret_cast<double*>(static_cast<unsigned char*>(state) + kNormStateHeaderBytes);
}

// v added to the fp64 at p, a global address, without a result: a `red`. atomicAdd on a generic
// pointer compiles to an atom with a shared-memory fallback (a compare-and-swap loop) whose branch
// waits on the atom's predicate, in the epilogue's critical path; here the address space is known.
// (The 9×9 kernels' CPU emulator, a host build: atomicAdd.)
__device__ __forceinline__ void red_add_global(double* p, double v) {
#if defined(__CUDA_ARCH__)
  asm volatile("red.global.add.f64 [%0], %1;\n" ::"l"(__cvta_generic_to_global(p)), "d"(v) : "memory");
#else
  atomicAdd(p, v);
#endif
}

// Σx and Σx² of channel c in sample n (fp64) added to the state's sums. NC = N·C; the copy is
// blockIdx.x % kNormSumCopies.
__device__ __forceinline__ void norm_state_add_sums(void* state, int NC, int n, int C, int c, double sum1,
                                                    double sum2) {
  double* copy = norm_state_sums(state) + static_cast<size_t>(blockIdx.x % kNormSumCopies) * 2 * NC;
  red_add_global(copy + n * C + c, sum1);
  red_add_global(copy + NC + n * C + c, sum2);
}

// One tile's moments of channel c in sample n (sum and M2 = Σ(v − mean)² over `count` pixels, fp32)
// added as Σx and Σx² = M2 + sum²/count: in fp64, Σx²/n − mean² keeps the precision that Chan's
// merge keeps in fp32.
__device__ __forceinline__ void norm_state_add(void* state, int NC, int n, int C, int c, float sum, float m2,
                                               float count) {
  const double s = sum;
  norm_state_add_sums(state, NC, n, C, c, s, static_cast<double>(m2) + s * s / count);
}

// InstanceNorm as one affine from fp64 sums Σx, Σx² of the channel's values: scale = γ / √(var +
// eps), shift = β − mean·scale, var = Σx²/n − mean².
__device__ __forceinline__ void norm_affine_from_sums(double sum1, double sum2, double inv_count, float gamma,
                                                      float beta, float eps, float& scale, float& shift) {
  const double mean = sum1 * inv_count;
  const double var = fmax(sum2 * inv_count - mean * mean, 0.0);
  scale = gamma * rsqrtf(static_cast<float>(var) + eps);
  shift = beta - static_cast<float>(mean) * scale;
}

// Called by every thread of `threads` (ids tid) of every CTA, after the CTA's last norm_state_add:
// the last CTA to arrive writes h.scale, h.shift for all NC = N·C (sample, channel) pairs from the
// sums (count = H·W pixels per sample: inv_count = 1 / count) and zeroes the sums and the counter for
// the next launch. sync() is a barrier of those threads; flag a word of shared memory free to use.
// The fences: every CTA's atomics are ordered before its count (CTA barrier, then a gpu-scope fence
// by the counting thread), and the last CTA's reads after it sees the full count.
template <class Sync>
__device__ __forceinline__ void norm_state_finish(void* state, int NC, int C, double inv_count, const NormHandoff& h,
                                                  unsigned* flag, int tid, int threads, Sync sync) {
  sync();
  if (tid == 0) {
    __threadfence();
    const unsigned done = atomicAdd(norm_state_counter(state), 1u);
    __threadfence();
    *flag = done == gridDim.x - 1;
  }
  sync();
  if (*flag == 0) return;
  double* sums = norm_state_sums(state);
  for (int i = tid; i < NC; i += threads) {
    double s1 = 0.0, s2 = 0.0;
#pragma unroll
    for (int k = 0; k < kNormSumCopies; ++k) {
      s1 += __ldcg(sums + 2 * k * NC + i);
      s2 += __ldcg(sums + (2 * k + 1) * NC + i);
    }
    const int c = i % C;
    norm_affine_from_sums(s1, s2, inv_count, h.weight ? h.weight[c] : 1.f, h.bias ? h.bias[c] : 0.f, h.eps,
                          h.scale[i], h.shift[i]);
    // The same thread zeroes what it read: no barrier between the reads and the stores.
#pragma unroll
    for (int k = 0; k < kNormSumCopies; ++k) {
      sums[2 * k * NC + i] = 0.0;
      sums[(2 * k + 1) * NC + i] = 0.0;
    }
  }
  if (tid == 0) *norm_state_counter(state) = 0;
}

// The consumer's side of the sums hand-off (a kernel that forms its input norm's affine from the
// producer's sums instead of reading a (scale, shift) the producer wrote). Called by every thread of
// `threads` of every CTA at its end; thread 0 holds `ticket` = atomicAdd(counter, 1), taken once the
// CTA's last reads of the sums had returned. The CTA that counted last (so every CTA has read
// them) zeroes the NC = N·C pairs' sums and the counter for the next launch of the producer.
template <class Sync>
__device__ __forceinline__ void norm_state_release(void* state, int NC, unsigned ticket, unsigned* flag, int tid,
                                                   int threads, Sync sync) {
  sync();
  if (tid == 0) *flag = ticket == gridDim.x - 1;
  sync();
  if (*flag == 0) return;
  double* sums = norm_state_sums(state);
  for (int i = tid; i < 2 * kNormSumCopies * NC; i += threads) sums[i] = 0.0;
  if (tid == 0) *norm_state_counter(state) = 0;
}

}  // namespace
}  // namespace styleforge
