// CUDA implementations of styleforge::feature_pad, norm_affine, adaattn_stats and detail_upscale
// for the torch dispatcher. The schemas are defined in Python (styleforge/kernels/arbitrary_glue.py,
// whose entries send only what these kernels take: fp16/bf16 channels_last feature maps with
// channels a multiple of 8, fp32 vectors, fp32 NCHW frames); the checks here repeat the shapes and
// name the argument. Launches go to the current stream under a CUDAGuard and are checked.
#include <cstdint>
#include <optional>
#include <tuple>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "arbitrary_glue.h"

namespace styleforge {
namespace {

GlueDtype glue_dtype(const at::Tensor& t, const char* op) {
  if (t.scalar_type() == at::kBFloat16) return GlueDtype::kBFloat16;
  TORCH_CHECK(t.scalar_type() == at::kHalf, op, ": x must be float16 or bfloat16, got ", t.scalar_type());
  return GlueDtype::kFloat16;
}

void check_feature_map(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK(t.is_cuda() && t.dim() == 4, op, ": ", name, " must be a 4-D CUDA tensor, got ", t.sizes(),
              " on ", t.device());
  TORCH_CHECK(t.size(1) % 8 == 0, op, ": ", name, " must have a multiple of 8 channels, got ", t.size(1));
  TORCH_CHECK(t.is_contiguous(at::MemoryFormat::ChannelsLast), op, ": ", name, " must be channels_last");
  TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, op, ": ", name, " must be 16-byte aligned");
}

const float* vector_f32(const std::optional<at::Tensor>& t, int64_t size, const at::Tensor& x, const char* op,
                        const char* name) {
  if (!t.has_value() || !t->defined()) return nullptr;
  TORCH_CHECK(t->scalar_type() == at::kFloat && t->is_contiguous() && t->numel() == size &&
                  t->device() == x.device(),
              op, ": ", name, " must be a contiguous float32 tensor of ", size, " values on ", x.device());
  return t->data_ptr<float>();
}

at::Tensor channels_last(const at::Tensor& like, int64_t n, int64_t c, int64_t h, int64_t w) {
  return at::empty({n, c, h, w}, like.options().memory_format(at::MemoryFormat::ChannelsLast));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> feature_pad_cuda(
    const at::Tensor& x, const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& skip, bool relu,
    int64_t resample, int64_t pad, bool keep, bool pool) {
  constexpr const char* op = "feature_pad";
  check_feature_map(x, op, "x");
  TORCH_CHECK(resample >= 0 && resample <= 2, op, ": resample must be 0, 1 or 2, got ", resample);
  TORCH_CHECK(pad == 0 || pad == 1, op, ": pad must be 0 or 1, got ", pad);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  TORCH_CHECK(resample != 1 || (h % 2 == 0 && w % 2 == 0), op, ": max-pooling needs even H and W");
  const int64_t ho = resample == 1 ? h / 2 : (resample == 2 ? 2 * h : h);
  const int64_t wo = resample == 1 ? w / 2 : (resample == 2 ? 2 * w : w);
  TORCH_CHECK(!pad || (ho >= 2 && wo >= 2), op, ": reflection padding needs a plane of at least 2x2");
  TORCH_CHECK(!pool || (ho % 2 == 0 && wo % 2 == 0), op, ": pool needs an even output plane");
  TORCH_CHECK(!keep || pad, op, ": keep is for padded outputs");
  const c10::cuda::CUDAGuard guard(x.device());
  FeaturePadArgs a{};
  a.dtype = glue_dtype(x, op);
  a.bias = vector_f32(bias, c, x, op, "bias");
  if (skip.has_value() && skip->defined()) {
    check_feature_map(*skip, op, "skip");
    TORCH_CHECK(skip->scalar_type() == x.scalar_type() && skip->sizes() == at::IntArrayRef({n, c, ho, wo}),
                op, ": skip must match x's dtype and the output's shape");
    a.skip = skip->data_ptr();
  }
  at::Tensor out = channels_last(x, n, c, ho + 2 * pad, wo + 2 * pad);
  at::Tensor plain = keep ? channels_last(x, n, c, ho, wo) : x.new_empty({0});
  at::Tensor pooled = pool ? channels_last(x, n, c, ho / 2, wo / 2) : x.new_empty({0});
  if (out.numel() == 0) return {out, plain, pooled};
  a.x = x.data_ptr();
  a.out = out.data_ptr();
  a.plain = keep ? plain.data_ptr() : nullptr;
  a.pooled = pool ? pooled.data_ptr() : nullptr;
  a.N = static_cast<int>(n);
  a.C = static_cast<int>(c);
  a.H = static_cast<int>(h);
  a.W = static_cast<int>(w);
  a.Ho = static_cast<int>(ho);
  a.Wo = static_cast<int>(wo);
  a.pad = static_cast<int>(pad);
  a.resample = static_cast<int>(resample);
  a.relu = relu;
  launch_feature_pad(a, c10::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out, plain, pooled};
}

std::tuple<at::Tensor, at::Tensor> norm_affine_cuda(const at::Tensor& x, double eps) {
  constexpr const char* op = "norm_affine";
  check_feature_map(x, op, "x");
  TORCH_CHECK(eps > 0, op, ": eps must be > 0, got ", eps);
  const int64_t n = x.size(0), c = x.size(1), p = x.size(2) * x.size(3);
  TORCH_CHECK(p >= 1, op, ": x has no positions");
  const c10::cuda::CUDAGuard guard(x.device());
  NormAffineArgs a{};
  a.dtype = glue_dtype(x, op);
  a.splits = norm_affine_splits(static_cast<int>(p));
  at::Tensor partials = at::empty({n, a.splits, c, 2}, x.options().dtype(at::kFloat));
  at::Tensor scale = at::empty({n, c}, x.options().dtype(at::kFloat));
  at::Tensor shift = at::empty({n, c}, x.options().dtype(at::kFloat));
  if (n == 0 || c == 0) return {scale, shift};
  a.x = x.data_ptr();
  a.partials = reinterpret_cast<float2*>(partials.data_ptr<float>());
  a.scale = scale.data_ptr<float>();
  a.shift = shift.data_ptr<float>();
  a.N = static_cast<int>(n);
  a.C = static_cast<int>(c);
  a.P = static_cast<int>(p);
  a.eps = static_cast<float>(eps);
  launch_norm_affine(a, c10::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {scale, shift};
}

std::tuple<at::Tensor, at::Tensor> adaattn_stats_cuda(
    const at::Tensor& o, const at::Tensor& x, const at::Tensor& x_scale, const at::Tensor& x_shift,
    const at::Tensor& s_mean, const at::Tensor& s_std, const at::Tensor& ln_weight, const at::Tensor& ln_bias,
    double eps, double ln_eps) {
  constexpr const char* op = "adaattn_stats";
  TORCH_CHECK(o.is_cuda() && o.dim() == 4 && o.is_contiguous(), op, ": o must be a contiguous (B, H, N, D) CUDA tensor");
  check_feature_map(x, op, "x");
  const int64_t b = o.size(0), heads = o.size(1), tokens = o.size(2), d = o.size(3), c = heads * (d / 2);
  TORCH_CHECK(d % 16 == 0 && x.size(0) == b && x.size(1) == c && x.size(2) * x.size(3) == tokens &&
                  x.scalar_type() == o.scalar_type(),
              op, ": x ", x.sizes(), " does not fit o ", o.sizes());
  TORCH_CHECK(c % 256 == 0 && c <= 1024, op, ": the kernel takes 256, 512, 768 or 1024 channels, got ", c);
  TORCH_CHECK(reinterpret_cast<uintptr_t>(o.data_ptr()) % 16 == 0, op, ": o must be 16-byte aligned");
  const c10::cuda::CUDAGuard guard(o.device());
  AdaAttnStatsArgs a{};
  a.dtype = glue_dtype(o, op);
  a.x_scale = vector_f32(x_scale, b * c, o, op, "x_scale");
  a.x_shift = vector_f32(x_shift, b * c, o, op, "x_shift");
  a.s_mean = vector_f32(s_mean, b * c, o, op, "s_mean");
  a.s_std = vector_f32(s_std, b * c, o, op, "s_std");
  a.ln_weight = vector_f32(ln_weight, c, o, op, "ln_weight");
  a.ln_bias = vector_f32(ln_bias, c, o, op, "ln_bias");
  at::Tensor y = at::empty({b, tokens, c}, o.options());
  at::Tensor y_ln = at::empty({b, tokens, c}, o.options());
  if (y.numel() == 0) return {y, y_ln};
  a.o = o.data_ptr();
  a.x = x.data_ptr();
  a.y = y.data_ptr();
  a.y_ln = y_ln.data_ptr();
  a.B = static_cast<int>(b);
  a.H = static_cast<int>(heads);
  a.N = static_cast<int>(tokens);
  a.D = static_cast<int>(d);
  a.C = static_cast<int>(c);
  a.eps = static_cast<float>(eps);
  a.ln_eps = static_cast<float>(ln_eps);
  launch_adaattn_stats(a, c10::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {y, y_ln};
}

at::Tensor detail_upscale_cuda(const at::Tensor& content, const at::Tensor& diff) {
  constexpr const char* op = "detail_upscale";
  TORCH_CHECK(content.is_cuda() && content.dim() == 4 && content.size(1) == 3 && content.is_contiguous() &&
                  content.scalar_type() == at::kFloat,
              op, ": content must be a contiguous float32 (N, 3, H, W) CUDA tensor");
  TORCH_CHECK(diff.device() == content.device() && diff.dim() == 4 && diff.size(0) == content.size(0) &&
                  diff.size(1) == 3 && diff.is_contiguous() && diff.scalar_type() == at::kFloat,
              op, ": diff must be a contiguous float32 (N, 3, h, w) tensor on content's device");
  const c10::cuda::CUDAGuard guard(content.device());
  at::Tensor out = at::empty_like(content);
  if (out.numel() == 0) return out;
  TORCH_CHECK(diff.size(2) > 0 && diff.size(3) > 0, op, ": diff has no pixels");
  at::Tensor wide = at::empty({content.size(0), 3, diff.size(2), content.size(3)}, content.options());
  DetailUpscaleArgs a{};
  a.wide = wide.data_ptr<float>();
  a.content = content.data_ptr<float>();
  a.diff = diff.data_ptr<float>();
  a.out = out.data_ptr<float>();
  a.N = static_cast<int>(content.size(0));
  a.H = static_cast<int>(content.size(2));
  a.W = static_cast<int>(content.size(3));
  a.h = static_cast<int>(diff.size(2));
  a.w = static_cast<int>(diff.size(3));
  launch_detail_upscale(a, c10::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace
}  // namespace styleforge

TORCH_LIBRARY_IMPL(styleforge, CUDA, m) {
  m.impl("feature_pad", &styleforge::feature_pad_cuda);
  m.impl("norm_affine", &styleforge::norm_affine_cuda);
  m.impl("adaattn_stats", &styleforge::adaattn_stats_cuda);
  m.impl("detail_upscale", &styleforge::detail_upscale_cuda);
}
