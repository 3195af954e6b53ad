// CUDA implementation of styleforge::conv9x9 for the torch dispatcher.
//
// As in bindings.cpp, the schema is defined in Python (styleforge/kernels/ops_conv.py) and this
// file only adds the CUDA kernel with TORCH_LIBRARY_IMPL. Argument rules mirror
// reference_conv.check_args and name the argument; the head's x is made dense channels_last and
// 16-byte aligned (a copy only when it is not already) while conv1 reads x through its strides,
// the kernel launches on the current stream under a CUDAGuard, and the launch is checked.
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

// scale or shift: a float32 (N, 32) tensor on x's device, made contiguous.
at::Tensor norm_vector(const char* arg, const at::Tensor& t, const at::Tensor& x) {
  TORCH_CHECK(t.dim() == 2 && t.size(0) == x.size(0) && t.size(1) == 32 && t.scalar_type() == at::kFloat &&
                  t.device() == x.device(),
              "conv9x9: ", arg, " must be a float32 (", x.size(0), ", 32) tensor on ", x.device(), ", got ",
              t.scalar_type(), " ", t.sizes(), " on ", t.device());
  return t.contiguous();
}

at::Tensor conv9x9_cuda(const at::Tensor& x_in, const at::Tensor& weight_in, const std::optional<at::Tensor>& bias,
                        bool out_float32, const std::optional<at::Tensor>& scale_in,
                        const std::optional<at::Tensor>& shift_in, int64_t pad) {
  TORCH_CHECK(x_in.is_cuda(), "conv9x9: x must be a CUDA tensor, got ", x_in.device());
  TORCH_CHECK(x_in.dim() == 4, "conv9x9: x must be 4-D (N, C, H, W), got shape ", x_in.sizes());
  TORCH_CHECK(weight_in.dim() == 4 && weight_in.size(2) == 9 && weight_in.size(3) == 9,
              "conv9x9: weight must have shape (Cout, Cin, 9, 9), got ", weight_in.sizes());
  const at::ScalarType type = weight_in.scalar_type();
  TORCH_CHECK(type == at::kHalf || type == at::kBFloat16, "conv9x9: weight dtype ", type,
              " is unsupported (float16, bfloat16)");
  const bool x_float32 = x_in.scalar_type() == at::kFloat && weight_in.size(1) == 3;
  TORCH_CHECK(x_in.scalar_type() == type || x_float32, "conv9x9: x dtype ", x_in.scalar_type(),
              " must equal the weight dtype ", type, " (or be float32 for Cin=3)");
  TORCH_CHECK(weight_in.device() == x_in.device(), "conv9x9: weight is on ", weight_in.device(), ", x on ",
              x_in.device());
  const int64_t cout = weight_in.size(0), cin = weight_in.size(1);
  TORCH_CHECK(x_in.size(1) == cin, "conv9x9: x has ", x_in.size(1), " channels but weight expects Cin=", cin);
  TORCH_CHECK(conv9x9_supported(static_cast<int>(cin), static_cast<int>(cout), false),
              "conv9x9: (Cin, Cout) = (", cin, ", ", cout, ") is unsupported; supported: (3, 32), (32, 3) "
              "(other layers use cuDNN)");
  TORCH_CHECK(!out_float32 || conv9x9_supported(static_cast<int>(cin), static_cast<int>(cout), true),
              "conv9x9: out_float32 is only supported for (Cin, Cout) = (32, 3)");
  TORCH_CHECK(pad == 0 || pad == 4, "conv9x9: pad must be 0 or 4, got ", pad);
  const int64_t n = x_in.size(0), h = x_in.size(2), w = x_in.size(3);
  TORCH_CHECK(h + 2 * pad >= 9 && w + 2 * pad >= 9, "conv9x9: x padded by ", pad,
              " must be at least 9x9 (H, W >= ", 9 - 2 * pad, "), got ", h, "x", w);
  TORCH_CHECK(h > pad && w > pad, "conv9x9: a reflection pad of ", pad, " needs H, W > ", pad, ", got ", h, "x", w);
  const bool has_scale = scale_in.has_value() && scale_in->defined();
  const bool has_shift = shift_in.has_value() && shift_in->defined();
  TORCH_CHECK(has_scale == has_shift, "conv9x9: scale and shift come together (both or neither)");
  TORCH_CHECK(!has_scale || cin == 32, "conv9x9: scale/shift (the prologue norm) are only supported for Cin=32");
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
  at::Tensor x = x_in;
  if (cin == 32) {
    x = x_in.contiguous(at::MemoryFormat::ChannelsLast);
    if (!aligned16(x)) x = x.clone(at::MemoryFormat::ChannelsLast);   // a view at an odd offset
  }
  const at::Tensor scale = has_scale ? norm_vector("scale", *scale_in, x) : at::Tensor();
  const at::Tensor shift = has_shift ? norm_vector("shift", *shift_in, x) : at::Tensor();
  const at::Tensor weight = weight_in.contiguous();
  at::Tensor out = at::empty({n, cout, h + 2 * pad - 8, w + 2 * pad - 8}, x.options()
                                                           .dtype(out_float32 ? at::kFloat : type)
                                                           .memory_format(at::MemoryFormat::ChannelsLast));
  if (out.numel() == 0) return out;

  Conv9x9Args args;
  args.dtype = type == at::kBFloat16 ? ConvDtype::kBFloat16 : ConvDtype::kFloat16;
  args.x = x.data_ptr();
  args.x_float32 = x_float32;
  args.stride_n = x.stride(0);
  args.stride_c = x.stride(1);
  args.stride_h = x.stride(2);
  args.stride_w = x.stride(3);
  args.pad = static_cast<int>(pad);
  args.scale = has_scale ? scale.data_ptr<float>() : nullptr;
  args.shift = has_shift ? shift.data_ptr<float>() : nullptr;
  args.weight = weight.data_ptr();
  args.bias = b32.defined() ? b32.data_ptr<float>() : nullptr;
  args.out = out.data_ptr();
  args.out_float32 = out_float32;
  args.N = n;
  args.H = h;
  args.W = w;
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
