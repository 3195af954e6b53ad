// CUDA implementation of styleforge::instance_norm for the torch dispatcher.
//
// The schema is NOT declared here: styleforge/kernels/instance_norm.py defines it with
// torch.library.define, so CPU-only installs have the op (reference impl, fake impl, autograd)
// without compiling anything, and this file only adds the CUDA kernel with TORCH_LIBRARY_IMPL
// (pytorch/extension-cpp keeps the schema in TORCH_LIBRARY; one definition in Python is the
// only way both paths can share it). Argument rules mirror reference.check_args and name the
// argument; kernels launch on the current stream under a CUDAGuard, and every launch is checked.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../common/device_info.h"
#include "instance_norm.h"

namespace styleforge {
namespace {

constexpr int64_t kMaxPad = 4;

ScalarKind scalar_kind(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return ScalarKind::kFloat32;
    case at::kHalf: return ScalarKind::kFloat16;
    case at::kBFloat16: return ScalarKind::kBFloat16;
    default: break;
  }
  TORCH_CHECK(false, "instance_norm: x dtype ", type, " is unsupported (float32, float16, bfloat16)");
}


// weight/bias → contiguous fp32 on x's device (a no-op for the engine, which keeps them fp32).
at::Tensor affine_param(const std::optional<at::Tensor>& t, const at::Tensor& x, const char* name) {
  if (!t.has_value() || !t->defined()) return at::Tensor();
  const int64_t channels = x.size(1);
  TORCH_CHECK(t->dim() == 1 && t->size(0) == channels, "instance_norm: ", name, " must have shape (",
              channels, ",) (one per channel of x), got ", t->sizes());
  TORCH_CHECK(t->is_floating_point(), "instance_norm: ", name, " must be a floating tensor, got ",
              t->scalar_type());
  TORCH_CHECK(t->device() == x.device(), "instance_norm: ", name, " is on ", t->device(), ", x on ",
              x.device());
  return t->to(at::kFloat).contiguous();
}

// STYLEFORGE_INSTANCE_NORM_PATH = auto (default) | split | single: read at every call (a getenv
// is cheap next to a launch) so a benchmark can compare the two paths in one process.
InstanceNormArgs::Path kernel_path() {
  const char* v = std::getenv("STYLEFORGE_INSTANCE_NORM_PATH");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return InstanceNormArgs::Path::kAuto;
  if (std::strcmp(v, "split") == 0) return InstanceNormArgs::Path::kSplit;
  if (std::strcmp(v, "single") == 0) return InstanceNormArgs::Path::kSingle;
  TORCH_CHECK(false, "STYLEFORGE_INSTANCE_NORM_PATH must be auto, split or single, got '", v, "'");
}

at::Tensor instance_norm_cuda(const at::Tensor& x_in, const std::optional<at::Tensor>& weight,
                              const std::optional<at::Tensor>& bias,
                              const std::optional<at::Tensor>& residual, double eps, bool relu,
                              int64_t pad, int64_t upsample) {
  TORCH_CHECK(x_in.is_cuda(), "instance_norm: x must be a CUDA tensor, got ", x_in.device());
  TORCH_CHECK(x_in.dim() == 4, "instance_norm: x must be 4-D (N, C, H, W), got shape ", x_in.sizes());
  const ScalarKind kind = scalar_kind(x_in.scalar_type());
  const int64_t n = x_in.size(0), c = x_in.size(1), h = x_in.size(2), w = x_in.size(3);
  TORCH_CHECK(h >= 1 && w >= 1, "instance_norm: x must have H, W >= 1, got H=", h, ", W=", w);
  TORCH_CHECK(upsample == 1 || upsample == 2, "instance_norm: upsample must be 1 or 2, got ", upsample);
  TORCH_CHECK(pad >= 0 && pad <= kMaxPad, "instance_norm: pad must be in 0..", kMaxPad, ", got ", pad);
  TORCH_CHECK(pad < h * upsample && pad < w * upsample, "instance_norm: reflection pad ", pad,
              " must be smaller than the upsampled plane ", h * upsample, "x", w * upsample,
              " (pad < H·upsample and pad < W·upsample)");
  TORCH_CHECK(eps >= 0.0 && std::isfinite(eps), "instance_norm: eps must be finite and >= 0, got ", eps);
  const at::Tensor w32 = affine_param(weight, x_in, "weight");
  const at::Tensor b32 = affine_param(bias, x_in, "bias");
  at::Tensor res;
  if (residual.has_value() && residual->defined()) {
    res = *residual;
    TORCH_CHECK(res.sizes() == x_in.sizes(), "instance_norm: residual must have x's shape ", x_in.sizes(),
                ", got ", res.sizes());
    TORCH_CHECK(res.scalar_type() == x_in.scalar_type(), "instance_norm: residual dtype ",
                res.scalar_type(), " must equal x dtype ", x_in.scalar_type());
    TORCH_CHECK(res.device() == x_in.device(), "instance_norm: residual is on ", res.device(), ", x on ",
                x_in.device());
  }

  const c10::cuda::CUDAGuard guard(x_in.device());
  // Same rule as reference.output_channels_last: channels_last in, channels_last out.
  const bool channels_last =
      x_in.is_contiguous(at::MemoryFormat::ChannelsLast) && !x_in.is_contiguous();
  const at::Tensor x = channels_last ? x_in : x_in.contiguous();
  const int64_t ho = h * upsample + 2 * pad, wo = w * upsample + 2 * pad;
  at::Tensor out = at::empty(
      {n, c, ho, wo},
      x.options().memory_format(channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous));
  if (out.numel() == 0) return out;

  InstanceNormArgs args;
  args.dtype = kind;
  args.channels_last = channels_last;
  args.x = x.data_ptr();
  args.out = out.data_ptr();
  args.weight = w32.defined() ? w32.data_ptr<float>() : nullptr;
  args.bias = b32.defined() ? b32.data_ptr<float>() : nullptr;
  if (res.defined()) {
    args.residual = res.data_ptr();
    for (int d = 0; d < 4; ++d) args.res_stride[d] = res.stride(d);
  }
  args.N = n;
  args.C = c;
  args.H = h;
  args.W = w;
  args.pad = static_cast<int>(pad);
  args.upsample = static_cast<int>(upsample);
  args.relu = relu;
  args.eps = eps;
  args.num_sms = multiprocessor_count(x.get_device());
  args.path = kernel_path();

  const size_t bytes = instance_norm_workspace_bytes(args);
  TORCH_CHECK(bytes > 0, "instance_norm: sizes out of the kernel's range (N=", n, ", C=", c, ", H=", h,
              ", W=", w, ")");
  // The caching allocator returns ≥ 512-byte aligned blocks, as the launcher needs.
  at::Tensor workspace = at::empty({static_cast<int64_t>(bytes)}, x.options().dtype(at::kByte));
  C10_CUDA_CHECK(instance_norm_launch(args, workspace.data_ptr(), c10::cuda::getCurrentCUDAStream()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace
}  // namespace styleforge

TORCH_LIBRARY_IMPL(styleforge, CUDA, m) {
  m.impl("instance_norm", &styleforge::instance_norm_cuda);
}
