// Host-side interface of the fused InstanceNorm kernels (csrc/instance_norm/instance_norm.cu).
//
// Plain C++ with CUDA runtime types only, no torch: instance_norm_binding.cpp fills InstanceNormArgs from
// tensors after checking them, asks for the workspace size, allocates it with the caching
// allocator, and calls instance_norm_launch on the current stream. The op's semantics are
// documented in styleforge/kernels/reference/instance_norm.py (the pure-PyTorch twin).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace styleforge {

// The element type of x, residual and the output; the one dtype switch is in the .cu.
enum class ScalarKind : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

struct InstanceNormArgs {
  ScalarKind dtype = ScalarKind::kFloat32;
  bool channels_last = false;   // x and out are NHWC-dense; otherwise both are NCHW-contiguous

  const void* x = nullptr;      // (N, C, H, W), dense in the layout above
  void* out = nullptr;          // (N, C, H*upsample + 2*pad, W*upsample + 2*pad), same layout
  const float* weight = nullptr;  // (C,) fp32 or null (= 1)
  const float* bias = nullptr;    // (C,) fp32 or null (= 0)
  const void* residual = nullptr; // (N, C, H, W), any strides, or null
  int64_t res_stride[4] = {0, 0, 0, 0};  // residual strides in elements: N, C, H, W

  int64_t N = 0, C = 0, H = 0, W = 0;
  int pad = 0;                  // 0..4, smaller than H*upsample and W*upsample
  int upsample = 1;             // 1 or 2
  bool relu = false;
  double eps = 1e-5;
  int num_sms = 132;            // sizes the grids; any positive value is correct
  // Which kernels: kAuto picks the single cooperative launch for channels_last tensors in the size
  // range where it measured faster (6–24 MB), else the three launches; the others force one (kSingle falls
  // back to three launches where it cannot run). Benchmarks and tests set it; the op reads it from
  // STYLEFORGE_INSTANCE_NORM_PATH.
  enum class Path : int { kAuto = 0, kSplit = 1, kSingle = 2 };
  Path path = Path::kAuto;
};

// Bytes of scratch instance_norm_launch needs (per-block partial sums, per-plane statistics).
size_t instance_norm_workspace_bytes(const InstanceNormArgs& args);

// Enqueue the statistics, finalize and apply kernels on `stream`. `workspace` must hold
// instance_norm_workspace_bytes(args) bytes, 16-byte aligned; it needs no initialisation.
// Returns the first launch error (cudaSuccess when all launches were accepted).
cudaError_t instance_norm_launch(const InstanceNormArgs& args, void* workspace, cudaStream_t stream);

}  // namespace styleforge
