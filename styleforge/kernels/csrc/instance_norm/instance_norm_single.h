// The single-launch InstanceNorm path (instance_norm_single.cu), as instance_norm.cu calls it.
// Pure CUDA runtime types, no torch.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "instance_norm.h"

namespace styleforge {

// Planes (N·C) whose coefficients the single-launch kernel stages in shared memory.
constexpr int kSingleMaxPlanes = 512;

// Workspace bytes of the single-launch path, or 0 when it cannot take these args (NCHW, channels
// not a multiple of 16 bytes, misaligned pointers, N·C > kSingleMaxPlanes, int32 overflow, or a
// kernel that does not fit on an SM).
size_t instance_norm_single_workspace_bytes(const InstanceNormArgs& args);

// Enqueue the cooperative kernel; `workspace` holds instance_norm_single_workspace_bytes(args).
cudaError_t instance_norm_single_launch(const InstanceNormArgs& args, void* workspace, cudaStream_t stream);

}  // namespace styleforge
