// CUDA implementations of styleforge::conv3x3_norm, styleforge::norm_scale_shift and
// styleforge::conv3x3_residual_chain.
//
// As in instance_norm_binding.cpp, the schemas are defined in Python (styleforge/kernels/conv3x3.py) and this
// file only adds the CUDA kernels with TORCH_LIBRARY_IMPL. Argument rules mirror
// reference/conv3x3.py: check_args and name the argument; x and residual are made dense channels_last
// and 16-byte aligned (a copy only when they are not), the kernels launch on the current stream
// under a CUDAGuard, and the launches are checked.
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "conv3x3.h"
#include "../common/device_info.h"

namespace styleforge {
namespace {

bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

at::Tensor dense_nhwc(const at::Tensor& t) {
  at::Tensor d = t.contiguous(at::MemoryFormat::ChannelsLast);
  return aligned16(d) ? d : d.clone(at::MemoryFormat::ChannelsLast);   // a view at an odd offset
}

void check_x(const char* name, const at::Tensor& x, int64_t channels, int64_t upsample) {
  TORCH_CHECK(x.is_cuda(), name, ": x must be a CUDA tensor, got ", x.device());
  TORCH_CHECK(x.dim() == 4, name, ": x must be 4-D (N, C, H, W), got shape ", x.sizes());
  TORCH_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16, name, ": x dtype ",
              x.scalar_type(), " is unsupported (float16, bfloat16)");
  TORCH_CHECK(x.size(1) == channels, name, ": x must have ", channels, " channels, got ", x.size(1));
  TORCH_CHECK(x.size(2) * upsample >= 2 && x.size(3) * upsample >= 2, name,
              ": H and W must be >= 2 for the reflection pad, got ", x.size(2), "x", x.size(3));
}

// An optional (C,) affine vector as fp32 contiguous, or an undefined tensor.
at::Tensor vector_f32(const char* name, const char* arg, const std::optional<at::Tensor>& v, const at::Tensor& x,
                      int64_t channels) {
  if (!v.has_value() || !v->defined()) return {};
  TORCH_CHECK(v->dim() == 1 && v->size(0) == channels && v->is_floating_point(), name, ": ", arg,
              " must be a floating (", channels, ",) tensor, got ", v->scalar_type(), " ", v->sizes());
  TORCH_CHECK(v->device() == x.device(), name, ": ", arg, " is on ", v->device(), ", x on ", x.device());
  return v->to(at::kFloat).contiguous();
}

ConvDtype dtype_of(const at::Tensor& x) {
  return x.scalar_type() == at::kBFloat16 ? ConvDtype::kBFloat16 : ConvDtype::kFloat16;
}

NormHandoff handoff(const at::Tensor& w, const at::Tensor& b, double eps, at::Tensor& scale, at::Tensor& shift) {
  NormHandoff h;
  h.weight = w.defined() ? w.data_ptr<float>() : nullptr;
  h.bias = b.defined() ? b.data_ptr<float>() : nullptr;
  h.eps = static_cast<float>(eps);
  h.scale = scale.data_ptr<float>();
  h.shift = shift.data_ptr<float>();
  return h;
}

// A norm state (norm_state(N, C)) on x's device: the producer's sums for an input norm, or a
// zeroed state for the output's.
void check_state(const char* name, const char* arg, const at::Tensor& state, const at::Tensor& x, int64_t n,
                 int64_t c) {
  TORCH_CHECK(state.is_cuda() && state.device() == x.device() && state.scalar_type() == at::kByte &&
                  state.is_contiguous() && aligned16(state) &&
                  state.numel() >= static_cast<int64_t>(norm_state_bytes(n, static_cast<int>(c))),
              name, ": ", arg, " must be a contiguous, 16-byte aligned uint8 tensor of norm_state_bytes(N, C) bytes on "
              "x's device (norm_state)");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> conv3x3_norm_cuda(
    const at::Tensor& x_in, const at::Tensor& weight, const std::optional<at::Tensor>& scale_in,
    const std::optional<at::Tensor>& shift_in, const std::optional<at::Tensor>& residual_in, bool relu,
    int64_t upsample, bool keep_input, const std::optional<at::Tensor>& norm_weight,
    const std::optional<at::Tensor>& norm_bias, double eps, bool stats, int64_t stride,
    const std::optional<at::Tensor>& state_in, const std::optional<at::Tensor>& in_state,
    const std::optional<at::Tensor>& in_norm_weight, const std::optional<at::Tensor>& in_norm_bias, bool affine_out) {
  constexpr const char* kName = "conv3x3_norm";
  TORCH_CHECK(weight.dim() == 4 && weight.size(3) == 64 && weight.scalar_type() == x_in.scalar_type() &&
                  weight.is_contiguous(),
              kName, ": weight must be the contiguous packed (taps, Cin/64, Cout, 64) ", x_in.scalar_type(),
              " tensor from pack_weight, got ", weight.scalar_type(), " ", weight.sizes());
  TORCH_CHECK(x_in.dim() == 4, kName, ": x must be 4-D (N, C, H, W), got shape ", x_in.sizes());
  // Cin is x's; the packed weight holds ⌈Cin / 64⌉ blocks of 64 (Cin 32: zero-padded by pack_weight).
  const int64_t cin = x_in.size(1), cout = weight.size(2);
  TORCH_CHECK(weight.size(1) == (cin + 63) / 64, kName, ": a packed weight for Cin = ", cin, " has ",
              (cin + 63) / 64, " blocks of 64 input channels, got ", weight.size(1));
  const int64_t taps = conv3x3_phase_split(static_cast<int>(cin), static_cast<int>(cout), 2) ? 16 : 9;
  TORCH_CHECK(weight.size(0) == taps, kName, ": a packed weight of (Cin, Cout) = (", cin, ", ", cout, ") has ", taps,
              " taps (pack_weight), got ", weight.size(0));
  TORCH_CHECK(conv3x3_config_supported(static_cast<int>(cin), static_cast<int>(cout), static_cast<int>(upsample),
                                       static_cast<int>(stride)),
              kName, ": (Cin, Cout, upsample, stride) = (", cin, ", ", cout, ", ", upsample, ", ", stride,
              ") is unsupported; supported: (128, 128, 1, 1), (128, 64, 2, 1), (64, 32, 2, 1), (32, 64, 1, 2), "
              "(64, 128, 1, 2) (other layers use cuDNN)");
  check_x(kName, x_in, cin, upsample);
  TORCH_CHECK(!keep_input || (upsample == 1 && stride == 1), kName, ": keep_input needs upsample 1 and stride 1");
  const int64_t n = x_in.size(0), h = x_in.size(2), w = x_in.size(3);
  const int64_t ho = conv3x3_out_size(h, static_cast<int>(upsample), static_cast<int>(stride));
  const int64_t wo = conv3x3_out_size(w, static_cast<int>(upsample), static_cast<int>(stride));
  TORCH_CHECK(weight.device() == x_in.device(), kName, ": weight is on ", weight.device(), ", x on ", x_in.device());
  TORCH_CHECK(aligned16(weight), kName, ": weight must be 16-byte aligned");
  const bool affine = scale_in.has_value() && scale_in->defined();
  TORCH_CHECK(affine == (shift_in.has_value() && shift_in->defined()), kName,
              ": scale and shift come together (both or neither)");
  const bool from_sums = in_state.has_value() && in_state->defined();
  TORCH_CHECK(!(affine && from_sums), kName, ": the input norm is scale/shift or in_state, not both");
  if (from_sums) check_state(kName, "in_state", *in_state, x_in, n, cin);
  at::Tensor scale, shift;
  if (affine) {
    for (const at::Tensor* t : {&*scale_in, &*shift_in}) {
      TORCH_CHECK(t->dim() == 2 && t->size(0) == n && t->size(1) == cin && t->scalar_type() == at::kFloat &&
                      t->device() == x_in.device(),
                  kName, ": scale and shift must be float32 (", n, ", ", cin, ") tensors on ", x_in.device(),
                  ", got ", t->scalar_type(), " ", t->sizes(), " on ", t->device());
    }
    scale = scale_in->contiguous();
    shift = shift_in->contiguous();
  }
  at::Tensor residual;
  if (residual_in.has_value() && residual_in->defined()) {
    TORCH_CHECK(residual_in->sizes() == x_in.sizes() && residual_in->scalar_type() == x_in.scalar_type() &&
                    residual_in->device() == x_in.device(),
                kName, ": residual must match x (", x_in.scalar_type(), " ", x_in.sizes(), "), got ",
                residual_in->scalar_type(), " ", residual_in->sizes());
    residual = dense_nhwc(*residual_in);
  }
  TORCH_CHECK(eps > 0, kName, ": eps must be > 0, got ", eps);
  const at::Tensor nw = vector_f32(kName, "norm_weight", norm_weight, x_in, cout);
  const at::Tensor nb = vector_f32(kName, "norm_bias", norm_bias, x_in, cout);
  const at::Tensor in_nw = vector_f32(kName, "in_norm_weight", in_norm_weight, x_in, cin);
  const at::Tensor in_nb = vector_f32(kName, "in_norm_bias", in_norm_bias, x_in, cin);
  const bool has_state = state_in.has_value() && state_in->defined();
  TORCH_CHECK(affine_out || (stats && has_state), kName, ": affine=False leaves the sums in state: needs stats and a state");

  const c10::cuda::CUDAGuard guard(x_in.device());
  TORCH_CHECK(conv3x3_supported(), kName, ": the fused convolution needs an sm_90a (Hopper) GPU; ",
              "styleforge.kernels.conv3x3_norm falls back to the reference elsewhere");
  const at::Tensor x = dense_nhwc(x_in);
  const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
  at::Tensor out = at::empty({n, cout, ho, wo}, cl);
  at::Tensor act = keep_input ? at::empty({n, cin, h, w}, cl) : at::empty({0}, x.options());
  const bool written = stats && affine_out;   // out_scale/out_shift computed here (else: the sums in state)
  at::Tensor out_scale = at::empty({written ? n : 0, cout}, x.options().dtype(at::kFloat));
  at::Tensor out_shift = at::empty({written ? n : 0, cout}, x.options().dtype(at::kFloat));
  if (n == 0) return {out, out_scale, out_shift, act};
  // A state (checked in Python: kernels/conv3x3.py: conv3x3_norm) selects the in-kernel hand-off: no partials.
  const bool in_kernel = stats && has_state;
  if (in_kernel) check_state(kName, "state", *state_in, x_in, n, cout);
  const int64_t ws_bytes =
      stats && !in_kernel
          ? static_cast<int64_t>(conv3x3_workspace_bytes(n, ho, wo, static_cast<int>(cout), static_cast<int>(stride)))
          : 0;
  at::Tensor workspace = at::empty({ws_bytes}, x.options().dtype(at::kByte));

  Conv3x3Args args;
  args.dtype = dtype_of(x);
  args.l2_bytes = l2_cache_bytes(x.get_device());
  args.cin = static_cast<int>(cin);
  args.cout = static_cast<int>(cout);
  args.upsample = static_cast<int>(upsample);
  args.stride = static_cast<int>(stride);
  args.x = x.data_ptr();
  args.weight = weight.data_ptr();
  args.scale = affine ? scale.data_ptr<float>() : nullptr;
  args.shift = affine ? shift.data_ptr<float>() : nullptr;
  args.residual = residual.defined() ? residual.data_ptr() : nullptr;
  args.relu = relu;
  args.act = keep_input ? act.data_ptr() : nullptr;
  args.out = out.data_ptr();
  if (written) args.norm = handoff(nw, nb, eps, out_scale, out_shift);
  args.norm_state = in_kernel ? state_in->data_ptr() : nullptr;
  if (from_sums) {
    args.in_state = in_state->data_ptr();
    args.in_norm_weight = in_nw.defined() ? in_nw.data_ptr<float>() : nullptr;
    args.in_norm_bias = in_nb.defined() ? in_nb.data_ptr<float>() : nullptr;
    args.in_eps = static_cast<float>(eps);
  }
  args.N = n;
  args.H = h;
  args.W = w;
  C10_CUDA_CHECK(conv3x3_launch(args, workspace.data_ptr(), c10::cuda::getCurrentCUDAStream()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out, out_scale, out_shift, act};
}

std::tuple<at::Tensor, at::Tensor> norm_scale_shift_cuda(const at::Tensor& x_in, const std::optional<at::Tensor>& weight,
                                                         const std::optional<at::Tensor>& bias, double eps) {
  constexpr const char* kName = "norm_scale_shift";
  TORCH_CHECK(x_in.dim() == 4, kName, ": x must be 4-D (N, C, H, W), got shape ", x_in.sizes());
  const int64_t c = x_in.size(1);
  TORCH_CHECK(c <= 128 && moments_channels_supported(static_cast<int>(c)), kName,
              ": x must have 32, 64 or 128 channels, got ", c, " (other layers use cuDNN)");
  check_x(kName, x_in, c, 1);
  TORCH_CHECK(eps > 0, kName, ": eps must be > 0, got ", eps);
  const at::Tensor nw = vector_f32(kName, "weight", weight, x_in, c);
  const at::Tensor nb = vector_f32(kName, "bias", bias, x_in, c);
  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor x = dense_nhwc(x_in);
  const int64_t n = x.size(0), h = x.size(2), w = x.size(3);
  at::Tensor scale = at::empty({n, c}, x.options().dtype(at::kFloat));
  at::Tensor shift = at::empty({n, c}, x.options().dtype(at::kFloat));
  if (n == 0) return {scale, shift};
  at::Tensor workspace = at::empty({static_cast<int64_t>(conv3x3_workspace_bytes(n, h, w, static_cast<int>(c)))},
                                   x.options().dtype(at::kByte));
  MomentsArgs args;
  args.dtype = dtype_of(x);
  args.channels = static_cast<int>(c);
  args.x = x.data_ptr();
  args.norm = handoff(nw, nb, eps, scale, shift);
  args.N = n;
  args.H = h;
  args.W = w;
  C10_CUDA_CHECK(moments_launch(args, workspace.data_ptr(), c10::cuda::getCurrentCUDAStream()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {scale, shift};
}

// The residual blocks in one call (see ChainArgs in conv3x3.h); state: the chain's zeroed state
// bytes, mutated during the call and left zero.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> conv3x3_residual_chain_cuda(
    const at::Tensor& x_in, const std::optional<at::Tensor>& scale_opt, const std::optional<at::Tensor>& shift_opt,
    at::TensorList weights, at::TensorList norm_weights, at::TensorList norm_biases, double eps, at::Tensor& state,
    const std::optional<at::Tensor>& in_state, const std::optional<at::Tensor>& in_norm_weight,
    const std::optional<at::Tensor>& in_norm_bias, const std::optional<at::Tensor>& out_state) {
  constexpr const char* kName = "conv3x3_residual_chain";
  const int64_t links = static_cast<int64_t>(weights.size());
  TORCH_CHECK(links >= 2 && links <= kChainMaxLinks && links % 2 == 0, kName,
              ": weights must hold an even number of packed convolutions, 2 to ", kChainMaxLinks, ", got ", links);
  TORCH_CHECK(static_cast<int64_t>(norm_weights.size()) == links && static_cast<int64_t>(norm_biases.size()) == links,
              kName, ": norm_weights and norm_biases need one (128,) tensor per convolution (", links, "), got ",
              norm_weights.size(), " and ", norm_biases.size());
  check_x(kName, x_in, 128, 1);
  const int64_t n = x_in.size(0), h = x_in.size(2), w = x_in.size(3);
  for (const at::Tensor& wt : weights) {
    TORCH_CHECK(wt.dim() == 4 && wt.size(0) == 9 && wt.size(1) == 2 && wt.size(2) == 128 && wt.size(3) == 64 &&
                    wt.scalar_type() == x_in.scalar_type() && wt.is_contiguous() && wt.device() == x_in.device() &&
                    aligned16(wt),
                kName, ": each weight must be a contiguous, 16-byte aligned packed (9, 2, 128, 64) ", x_in.scalar_type(),
                " tensor on ", x_in.device(), " from pack_weight, got ", wt.scalar_type(), " ", wt.sizes());
  }
  const bool affine = scale_opt.has_value() && scale_opt->defined();
  const bool from_sums = in_state.has_value() && in_state->defined();
  TORCH_CHECK(affine == (shift_opt.has_value() && shift_opt->defined()) && affine != from_sums, kName,
              ": the norm before the chain is scale and shift, or in_state (exactly one)");
  if (affine) {
    for (const at::Tensor* t : {&*scale_opt, &*shift_opt}) {
      TORCH_CHECK(t->dim() == 2 && t->size(0) == n && t->size(1) == 128 && t->scalar_type() == at::kFloat &&
                      t->device() == x_in.device(),
                  kName, ": scale and shift must be float32 (", n, ", 128) tensors on ", x_in.device(), ", got ",
                  t->scalar_type(), " ", t->sizes(), " on ", t->device());
    }
  } else {
    check_state(kName, "in_state", *in_state, x_in, n, 128);
  }
  const bool to_state = out_state.has_value() && out_state->defined();
  if (to_state) {
    check_state(kName, "out_state", *out_state, x_in, n, 128);
    TORCH_CHECK(links >= 4, kName, ": out_state needs at least 4 convolutions (two blocks), got ", links);
  }
  const at::Tensor in_nw = vector_f32(kName, "in_norm_weight", in_norm_weight, x_in, 128);
  const at::Tensor in_nb = vector_f32(kName, "in_norm_bias", in_norm_bias, x_in, 128);
  TORCH_CHECK(eps > 0, kName, ": eps must be > 0, got ", eps);
  const size_t state_bytes = conv3x3_chain_state_bytes(n, static_cast<int>(links));
  TORCH_CHECK(state.scalar_type() == at::kByte && state.is_contiguous() && state.device() == x_in.device() &&
                  static_cast<size_t>(state.numel()) >= state_bytes && aligned16(state),
              kName, ": state must be a contiguous uint8 tensor of at least ", state_bytes, " bytes on ",
              x_in.device(), " (zero-filled; chain_state_bytes), got ", state.scalar_type(), " ", state.sizes());
  std::vector<at::Tensor> nw, nb;
  for (int64_t l = 0; l < links; ++l) {
    nw.push_back(vector_f32(kName, "norm_weights", norm_weights[l], x_in, 128));
    nb.push_back(vector_f32(kName, "norm_biases", norm_biases[l], x_in, 128));
  }

  const c10::cuda::CUDAGuard guard(x_in.device());
  TORCH_CHECK(conv3x3_supported(), kName, ": the fused convolution needs an sm_90a (Hopper) GPU; ",
              "styleforge.kernels.conv3x3_residual_chain falls back to the reference elsewhere");
  const at::Tensor x = dense_nhwc(x_in);
  const at::Tensor scale = affine ? scale_opt->contiguous() : at::Tensor();
  const at::Tensor shift = affine ? shift_opt->contiguous() : at::Tensor();
  const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
  at::Tensor raw[2] = {at::empty({n, 128, h, w}, cl), at::empty({n, 128, h, w}, cl)};
  at::Tensor act[2] = {at::empty({n, 128, h, w}, cl), at::empty({n, 128, h, w}, cl)};
  // With out_state the last link's norm stays as sums there: empty (0, 128) vectors, as conv3x3_norm's
  // affine=False.
  at::Tensor out_scale = at::empty({to_state ? 0 : n, 128}, x.options().dtype(at::kFloat));
  at::Tensor out_shift = at::empty({to_state ? 0 : n, 128}, x.options().dtype(at::kFloat));
  const at::Tensor& h_out = raw[(links - 1) & 1];
  const at::Tensor& block_in = act[((links - 2) / 2) & 1];
  if (n == 0) return {h_out, out_scale, out_shift, block_in};
  at::Tensor workspace = at::empty({static_cast<int64_t>(conv3x3_chain_workspace_bytes(n, h, w))},
                                   x.options().dtype(at::kByte));
  ChainArgs args;
  args.dtype = dtype_of(x);
  args.l2_bytes = l2_cache_bytes(x.get_device());
  args.links = static_cast<int>(links);
  args.x = x.data_ptr();
  args.scale = affine ? scale.data_ptr<float>() : nullptr;
  args.shift = affine ? shift.data_ptr<float>() : nullptr;
  if (from_sums) {
    args.in_state = in_state->data_ptr();
    args.in_norm_weight = in_nw.defined() ? in_nw.data_ptr<float>() : nullptr;
    args.in_norm_bias = in_nb.defined() ? in_nb.data_ptr<float>() : nullptr;
  }
  for (int64_t l = 0; l < links; ++l) {
    args.weight[l] = weights[l].data_ptr();
    args.norm_weight[l] = nw[l].data_ptr<float>();
    args.norm_bias[l] = nb[l].data_ptr<float>();
  }
  args.eps = static_cast<float>(eps);
  for (int i = 0; i < 2; ++i) {
    args.raw[i] = raw[i].data_ptr();
    args.act[i] = act[i].data_ptr();
  }
  args.out_scale = to_state ? nullptr : out_scale.data_ptr<float>();
  args.out_shift = to_state ? nullptr : out_shift.data_ptr<float>();
  args.out_state = to_state ? out_state->data_ptr() : nullptr;
  args.N = n;
  args.H = h;
  args.W = w;
  C10_CUDA_CHECK(conv3x3_chain_launch(args, state.data_ptr(), workspace.data_ptr(), c10::cuda::getCurrentCUDAStream()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {h_out, out_scale, out_shift, block_in};
}

}  // namespace
}  // namespace styleforge

TORCH_LIBRARY_IMPL(styleforge, CUDA, m) {
  m.impl("conv3x3_norm", &styleforge::conv3x3_norm_cuda);
  m.impl("norm_scale_shift", &styleforge::norm_scale_shift_cuda);
  m.impl("conv3x3_residual_chain", &styleforge::conv3x3_residual_chain_cuda);
}
