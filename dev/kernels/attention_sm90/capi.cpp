// Dev-only C entry points of attention_sm90 for probe.py --impl capi (ctypes), so a library built
// with nvcc alone, here or anywhere, can be tested without compiling torch headers on the GPU
// machine. Same arguments as AttentionArgs (out_fp32: `out` is fp32); returns the cudaError_t, or
// -1 when unsupported.
#include <cstdint>

#include "attention_sm90.h"

namespace {
styleforge::AttentionArgs make_args(int bf16, const void* q, const void* k, const void* v, const uint8_t* mask,
                                    void* out, int64_t b, int64_t h, int64_t nq, int64_t nk, int d, float scale,
                                    int out_fp32) {
  styleforge::AttentionArgs a;
  a.dtype = bf16 ? styleforge::AttnDtype::kBFloat16 : styleforge::AttnDtype::kFloat16;
  a.q = q;
  a.k = k;
  a.v = v;
  a.key_padding_mask = mask;
  a.out = out;
  a.B = b;
  a.H = h;
  a.Nq = nq;
  a.Nk = nk;
  a.D = d;
  a.scale = scale;
  a.out_fp32 = out_fp32 != 0;
  return a;
}
}  // namespace

extern "C" int sf_attention_sm90_forward(int bf16, const void* q, const void* k, const void* v, const uint8_t* mask,
                                         void* out, int64_t b, int64_t h, int64_t nq, int64_t nk, int d,
                                         float scale, int out_fp32, void* stream) {
  const styleforge::AttentionArgs a = make_args(bf16, q, k, v, mask, out, b, h, nq, nk, d, scale, out_fp32);
  if (!styleforge::attention_sm90_supported(a)) return -1;
  return static_cast<int>(styleforge::attention_sm90_launch(a, static_cast<cudaStream_t>(stream)));
}
