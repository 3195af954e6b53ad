// Host-side interface of the two 9×9 convolutions on Hopper's warpgroup MMA, sm_90a only: conv1
// (3 → 32, csrc/cuda/conv9x9_sm90.cu) and the head (32 → 3, csrc/cuda/conv9x9_head_sm90.cu). Same
// Conv9x9Args and semantics as conv9x9.h (conv9x9.cu's mma.sync kernels stay the path for every
// other GPU).
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

// The head: whether conv9x9_head_sm90_launch takes `a` (a valid 32 → 3 call, sm_90a code that this
// device runs), and the launch (cudaErrorInvalidValue when not supported).
bool conv9x9_head_sm90_supported(const Conv9x9Args& a);
cudaError_t conv9x9_head_sm90_launch(const Conv9x9Args& a, cudaStream_t stream);

}  // namespace styleforge
