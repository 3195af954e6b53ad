// Host-side interface of the tensor-core 9×9 convolutions (csrc/cuda/conv9x9.cu).
//
// Plain C++ with CUDA runtime types only, no torch: bindings_conv.cpp checks the tensors, fills
// Conv9x9Args and calls conv9x9_launch on the current stream. The op's semantics (a VALID 9×9
// convolution, stride 1, on an input that is already padded) are those of
// styleforge/kernels/reference_conv.py, the pure-PyTorch twin.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace styleforge {

// The element type of x and weight (and of the output unless out_float32).
enum class ConvDtype : int { kFloat16 = 1, kBFloat16 = 2 };

struct Conv9x9Args {
  ConvDtype dtype = ConvDtype::kBFloat16;
  const void* x = nullptr;       // (N, Hp, Wp, Cin) dense NHWC, 16-byte aligned
  const void* weight = nullptr;  // (Cout, Cin, 9, 9) contiguous, x's dtype
  const float* bias = nullptr;   // (Cout,) fp32, or null
  void* out = nullptr;           // (N, Hp - 8, Wp - 8, Cout) dense NHWC, 16-byte aligned
  bool out_float32 = false;      // fp32 output (only the 32→3 kernel has it)
  int64_t N = 0, Hp = 0, Wp = 0; // Hp, Wp >= 9
  int cin = 0, cout = 0;
  int num_sms = 132;             // sizes the persistent grid; any positive value is correct
};

// Whether a kernel exists for these channel counts and output type: (3→32) and (32→3, either output).
bool conv9x9_supported(int cin, int cout, bool out_float32);

// Enqueue the convolution on `stream`. Returns cudaErrorInvalidValue for an unsupported
// configuration, else the launch error (cudaSuccess when the launch was accepted).
cudaError_t conv9x9_launch(const Conv9x9Args& args, cudaStream_t stream);

}  // namespace styleforge
