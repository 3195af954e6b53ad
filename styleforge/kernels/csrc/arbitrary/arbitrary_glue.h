// The arbitrary-style model's glue kernels (reference/arbitrary_glue.py states their semantics):
// launch arguments and launchers. Pure CUDA, no torch; arbitrary_glue_binding.cpp checks the
// tensors and fills these. Every tensor is dense: NHWC for the feature maps (channels a multiple
// of 8, 16-byte chunks), (B, H, N, D) for the attention output, NCHW fp32 for the frames.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace styleforge {

enum class GlueDtype { kFloat16, kBFloat16 };

struct FeaturePadArgs {
  GlueDtype dtype;
  const void* x;        // (N, H, W, C)
  const float* bias;    // (C) or null
  const void* skip;     // (N, Ho, Wo, C) or null
  void* out;            // (N, Ho + 2·pad, Wo + 2·pad, C)
  void* plain;          // (N, Ho, Wo, C) or null
  void* pooled;         // (N, Ho/2, Wo/2, C) or null
  int N, C, H, W, Ho, Wo, pad, resample;   // resample: 0 none, 1 2×2 max, 2 ×2 nearest
  bool relu;
};

struct NormAffineArgs {
  GlueDtype dtype;
  const void* x;        // (N, P, C), P positions
  float2* partials;     // [N][splits][C] (Σ(x − r), Σ(x − r)²), r = the first position's value
  float* scale;         // (N, C)
  float* shift;
  int N, C, P, splits;
  float eps;
};

struct AdaAttnStatsArgs {
  GlueDtype dtype;
  const void* o;        // (B, H, N, D): [E v (D/2), E v² (D/2)] per head
  const void* x;        // (B, N, C) content features, C = H·D/2
  const float* x_scale;   // (B, C): norm(x) = x·scale + shift
  const float* x_shift;
  const float* s_mean;    // (B, C) the painting's μ, σ
  const float* s_std;
  const float* ln_weight;   // (C)
  const float* ln_bias;
  void* y;              // (B, N, C)
  void* y_ln;
  int B, H, N, D, C;
  float eps, ln_eps;
};

struct DetailUpscaleArgs {
  const float* content;   // (N, 3, H, W)
  const float* diff;      // (N, 3, h, w)
  float* wide;            // (N, 3, h, W) scratch: diff resized along W
  float* out;             // (N, 3, H, W)
  int N, H, W, h, w;
};

int norm_affine_splits(int positions);
void launch_feature_pad(const FeaturePadArgs& a, cudaStream_t stream);
void launch_norm_affine(const NormAffineArgs& a, cudaStream_t stream);
void launch_adaattn_stats(const AdaAttnStatsArgs& a, cudaStream_t stream);
void launch_detail_upscale(const DetailUpscaleArgs& a, cudaStream_t stream);

}  // namespace styleforge
