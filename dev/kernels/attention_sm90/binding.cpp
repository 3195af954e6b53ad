// Dev-only torch binding of attention_sm90_launch for probe.py (torch.utils.cpp_extension.load).
// Not the package's binding: bindings_attention.cpp owns the op; this only turns tensors into
// AttentionArgs, checks what the kernel assumes, and launches on the current stream.
#include <cstdint>
#include <optional>

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

#include "attention_sm90.h"

namespace {

styleforge::AttentionArgs make_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const std::optional<at::Tensor>& mask, double scale, at::Tensor* out) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda(), "q, k, v must be CUDA tensors");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && k.sizes() == v.sizes(), "q (B,H,Nq,D), k = v (B,H,Nk,D)");
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous(), "q, k, v must be contiguous");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(), "one dtype for q, k, v");
  styleforge::AttentionArgs a;
  a.dtype = q.scalar_type() == at::kBFloat16 ? styleforge::AttnDtype::kBFloat16 : styleforge::AttnDtype::kFloat16;
  TORCH_CHECK(q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf, "dtype must be bf16 or fp16");
  a.q = q.data_ptr();
  a.k = k.data_ptr();
  a.v = v.data_ptr();
  a.B = q.size(0);
  a.H = q.size(1);
  a.Nq = q.size(2);
  a.Nk = k.size(2);
  a.D = static_cast<int>(q.size(3));
  a.scale = static_cast<float>(scale);
  if (mask.has_value() && mask->defined()) {
    TORCH_CHECK(mask->scalar_type() == at::kBool && mask->is_contiguous() && mask->dim() == 2 &&
                    mask->size(0) == a.B && mask->size(1) == a.Nk,
                "key_padding_mask must be a contiguous bool (B, Nk)");
    a.key_padding_mask = reinterpret_cast<const uint8_t*>(mask->data_ptr<bool>());
  }
  if (out) a.out = out->data_ptr();
  return a;
}

at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   const std::optional<at::Tensor>& mask, double scale, bool out_fp32) {
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor out = out_fp32 ? at::empty_like(q, q.options().dtype(at::kFloat)) : at::empty_like(q);
  styleforge::AttentionArgs a = make_args(q, k, v, mask, scale, &out);
  a.out_fp32 = out_fp32;
  TORCH_CHECK(styleforge::attention_sm90_supported(a), "attention_sm90: configuration not supported");
  const cudaError_t err = styleforge::attention_sm90_launch(a, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "attention_sm90_launch: ", cudaGetErrorString(err));
  return out;
}

bool supported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale) {
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor out = at::empty_like(q);
  return styleforge::attention_sm90_supported(make_args(q, k, v, std::nullopt, scale, &out));
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "sm_90a attention forward (dev)");
  m.def("supported", &supported, "attention_sm90_supported for these tensors (dev)");
}
