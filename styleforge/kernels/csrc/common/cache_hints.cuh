// L2 eviction priority for the fused layers' activations. A 512² frame moves ~120 MB of activations
// through a 50 MB L2, each written once by a layer and read by the next. At normal priority they
// evicted everything else between two frames, the kernels' code included: every SM then fetched each
// kernel's instructions from HBM on first use. Loaded and stored with an evict_first policy, the
// activations displace one another and leave the code and the weights (normal priority) in L2. So
// do conv1's image and the head's output: each frame reads and writes the caller's own tensors
// (engine/graph_io.py). Only where a launch's activations fit L2 (activations_evict_first): where
// each layer moves more than L2 holds (1080p and up), the hinted form itself made the frame slower,
// so there the kernels keep their plain loads and stores. Numbers: docs/kernels/conv3x3.md.
// Pure CUDA; on the host (the 9×9 kernels' CPU emulator) plain loads and stores.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace styleforge {
namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define STYLEFORGE_CACHE_HINTS 1
#else
#define STYLEFORGE_CACHE_HINTS 0
#endif

// Whether a launch whose activations (in + out) take activation_bytes marks them (host).
inline bool activations_evict_first(int64_t activation_bytes, int64_t l2_bytes) {
  return l2_bytes > 0 && activation_bytes <= l2_bytes;
}

// The policy operand of the hinted loads and stores (a register; cheap to make where it is used).
__device__ __forceinline__ uint64_t evict_first_policy() {
#if STYLEFORGE_CACHE_HINTS
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
#else
  return 0;
#endif
}

// 16 bytes through the read-only path (as __ldg), evict-first in L2.
__device__ __forceinline__ uint4 ldg_evict_first(const uint4* p, uint64_t policy) {
#if STYLEFORGE_CACHE_HINTS
  uint4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
#else
  (void)policy;
  return __ldg(p);
#endif
}

// 16 bytes cached at L2 only (as __ldcg: data other CTAs of the same grid wrote), evict-first.
__device__ __forceinline__ uint4 ldcg_evict_first(const uint4* p, uint64_t policy) {
#if STYLEFORGE_CACHE_HINTS
  uint4 v;
  asm volatile("ld.global.cg.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy)
               : "memory");
  return v;
#else
  (void)policy;
  return *p;
#endif
}

// One element of the network's image through the read-only path, evict-first in L2 (conv1 reads
// each once per frame; a new frame's image would otherwise displace the code and the weights).
__device__ __forceinline__ float ldg_evict_first(const float* p, uint64_t policy) {
#if STYLEFORGE_CACHE_HINTS
  float v;
  asm volatile("ld.global.nc.L2::cache_hint.f32 %0, [%1], %2;\n" : "=f"(v) : "l"(p), "l"(policy));
  return v;
#else
  (void)policy;
  return __ldg(p);
#endif
}
__device__ __forceinline__ uint16_t ldg_evict_first(const uint16_t* p, uint64_t policy) {
#if STYLEFORGE_CACHE_HINTS
  uint16_t v;
  asm volatile("ld.global.nc.L2::cache_hint.u16 %0, [%1], %2;\n" : "=h"(v) : "l"(p), "l"(policy));
  return v;
#else
  (void)policy;
  return __ldg(p);
#endif
}

// A 4-byte store, evict-first in L2 (the head's fp32 output: the caller's, read after the frame).
__device__ __forceinline__ void st_evict_first(float* p, float v, uint64_t policy) {
#if STYLEFORGE_CACHE_HINTS
  asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;\n" ::"l"(p), "f"(v), "l"(policy) : "memory");
#else
  (void)policy;
  *p = v;
#endif
}

// A 16-byte store, evict-first in L2.
__device__ __forceinline__ void st_evict_first(uint4* p, const uint4& v, uint64_t policy) {
#if STYLEFORGE_CACHE_HINTS
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;\n" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w), "l"(policy)
               : "memory");
#else
  (void)policy;
  *p = v;
#endif
}

}  // namespace
}  // namespace styleforge
