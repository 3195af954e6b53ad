// CUDA implementations of styleforge::conv9x9, conv9x9_norm and conv9x9_from_sums for the torch
// dispatcher.
//
// As in instance_norm_binding.cpp, the schemas are defined in Python (styleforge/kernels/conv9x9.py) and this
// file only adds the CUDA kernels with TORCH_LIBRARY_IMPL. Argument rules mirror
// reference_conv.check_args / check_norm_args and name the argument; the head's x is made dense
// channels_last and 16-byte aligned (a copy only when it is not) while conv1 reads x through its
// strides, the weight is made contiguous and 16-byte aligned (the kernels copy it to shared memory
// in 16-byte chunks), the kernel launches on the current stream under a CUDAGuard, and the launch
// is checked.
#include <cstdint>
#include <optional>
#include <tuple>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../common/device_info.h"
#include "conv9x9.h"
#include "conv9x9_sm90.h"

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

// A checked conv9x9 call on a CUDA x (under the caller's guard): the arguments for
// conv9x9_launch, with the tensors they point into.
struct Prepared {
  Conv9x9Args args;
  at::Tensor x, weight, bias, scale, shift, out;
};

Prepared prepare(const char* name, const at::Tensor& x_in, const at::Tensor& weight_in,
                 const std::optional<at::Tensor>& bias, bool out_float32, const std::optional<at::Tensor>& scale_in,
                 const std::optional<at::Tensor>& shift_in, int64_t pad) {
  TORCH_CHECK(x_in.dim() == 4, name, ": x must be 4-D (N, C, H, W), got shape ", x_in.sizes());
  TORCH_CHECK(weight_in.dim() == 4 && weight_in.size(2) == 9 && weight_in.size(3) == 9,
              name, ": weight must have shape (Cout, Cin, 9, 9), got ", weight_in.sizes());
  const at::ScalarType type = weight_in.scalar_type();
  TORCH_CHECK(type == at::kHalf || type == at::kBFloat16, name, ": weight dtype ", type,
              " is unsupported (float16, bfloat16)");
  const bool x_float32 = x_in.scalar_type() == at::kFloat && weight_in.size(1) == 3;
  TORCH_CHECK(x_in.scalar_type() == type || x_float32, name, ": x dtype ", x_in.scalar_type(),
              " must equal the weight dtype ", type, " (or be float32 for Cin=3)");
  TORCH_CHECK(weight_in.device() == x_in.device(), name, ": weight is on ", weight_in.device(), ", x on ",
              x_in.device());
  const int64_t cout = weight_in.size(0), cin = weight_in.size(1);
  TORCH_CHECK(x_in.size(1) == cin, name, ": x has ", x_in.size(1), " channels but weight expects Cin=", cin);
  TORCH_CHECK(conv9x9_supported(static_cast<int>(cin), static_cast<int>(cout), false),
              name, ": (Cin, Cout) = (", cin, ", ", cout, ") is unsupported; supported: (3, 32), (32, 3) "
              "(other layers use cuDNN)");
  TORCH_CHECK(!out_float32 || conv9x9_supported(static_cast<int>(cin), static_cast<int>(cout), true),
              name, ": out_float32 is only supported for (Cin, Cout) = (32, 3)");
  TORCH_CHECK(pad == 0 || pad == 4, name, ": pad must be 0 or 4, got ", pad);
  const int64_t n = x_in.size(0), h = x_in.size(2), w = x_in.size(3);
  TORCH_CHECK(h + 2 * pad >= 9 && w + 2 * pad >= 9, name, ": x padded by ", pad,
              " must be at least 9x9 (H, W >= ", 9 - 2 * pad, "), got ", h, "x", w);
  TORCH_CHECK(h > pad && w > pad, name, ": a reflection pad of ", pad, " needs H, W > ", pad, ", got ", h, "x", w);
  const bool has_scale = scale_in.has_value() && scale_in->defined();
  const bool has_shift = shift_in.has_value() && shift_in->defined();
  TORCH_CHECK(has_scale == has_shift, name, ": scale and shift come together (both or neither)");
  TORCH_CHECK(!has_scale || cin == 32, name, ": scale/shift (the prologue norm) are only supported for Cin=32");
  Prepared r;
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == cout, name, ": bias must have shape (", cout, ",), got ",
                bias->sizes());
    TORCH_CHECK(bias->is_floating_point(), name, ": bias must be a floating tensor, got ", bias->scalar_type());
    TORCH_CHECK(bias->device() == x_in.device(), name, ": bias is on ", bias->device(), ", x on ", x_in.device());
    r.bias = bias->to(at::kFloat).contiguous();
  }

  r.x = x_in;
  if (cin == 32) {
    r.x = x_in.contiguous(at::MemoryFormat::ChannelsLast);
    if (!aligned16(r.x)) r.x = r.x.clone(at::MemoryFormat::ChannelsLast);   // a view at an odd offset
  }
  if (has_scale) r.scale = norm_vector("scale", *scale_in, r.x);
  if (has_shift) r.shift = norm_vector("shift", *shift_in, r.x);
  r.weight = weight_in.contiguous();
  if (!aligned16(r.weight)) r.weight = r.weight.clone();   // a view at an odd offset
  r.out = at::empty({n, cout, h + 2 * pad - 8, w + 2 * pad - 8}, r.x.options()
                                                                 .dtype(out_float32 ? at::kFloat : type)
                                                                 .memory_format(at::MemoryFormat::ChannelsLast));

  Conv9x9Args& args = r.args;
  args.dtype = type == at::kBFloat16 ? ConvDtype::kBFloat16 : ConvDtype::kFloat16;
  args.x = r.x.data_ptr();
  args.x_float32 = x_float32;
  args.stride_n = r.x.stride(0);
  args.stride_c = r.x.stride(1);
  args.stride_h = r.x.stride(2);
  args.stride_w = r.x.stride(3);
  args.pad = static_cast<int>(pad);
  args.scale = has_scale ? r.scale.data_ptr<float>() : nullptr;
  args.shift = has_shift ? r.shift.data_ptr<float>() : nullptr;
  args.weight = r.weight.data_ptr();
  args.bias = r.bias.defined() ? r.bias.data_ptr<float>() : nullptr;
  args.out = r.out.data_ptr();
  args.out_float32 = out_float32;
  args.N = n;
  args.H = h;
  args.W = w;
  args.cin = static_cast<int>(cin);
  args.cout = static_cast<int>(cout);
  args.num_sms = multiprocessor_count(r.x.get_device());
  args.l2_bytes = l2_cache_bytes(r.x.get_device());
  args.pdl = supports_pdl(r.x.get_device());
  return r;
}

// conv1 on its wgmma kernel where the device and the binary are sm_90a, unless
// STYLEFORGE_CONV1_KERNEL = mma (wgmma_kernel_allowed); else, and for the head, conv9x9.cu's mma.sync
// kernels.
void launch(const Conv9x9Args& args) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const bool sm90 = args.cin == 3 && wgmma_kernel_allowed("STYLEFORGE_CONV1_KERNEL") && conv9x9_sm90_supported(args);
  C10_CUDA_CHECK(sm90 ? conv9x9_sm90_launch(args, stream) : conv9x9_launch(args, stream));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

at::Tensor conv9x9_cuda(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                        bool out_float32, const std::optional<at::Tensor>& scale,
                        const std::optional<at::Tensor>& shift, int64_t pad) {
  TORCH_CHECK(x.is_cuda(), "conv9x9: x must be a CUDA tensor, got ", x.device());
  const c10::cuda::CUDAGuard guard(x.device());
  const Prepared r = prepare("conv9x9", x, weight, bias, out_float32, scale, shift, pad);
  if (r.out.numel() != 0) launch(r.args);
  return r.out;
}

// An optional (32,) norm affine vector as fp32 contiguous, or an undefined tensor.
at::Tensor affine_vector(const char* name, const char* arg, const std::optional<at::Tensor>& v, const at::Tensor& x) {
  if (!v.has_value() || !v->defined()) return {};
  TORCH_CHECK(v->dim() == 1 && v->size(0) == 32 && v->is_floating_point(), name, ": ", arg,
              " must be a floating (32,) tensor, got ", v->scalar_type(), " ", v->sizes());
  TORCH_CHECK(v->device() == x.device(), name, ": ", arg, " is on ", v->device(), ", x on ", x.device());
  return v->to(at::kFloat).contiguous();
}

// A norm state of norm_state_bytes(n, 32) on x's device (no integers in the message: the Python
// entry checks first, see ops_conv.conv9x9).
void check_state32(const char* name, const char* arg, const at::Tensor& state, const at::Tensor& x, int64_t n) {
  TORCH_CHECK(state.is_cuda() && state.device() == x.device() && state.scalar_type() == at::kByte &&
                  state.is_contiguous() && aligned16(state) &&
                  static_cast<size_t>(state.numel()) >= norm_state_bytes(n, 32),
              name, ": ", arg, " must be a contiguous, 16-byte aligned uint8 tensor of norm_state_bytes(N, 32) "
              "bytes on x's device");
}

// A packed weight's data (Conv9x9Args::weight_b), or null where none is given; `maker` makes it
// (reference_conv), which the Python entry checked first.
const void* packed_weight_ptr(const char* name, const std::optional<at::Tensor>& packed, const at::Tensor& weight,
                              int64_t elements, const char* maker) {
  if (!packed.has_value() || !packed->defined()) return nullptr;
  const at::Tensor& b = *packed;
  TORCH_CHECK(b.dim() == 1 && b.numel() == elements && b.scalar_type() == weight.scalar_type() && b.is_contiguous() &&
                  b.device() == weight.device() && aligned16(b),
              name, ": packed_weight must be ", maker, "(weight)");
  return b.data_ptr();
}

// conv1 with IN1's statistics through the in-kernel hand-off; state: norm_state(N, 32). affine:
// also (scale, shift), and the state left zero; else the sums stay in it for the next layer.
std::tuple<at::Tensor, at::Tensor, at::Tensor> conv9x9_norm_cuda(const at::Tensor& x, const at::Tensor& weight,
                                                                 int64_t pad,
                                                                 const std::optional<at::Tensor>& norm_weight,
                                                                 const std::optional<at::Tensor>& norm_bias,
                                                                 double eps, at::Tensor& state, bool affine,
                                                                 const std::optional<at::Tensor>& packed_weight) {
  constexpr const char* kName = "conv9x9_norm";
  TORCH_CHECK(x.is_cuda(), kName, ": x must be a CUDA tensor, got ", x.device());
  const c10::cuda::CUDAGuard guard(x.device());
  TORCH_CHECK(weight.dim() == 4 && weight.size(0) == 32 && weight.size(1) == 3, kName,
              ": weight must be conv1's (32, 3, 9, 9), got ", weight.sizes());
  Prepared r = prepare(kName, x, weight, std::nullopt, false, std::nullopt, std::nullopt, pad);
  TORCH_CHECK(r.out.size(2) >= 2 && r.out.size(3) >= 2, kName,
              ": the output must be at least 2x2 for the InstanceNorm");
  TORCH_CHECK(eps > 0, kName, ": eps must be > 0");
  const int64_t n = x.size(0);
  check_state32(kName, "state", state, x, n);
  const at::Tensor nw = affine_vector(kName, "norm_weight", norm_weight, r.x);
  const at::Tensor nb = affine_vector(kName, "norm_bias", norm_bias, r.x);
  at::Tensor scale = at::empty({affine ? n : 0, 32}, r.x.options().dtype(at::kFloat));
  at::Tensor shift = at::empty({affine ? n : 0, 32}, r.x.options().dtype(at::kFloat));
  if (r.out.numel() == 0) return {r.out, scale, shift};
  if (affine) {
    NormHandoff& h = r.args.norm;
    h.weight = nw.defined() ? nw.data_ptr<float>() : nullptr;
    h.bias = nb.defined() ? nb.data_ptr<float>() : nullptr;
    h.eps = static_cast<float>(eps);
    h.scale = scale.data_ptr<float>();
    h.shift = shift.data_ptr<float>();
  }
  r.args.norm_state = state.data_ptr();
  r.args.weight_b = packed_weight_ptr(kName, packed_weight, weight, 5 * 32 * 64, "pack_conv1_weight");
  launch(r.args);
  return {r.out, scale, shift};
}

// The head (32 → 3) applying the norm whose sums its producer left in state (norm_state(N, 32)):
// read and left zero.
at::Tensor conv9x9_from_sums_cuda(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                                  bool out_float32, int64_t pad, at::Tensor& state,
                                  const std::optional<at::Tensor>& norm_weight,
                                  const std::optional<at::Tensor>& norm_bias, double eps,
                                  const std::optional<at::Tensor>& packed_weight) {
  constexpr const char* kName = "conv9x9_from_sums";
  TORCH_CHECK(x.is_cuda(), kName, ": x must be a CUDA tensor, got ", x.device());
  const c10::cuda::CUDAGuard guard(x.device());
  TORCH_CHECK(weight.dim() == 4 && weight.size(0) == 3 && weight.size(1) == 32, kName,
              ": weight must be the head's (3, 32, 9, 9), got ", weight.sizes());
  Prepared r = prepare(kName, x, weight, bias, out_float32, std::nullopt, std::nullopt, pad);
  TORCH_CHECK(eps > 0, kName, ": eps must be > 0");
  check_state32(kName, "state", state, x, x.size(0));
  const at::Tensor nw = affine_vector(kName, "norm_weight", norm_weight, r.x);
  const at::Tensor nb = affine_vector(kName, "norm_bias", norm_bias, r.x);
  if (r.out.numel() == 0) return r.out;
  r.args.in_state = state.data_ptr();
  r.args.in_norm_weight = nw.defined() ? nw.data_ptr<float>() : nullptr;
  r.args.in_norm_bias = nb.defined() ? nb.data_ptr<float>() : nullptr;
  r.args.in_eps = static_cast<float>(eps);
  r.args.weight_b = packed_weight_ptr(kName, packed_weight, weight, 5 * 9 * 2 * 32 * 4, "pack_head_weight");
  launch(r.args);
  return r.out;
}

}  // namespace
}  // namespace styleforge

TORCH_LIBRARY_IMPL(styleforge, CUDA, m) {
  m.impl("conv9x9", &styleforge::conv9x9_cuda);
  m.impl("conv9x9_norm", &styleforge::conv9x9_norm_cuda);
  m.impl("conv9x9_from_sums", &styleforge::conv9x9_from_sums_cuda);
}
