// Host-side interface of the flash-style attention forward (csrc/attention/attention.cu).
//
// Plain C++ with CUDA runtime types only, no torch: attention_binding.cpp checks the tensors,
// fills AttentionArgs and calls attention_launch on the current stream. Semantics (softmax over
// keys in fp32, key padding mask, a fully masked query row → zeros) are those of
// styleforge/kernels/reference/attention.py, the pure-PyTorch twin.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace styleforge {

// The element type of q, k, v and the output.
enum class AttnDtype : int { kFloat16 = 1, kBFloat16 = 2 };

struct AttentionArgs {
  AttnDtype dtype = AttnDtype::kBFloat16;
  const void* q = nullptr;                  // (B, H, Nq, D) contiguous, 16-byte aligned
  const void* k = nullptr;                  // (B, H, Nk, D) contiguous, 16-byte aligned
  const void* v = nullptr;                  // (B, H, Nk, D) contiguous, 16-byte aligned
  const uint8_t* key_padding_mask = nullptr;  // (B, Nk) bytes, non-zero = ignore the key; or null
  void* out = nullptr;                      // (B, H, Nq, D) contiguous, q's dtype (fp32 with out_fp32)
  bool out_fp32 = false;                    // write fp32 (attention_sm90 only; attention_launch refuses it)
  int64_t B = 0, H = 0, Nq = 0, Nk = 0;     // Nk may be 0 (every row is then fully masked: zeros)
  int D = 0;                                // 32, 64 or 128
  float scale = 1.f;                        // applied to q·k before the softmax
};

// Whether a kernel exists for this head dim.
bool attention_supported(int head_dim);

// Enqueue the forward on `stream`. Returns cudaErrorInvalidValue for an unsupported
// configuration, else the launch error (cudaSuccess when the launch was accepted).
cudaError_t attention_launch(const AttentionArgs& args, cudaStream_t stream);

}  // namespace styleforge
