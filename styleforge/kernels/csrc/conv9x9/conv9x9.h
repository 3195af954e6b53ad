// Host-side interface of the tensor-core 9×9 convolutions (csrc/conv9x9/conv9x9.cu).
//
// Plain C++ with CUDA runtime types only, no torch: conv9x9_binding.cpp checks the tensors, fills
// Conv9x9Args and calls conv9x9_launch on the current stream. The op's semantics are those of
// styleforge/kernels/reference/conv9x9.py, the pure-PyTorch twin: a VALID 9×9 convolution, stride 1,
// of x' = reflection_pad(pad)(round(relu(x·scale + shift))) (the norm only for 32 → 3, the head;
// x' = round(x) without it), so with pad = 4 the layer's own pad, and the InstanceNorm before the
// head, cost no pass over memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "../norm_sums/norm_sums.h"  // NormHandoff, norm_state_bytes

namespace styleforge {

// The element type of x and weight (and of the output unless out_float32).
enum class ConvDtype : int { kFloat16 = 1, kBFloat16 = 2 };

struct Conv9x9Args {
  ConvDtype dtype = ConvDtype::kBFloat16;
  // x: 32 → 3: (N, H, W, 32) dense NHWC, 16-byte aligned, x's dtype. 3 → 32: any strides
  // (element strides below), x's dtype or float32 (x_float32: cast on load, as .to(dtype) does).
  const void* x = nullptr;
  bool x_float32 = false;
  int64_t stride_n = 0, stride_c = 0, stride_h = 0, stride_w = 0;   // 3 → 32 only
  int pad = 0;                   // 0 (x is already padded) or 4 (reflection pad in the addressing)
  const float* scale = nullptr;  // 32 → 3 only: (N, 32) fp32, or null (no norm) ...
  const float* shift = nullptr;  // ... with shift: x' = relu(x·scale + shift) before the pad
  const void* weight = nullptr;  // (Cout, Cin, 9, 9) contiguous, 16-byte aligned, x's dtype
  // Optional, the same weight as the kernel's B operand in shared memory, copied by every CTA
  // instead of rearranging `weight` (16-byte aligned): for 3 → 32 on the Hopper kernel
  // (conv9x9_sm90.h) reference_conv.pack_conv1_weight's 20,480 bytes, for the head (32 → 3)
  // pack_head_weight's 23,040. conv9x9.cu's 3 → 32 kernel reads `weight`.
  const void* weight_b = nullptr;
  const float* bias = nullptr;   // (Cout,) fp32, or null
  void* out = nullptr;           // (N, H + 2·pad − 8, W + 2·pad − 8, Cout) dense NHWC, 16-byte aligned
  bool out_float32 = false;      // fp32 output (only the 32→3 kernel has it)
  int64_t N = 0, H = 0, W = 0;   // x's sizes: H + 2·pad, W + 2·pad >= 9, and H, W > pad
  int cin = 0, cout = 0;
  int num_sms = 132;             // sizes the persistent grid; any positive value is correct
  int64_t l2_bytes = 0;          // the device's L2 size (bindings): see cache_hints.cuh; 0: no hints
  // 3 → 32 only, optional: IN1's statistics of the stored output, added to norm_state (a zeroed
  // state of norm_state_bytes(N, 32); launches that may overlap need separate states). norm.scale
  // set: the launch also writes norm.scale, norm.shift ((N, 32) fp32: InstanceNorm(out) = out·scale +
  // shift) and leaves the state zero; null: the sums stay in it for the consumer's in_state.
  NormHandoff norm;
  void* norm_state = nullptr;
  // 32 → 3 only, optional, instead of scale/shift: the prologue norm from its producer's sums in
  // this state (Conv3x3Args::in_state), with the norm's weight, bias ((32,) fp32 or null) and eps;
  // read and left zero.
  void* in_state = nullptr;
  const float* in_norm_weight = nullptr;
  const float* in_norm_bias = nullptr;
  float in_eps = 1e-5f;
  bool pdl = false;              // programmatic dependent launch (Hopper: set by the bindings)
};

// Whether a kernel exists for these channel counts and output type: (3→32) and (32→3, either output).
bool conv9x9_supported(int cin, int cout, bool out_float32);

// Whether conv9x9_launch takes `args`: the channel counts, pad, sizes, the optional parts' rules
// and 16-byte alignment of the weight (the Hopper conv1 kernel, conv9x9_sm90.h, takes the same).
bool conv9x9_args_valid(const Conv9x9Args& args);

// Enqueue the convolution on `stream`. Returns cudaErrorInvalidValue for an unsupported
// configuration (including a weight that is not 16-byte aligned, and planes of over 2^31 pixels),
// else the launch error (cudaSuccess when the launch was accepted).
cudaError_t conv9x9_launch(const Conv9x9Args& args, cudaStream_t stream);

// For graph_io.cpp, which points a captured launch of these kernels at each call's own image or
// output: what a kernel function is (every launch here passes one argument, the kernels' Params) ...
enum class Conv9x9Role : int {
  kNone = 0,
  kImage = 1,    // a 3 → 32 kernel: reads the image through Params::x
  kOutput = 2,   // a 32 → 3 kernel (the head): writes the output through Params::out
};
Conv9x9Role conv9x9_kernel_role(const void* func);   // this file's mma.sync kernels
// ... and where that argument keeps the two pointers.
struct Conv9x9ParamsLayout {
  size_t size, x_offset, out_offset;
};
Conv9x9ParamsLayout conv9x9_params_layout();

}  // namespace styleforge
