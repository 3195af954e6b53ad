// Host-side interface of the fused 3×3 convolution (csrc/cuda/conv3x3.cu) and of the moments
// kernel that gives a cuDNN-produced tensor the same InstanceNorm hand-off.
//
// Plain C++ with CUDA runtime types only, no torch: bindings_conv3x3.cpp checks the tensors and
// fills the argument structs. Semantics (the one statement of them): the pure-PyTorch twin
// styleforge/kernels/reference_conv3x3.py. In short, for 128 → 128 channels, NHWC, batch N:
//   a   = x·scale + shift (+ residual), ReLU if asked, rounded to x's dtype   (the prologue)
//   out = conv3x3(reflection_pad1(a), W)                                      (no bias)
//   (out_scale, out_shift) so that InstanceNorm(out; norm_weight, norm_bias, eps)
//        = out·out_scale + out_shift per (sample, channel), from fp32 statistics of the rounded out.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "conv9x9.h"   // ConvDtype

namespace styleforge {

constexpr int kConv3x3Channels = 128;
// Output tile of one thread block: 8 rows × 16 columns. The statistics workspace holds one
// (sum, M2) pair per (sample, tile, channel).
constexpr int kConv3x3TileH = 8, kConv3x3TileW = 16;

// The InstanceNorm hand-off: per-tile partial moments → (scale, shift) per (sample, channel).
struct NormHandoff {
  const float* weight = nullptr;   // (C,) fp32 or null (= 1)
  const float* bias = nullptr;     // (C,) fp32 or null (= 0)
  float eps = 1e-5f;
  float* scale = nullptr;          // (N, C) fp32, written
  float* shift = nullptr;          // (N, C) fp32, written
};

struct Conv3x3Args {
  ConvDtype dtype = ConvDtype::kBFloat16;
  const void* x = nullptr;          // (N, H, W, 128) dense NHWC, 16-byte aligned
  const void* weight = nullptr;     // packed (9, 2, 128, 64): see reference_conv3x3.pack_weight
  const float* scale = nullptr;     // (N, 128) fp32 prologue affine, or null (identity) ...
  const float* shift = nullptr;     // ... with shift (both or neither)
  const void* residual = nullptr;   // (N, H, W, 128) dense NHWC, or null
  bool relu = false;
  void* act = nullptr;              // (N, H, W, 128): the prologue's output a, or null (not kept)
  void* out = nullptr;              // (N, H, W, 128) dense NHWC
  NormHandoff norm;
  int64_t N = 0, H = 0, W = 0;      // H, W >= 2 (reflection pad 1)
};

struct MomentsArgs {
  ConvDtype dtype = ConvDtype::kBFloat16;
  const void* x = nullptr;          // (N, H, W, 128) dense NHWC, 16-byte aligned
  NormHandoff norm;
  int64_t N = 0, H = 0, W = 0;
};

// Tiles per image, and the workspace both launches need (16-byte aligned, no initialisation).
int64_t conv3x3_tiles(int64_t H, int64_t W);
size_t conv3x3_workspace_bytes(int64_t N, int64_t H, int64_t W);

// Whether the current device runs the fused convolution (sm_90a code: compute capability 9.0).
// The moments launch runs on any GPU.
bool conv3x3_supported();

// Enqueue the convolution and the statistics hand-off on `stream` (two kernels). Returns
// cudaErrorInvalidValue for an unsupported configuration, else the first launch error.
cudaError_t conv3x3_launch(const Conv3x3Args& args, void* workspace, cudaStream_t stream);

// Enqueue the moments of x and the same hand-off (two kernels): InstanceNorm(x) = x·scale + shift.
cudaError_t moments_launch(const MomentsArgs& args, void* workspace, cudaStream_t stream);

}  // namespace styleforge
