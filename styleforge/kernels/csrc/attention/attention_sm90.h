// Host-side interface of the Hopper attention forward (csrc/attention/attention_sm90.cu): wgmma + TMA,
// sm_90a only. Same AttentionArgs and semantics as attention.h (the mma.sync kernel, which stays
// the path for every other GPU and for what this one does not take).
//
// Plain C++ with CUDA runtime types only, no torch.
#pragma once

#include <cuda_runtime.h>

#include "attention.h"

namespace styleforge {

// Whether attention_sm90_launch takes `a` on the current device: fp16/bf16, D ∈ {64, 128}, scale > 0,
// q/k/v/out 16-byte aligned, B·H and Nq, Nk below 2^31, and the binary holds sm_90a code that
// this device runs. Checks no pointer other than its alignment.
bool attention_sm90_supported(const AttentionArgs& a);

// Enqueue the forward on `stream`. cudaErrorInvalidValue when !attention_sm90_supported(a), else
// the tensor-map or launch error (cudaSuccess when the launch was accepted). Nk = 0 writes zeros.
// a.out_fp32: `out` is fp32 and receives the fp32 accumulators' result directly.
cudaError_t attention_sm90_launch(const AttentionArgs& a, cudaStream_t stream);

}  // namespace styleforge
