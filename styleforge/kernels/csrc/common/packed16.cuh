// Two 16-bit floats (bf16 or fp16, chosen by T) in one 32-bit word, low half first: the register and
// shared-memory form of the tensor-core kernels' operands and outputs. Pure CUDA, no torch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace styleforge {

// lo and hi rounded to nearest even.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// The two floats of a pack2 word (exact: bf16 and fp16 widen without rounding).
template <typename T>
__device__ __forceinline__ void unpack2(uint32_t w, float& lo, float& hi) {
#if defined(__CUDA_ARCH__)
  // A bf16 is the high half of its fp32: the low value is the word shifted up, the high one the
  // word with its low half cleared, two instructions a pair. cuda_bf16's conversion extracts each
  // half first (PRMT) and then shifts, three a pair, where fp16 takes two (HADD2.F32 reads either
  // half): in every kernel that widens bf16 (the 3×3 prologues and epilogues, the head's norm on
  // load) that was the instruction count bf16 spent over fp16.
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    lo = __uint_as_float(w << 16);
    hi = __uint_as_float(w & 0xffff0000u);
    return;
  }
#endif
  // (Else the cuda_bf16/fp16 conversions: __uint_as_float is device-only, and the attention
  // kernel's CPU emulator compiles this header as host code.)
  float2 f;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
  } else {
    f = __half22float2(*reinterpret_cast<const __half2*>(&w));
  }
  lo = f.x;
  hi = f.y;
}

// The eight floats of a 16-byte chunk.
template <typename T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  unpack2<T>(v.x, f[0], f[1]);
  unpack2<T>(v.y, f[2], f[3]);
  unpack2<T>(v.z, f[4], f[5]);
  unpack2<T>(v.w, f[6], f[7]);
}

}  // namespace styleforge
