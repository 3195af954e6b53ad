// CUDA implementation of styleforge::attention for the torch dispatcher.
//
// As in conv9x9_binding.cpp, the schema is defined in Python (styleforge/kernels/attention.py)
// and this file only adds the CUDA kernel with TORCH_LIBRARY_IMPL. Argument rules mirror
// reference/attention.py: check_args plus the kernel's own (fp16/bf16, D ∈ {32, 64, 128}) and name
// the argument; q, k, v are made contiguous and 16-byte aligned (a copy only when they are not
// already), the kernel launches on the current stream under a CUDAGuard, and the launch is checked.
#include <cmath>
#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "attention.h"
#include "attention_sm90.h"
#include "../common/device_info.h"

namespace styleforge {
namespace {

at::Tensor dense_aligned(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  if (reinterpret_cast<uintptr_t>(c.data_ptr()) % 16 != 0) c = c.clone();   // a view at an odd offset
  return c;
}

void check_qkv(const char* name, const at::Tensor& t, const at::Tensor& q) {
  TORCH_CHECK(t.is_cuda(), "attention: ", name, " must be a CUDA tensor, got ", t.device());
  TORCH_CHECK(t.dim() == 4, "attention: ", name, " must be 4-D (B, H, N, D), got shape ", t.sizes());
  TORCH_CHECK(t.scalar_type() == q.scalar_type(), "attention: ", name, " dtype ", t.scalar_type(),
              " must equal q dtype ", q.scalar_type());
  TORCH_CHECK(t.device() == q.device(), "attention: ", name, " is on ", t.device(), ", q on ", q.device());
}

// The wgmma kernel on sm_90 where it applies, unless STYLEFORGE_ATTENTION_KERNEL = mma
// (wgmma_kernel_allowed); else the mma.sync kernel.
bool use_sm90_kernel(const AttentionArgs& args) {
  return wgmma_kernel_allowed("STYLEFORGE_ATTENTION_KERNEL") && attention_sm90_supported(args);
}

at::Tensor attention_cuda(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
                          const std::optional<at::Tensor>& key_padding_mask, double scale, bool fp32_out) {
  check_qkv("q", q_in, q_in);
  check_qkv("k", k_in, q_in);
  check_qkv("v", v_in, q_in);
  const at::ScalarType type = q_in.scalar_type();
  TORCH_CHECK(type == at::kHalf || type == at::kBFloat16, "attention: dtype ", type,
              " is unsupported by the kernel (float16, bfloat16; fp32 goes through "
              "styleforge.kernels.attention(..., fp32_via_bf16=True) or the reference)");
  const int64_t b = q_in.size(0), h = q_in.size(1), nq = q_in.size(2), d = q_in.size(3), nk = k_in.size(2);
  TORCH_CHECK(k_in.sizes() == v_in.sizes(), "attention: k ", k_in.sizes(), " and v ", v_in.sizes(),
              " must have the same shape");
  TORCH_CHECK(k_in.size(0) == b && k_in.size(1) == h && k_in.size(3) == d, "attention: k/v shape ",
              k_in.sizes(), " does not match q ", q_in.sizes(), " in B, H or D");
  TORCH_CHECK(attention_supported(static_cast<int>(d)), "attention: head dim ", d,
              " is unsupported by the kernel (32, 64, 128; styleforge.kernels.attention pads smaller ones)");
  TORCH_CHECK(std::isfinite(scale), "attention: scale must be finite, got ", scale);
  at::Tensor mask;
  if (key_padding_mask.has_value() && key_padding_mask->defined()) {
    TORCH_CHECK(key_padding_mask->scalar_type() == at::kBool, "attention: key_padding_mask must be bool "
                "(True = ignore), got ", key_padding_mask->scalar_type());
    TORCH_CHECK(key_padding_mask->dim() == 2 && key_padding_mask->size(0) == b && key_padding_mask->size(1) == nk,
                "attention: key_padding_mask must have shape (B, Nk) = (", b, ", ", nk, "), got ",
                key_padding_mask->sizes());
    TORCH_CHECK(key_padding_mask->device() == q_in.device(), "attention: key_padding_mask is on ",
                key_padding_mask->device(), ", q on ", q_in.device());
    mask = key_padding_mask->contiguous();
  }

  const c10::cuda::CUDAGuard guard(q_in.device());
  const at::Tensor q = dense_aligned(q_in), k = dense_aligned(k_in), v = dense_aligned(v_in);
  at::Tensor out = at::empty({b, h, nq, d}, q.options().dtype(fp32_out ? at::kFloat : type));
  if (out.numel() == 0) return out;

  AttentionArgs args;
  args.dtype = type == at::kBFloat16 ? AttnDtype::kBFloat16 : AttnDtype::kFloat16;
  args.q = q.data_ptr();
  args.k = k.data_ptr();
  args.v = v.data_ptr();
  args.key_padding_mask = mask.defined() ? reinterpret_cast<const uint8_t*>(mask.data_ptr()) : nullptr;
  args.out = out.data_ptr();
  args.B = b;
  args.H = h;
  args.Nq = nq;
  args.Nk = nk;
  args.D = static_cast<int>(d);
  args.scale = static_cast<float>(scale);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  args.out_fp32 = fp32_out;
  if (use_sm90_kernel(args)) {
    C10_CUDA_CHECK(attention_sm90_launch(args, stream));   // writes fp32 itself when asked
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
  }
  // The mma.sync kernel writes q's dtype; fp32 output is then one conversion pass.
  args.out_fp32 = false;
  at::Tensor out16 = fp32_out ? at::empty({b, h, nq, d}, q.options()) : out;
  args.out = out16.data_ptr();
  C10_CUDA_CHECK(attention_launch(args, stream));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (fp32_out) out.copy_(out16);
  return out;
}

}  // namespace
}  // namespace styleforge

TORCH_LIBRARY_IMPL(styleforge, CUDA, m) {
  m.impl("attention", &styleforge::attention_cuda);
}
