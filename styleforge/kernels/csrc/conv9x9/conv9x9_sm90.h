// Host-side interface of conv1 (9×9, 3 → 32) on Hopper's warpgroup MMA (csrc/conv9x9/conv9x9_sm90.cu),
// sm_90a only. Same Conv9x9Args and semantics as conv9x9.h's 3 → 32 case (conv9x9.cu's mma.sync
// kernel stays the path for every other GPU, and the head is conv9x9.cu's on every GPU).
//
// Plain C++ with CUDA runtime types only, no torch.
#pragma once

#include <cuda_runtime.h>

#include "conv9x9.h"

namespace styleforge {

// Whether conv9x9_sm90_launch takes `a` on the current device: a valid 3 → 32 call
// (conv9x9_args_valid) and a binary holding sm_90a code that this device runs.
bool conv9x9_sm90_supported(const Conv9x9Args& a);

// Enqueue conv1 on `stream`: cudaErrorInvalidValue when !conv9x9_sm90_supported(a), else the launch
// error (cudaSuccess when the launch was accepted).
cudaError_t conv9x9_sm90_launch(const Conv9x9Args& a, cudaStream_t stream);

// Whether `func` is one of this file's kernels (all 3 → 32: Conv9x9Role::kImage, same Params).
bool conv9x9_sm90_is_kernel(const void* func);

}  // namespace styleforge
