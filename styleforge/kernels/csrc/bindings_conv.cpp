// CUDA implementation of styleforge::conv9x9 for the torch dispatcher.
//
// As in bindings.cpp, the schema is defined in Python (styleforge/kernels/ops_conv.py) and this
// file only adds the CUDA kernel with TORCH_LIBRARY_IMPL. Argument rules mirror
// reference_conv.check_args and name the argument; x is made dense channels_last and 16-byte
// aligned (a copy only when it is not already), the kernel launches on the current stream under
// a CUDAGuard, and the launch is checked.
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

#include "device_info.h"
#include "conv9x9.h"

namespace styleforge {
namespace {


bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

at::Tensor conv9x9_cuda(const at::Tensor& x_in, const at::Tensor& weight_in, const std::optional<at::Tensor>& bias,
                        bool out_float32) {
  TORCH_CHECK(x_in.is_cuda(), "conv9x9: x must be a CUDA tensor, got ", x_in.device());
  TORCH_CHECK(x_in.dim() == 4, "conv9x9: x must be 4-D (N, C, H, W), got shape ", x_in.sizes());
  const at::ScalarType type = x_in.scalar_type();
  TORCH_CHECK(type == at::kHalf || type == at::kBFloat16, "conv9x9: x dtype ", type,
              " is unsupported (float16, bfloat16)");
  TORCH_CHECK(weight_in.dim() == 4 && weight_in.size(2) == 9 && weight_in.size(3) == 9,
              "conv9x9: weight must have shape (Cout, Cin, 9, 9), got ", weight_in.sizes());
  TORCH_CHECK(weight_in.scalar_type() == type, "conv9x9: weight dtype ", weight_in.scalar_type(),
              " must equal x dtype ", type);
  TORCH_CHECK(weight_in.device() == x_in.device(), "conv9x9: weight is on ", weight_in.device(), ", x on ",
              x_in.device());
  const int64_t cout = weight_in.size(0), cin = weight_in.size(1);
  TORCH_CHECK(x_in.size(1) == cin, "conv9x9: x has ", x_in.size(1), " channels but weight expects Cin=", cin);
  TORCH_CHECK(conv9x9_supported(static_cast<int>(cin), static_cast<int>(cout), false),
              "conv9x9: (Cin, Cout) = (", cin, ", ", cout, ") is unsupported; supported: (3, 32), (32, 3) "
              "(other layers use cuDNN)");
  TORCH_CHECK(!out_float32 || conv9x9_supported(static_cast<int>(cin), static_cast<int>(cout), true),
              "conv9x9: out_float32 is only supported for (Cin, Cout) = (32, 3)");
  const int64_t n = x_in.size(0), hp = x_in.size(2), wp = x_in.size(3);
  TORCH_CHECK(hp >= 9 && wp >= 9, "conv9x9: x must be pre-padded to at least 9x9 (H, W >= 9), got ", hp, "x", wp);
  at::Tensor b32;
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == cout, "conv9x9: bias must have shape (", cout, ",), got ",
                bias->sizes());
    TORCH_CHECK(bias->is_floating_point(), "conv9x9: bias must be a floating tensor, got ", bias->scalar_type());
    TORCH_CHECK(bias->device() == x_in.device(), "conv9x9: bias is on ", bias->device(), ", x on ",
                x_in.device());
    b32 = bias->to(at::kFloat).contiguous();
  }

  const c10::cuda::CUDAGuard guard(x_in.device());
  at::Tensor x = x_in.contiguous(at::MemoryFormat::ChannelsLast);
  if (!aligned16(x)) x = x.clone(at::MemoryFormat::ChannelsLast);   // a view at an odd offset
  const at::Tensor weight = weight_in.contiguous();
  at::Tensor out = at::empty({n, cout, hp - 8, wp - 8}, x.options()
                                                           .dtype(out_float32 ? at::kFloat : type)
                                                           .memory_format(at::MemoryFormat::ChannelsLast));
  if (out.numel() == 0) return out;

  Conv9x9Args args;
  args.dtype = type == at::kBFloat16 ? ConvDtype::kBFloat16 : ConvDtype::kFloat16;
  args.x = x.data_ptr();
  args.weight = weight.data_ptr();
  args.bias = b32.defined() ? b32.data_ptr<float>() : nullptr;
  args.out = out.data_ptr();
  args.out_float32 = out_float32;
  args.N = n;
  args.Hp = hp;
  args.Wp = wp;
  args.cin = static_cast<int>(cin);
  args.cout = static_cast<int>(cout);
  args.num_sms = multiprocessor_count(x.get_device());
  C10_CUDA_CHECK(conv9x9_launch(args, c10::cuda::getCurrentCUDAStream()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace
}  // namespace styleforge

TORCH_LIBRARY_IMPL(styleforge, CUDA, m) {
  m.impl("conv9x9", &styleforge::conv9x9_cuda);
}
