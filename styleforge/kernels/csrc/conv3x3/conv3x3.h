// Host-side interface of the fused 3×3 convolution (csrc/conv3x3/conv3x3.cu) and of the moments
// kernel that gives a cuDNN-produced tensor the same InstanceNorm hand-off.
//
// Plain C++ with CUDA runtime types only, no torch: conv3x3_binding.cpp checks the tensors and
// fills the argument structs. Semantics (the one statement of them): the pure-PyTorch twin
// styleforge/kernels/reference/conv3x3.py. In short, NHWC, batch N, (Cin, Cout, upsample, stride) one
// of the style network's (128, 128, 1, 1) residual convolutions, (128, 64, 2, 1), (64, 32, 2, 1)
// decoder ones or (32, 64, 1, 2), (64, 128, 1, 2), the encoder's conv2 and conv3:
//   a   = x·scale + shift (+ residual), ReLU if asked, rounded to x's dtype   (the prologue)
//   out = conv3x3(reflection_pad1(upsample_nearest(a, upsample)), W, stride) (no bias; for upsample 2
//         its phase-split form, four 2×2 convolutions with summed, once-rounded taps: see the twin)
//   (out_scale, out_shift) so that InstanceNorm(out; norm_weight, norm_bias, eps)
//        = out·out_scale + out_shift per (sample, channel), from fp32 statistics of the rounded out.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "../conv9x9/conv9x9.h"     // ConvDtype
#include "../norm_sums/norm_sums.h"  // NormHandoff, the in-kernel hand-off's state

namespace styleforge {

// The moments kernel's channel counts: 128 (conv3's output, the hand-off into the residual chain),
// 64 and 32 (the decoder's, e.g. deconv2's output into deconv3).
constexpr bool moments_channels_supported(int c) { return c == 32 || c == 64 || c == 128; }
// Output tiles: 16 columns × 8 rows (Cout 128, and stride 2) or 16 rows (Cout 64 and 32); the
// statistics workspace holds one (sum, M2) pair per (sample, tile, output channel). Cout 32 keeps 16
// rows, not 32: its 32 accumulators per thread leave registers for two CTAs per SM (see
// Cfg::kMinBlocks); so do conv2's (32 → 64, stride 2) 8 rows, whose 16 rows ran one CTA per SM.
constexpr int kConv3x3TileW = 16;
constexpr int conv3x3_tile_h(int cout, int stride = 1) { return cout == 128 || stride == 2 ? 8 : 16; }
// The configurations computed as four 2×2 convolutions of the low-resolution input, one per output
// phase (the ×2 decoder layers; see Cfg::kPhase in conv3x3.cu): their packed weights hold 16 summed
// taps, not 9.
// Output size along one axis: upsample × size, or ⌈size / 2⌉ for stride 2 (3×3, pad 1).
constexpr int64_t conv3x3_out_size(int64_t size, int upsample, int stride) {
  return stride == 2 ? (size + 1) / 2 : size * upsample;
}
constexpr bool conv3x3_phase_split(int cin, int cout, int upsample) {
  return upsample == 2 && ((cin == 64 && cout == 32) || (cin == 128 && cout == 64));
}

struct Conv3x3Args {
  ConvDtype dtype = ConvDtype::kBFloat16;
  int cin = 128, cout = 128, upsample = 1, stride = 1;
  const void* x = nullptr;          // (N, H, W, cin) dense NHWC, 16-byte aligned
  const void* weight = nullptr;     // packed (taps, ⌈cin / 64⌉, cout, 64), taps 9 or 16 (phase split): reference/conv3x3.py: pack_weight
  const float* scale = nullptr;     // (N, cin) fp32 prologue affine, or null (identity) ...
  const float* shift = nullptr;     // ... with shift (both or neither)
  const void* residual = nullptr;   // (N, H, W, cin) dense NHWC, or null
  bool relu = false;
  void* act = nullptr;              // (N, H, W, cin): the prologue's output a, or null; upsample 1 only
  void* out = nullptr;              // (N, Ho, Wo, cout) dense NHWC, sizes by conv3x3_out_size
  NormHandoff norm;                 // over cout channels; norm.scale and norm_state null: no statistics
  // A zeroed state of norm_state_bytes(N, cout) for the in-kernel hand-off: with norm.scale the
  // grid's last CTA writes norm.scale/shift and leaves it zero; without, the sums stay in it for the
  // consumer's in_state (norm.weight/bias unused). Null with norm.scale: per-tile partials in the
  // workspace and the separate hand-off kernel.
  void* norm_state = nullptr;
  // The input norm from sums instead of scale/shift (both null then): the producer's state (its
  // sums of x's channels), read and left zero; the norm's weight, bias (fp32 (cin,), or null) and
  // eps. The prologue applies x·scale + shift with InstanceNorm(x)'s affine from those sums.
  void* in_state = nullptr;
  const float* in_norm_weight = nullptr;
  const float* in_norm_bias = nullptr;
  float in_eps = 1e-5f;
  int64_t N = 0, H = 0, W = 0;      // H·upsample, W·upsample >= 2 (reflection pad 1); stride 2: H, W >= 2
  int64_t l2_bytes = 0;             // the device's L2 size (bindings): see cache_hints.cuh; 0: no hints
};

struct MomentsArgs {
  ConvDtype dtype = ConvDtype::kBFloat16;
  int channels = 128;               // C: 32, 64 or 128 (moments_channels_supported)
  const void* x = nullptr;          // (N, H, W, C) dense NHWC, 16-byte aligned
  NormHandoff norm;                 // over C channels
  int64_t N = 0, H = 0, W = 0;
};

// The residual chain (csrc/conv3x3/conv3x3_chain.cu): `links` (even, ≤ kChainMaxLinks) 128 → 128
// convolutions in one persistent kernel, the style network's residual blocks, link 2b and 2b + 1
// being block b's two convolutions. Semantics: reference/conv3x3.py: residual_chain, i.e. with
// h = x, (s, t) = (scale, shift), block_in none, for each block b:
//   (h, s1, t1, block_in) = conv3x3_norm(h, weight[2b], s, t, residual=block_in, relu = b == 0,
//                                        keep_input, norm 2b)
//   (h, s, t)             = conv3x3_norm(h, weight[2b + 1], s1, t1, relu, norm 2b + 1)
// and it returns the last (h, s, t, block_in). raw[2] and act[2] are ping-pong buffers (N, H, W,
// 128): h ends in raw[(links − 1) & 1], block_in in act[((links − 2) / 2) & 1].
constexpr int kChainMaxLinks = 16;
struct ChainArgs {
  ConvDtype dtype = ConvDtype::kBFloat16;
  int links = 0;
  const void* x = nullptr;                          // (N, H, W, 128) dense NHWC, 16-byte aligned
  const float* scale = nullptr;                     // (N, 128) fp32: the norm before the chain ...
  const float* shift = nullptr;                     // ... as an affine, applied with ReLU
  // ... or (scale, shift null) from the producer's sums in this state (see Conv3x3Args::in_state),
  // with that norm's weight and bias; eps is `eps`. Read and left zero.
  void* in_state = nullptr;
  const float* in_norm_weight = nullptr;
  const float* in_norm_bias = nullptr;
  const void* weight[kChainMaxLinks] = {};          // packed (9, 2, 128, 64) each
  const float* norm_weight[kChainMaxLinks] = {};    // (128,) fp32 each, or null (= 1)
  const float* norm_bias[kChainMaxLinks] = {};      // (128,) fp32 each, or null (= 0)
  float eps = 1e-5f;
  void* raw[2] = {};
  void* act[2] = {};
  float* out_scale = nullptr;                       // (N, 128) fp32: the last link's norm, written ...
  float* out_shift = nullptr;
  // ... or (out_scale, out_shift null) the last link's sums added to this zeroed norm state
  // (norm_state_bytes(N, 128)) for the consumer's in_state, as Conv3x3Args' affine-free form: then no
  // CTA waits for the others at the end (links >= 4: see conv3x3_chain.cu's barrier counters).
  void* out_state = nullptr;
  int64_t N = 0, H = 0, W = 0;                      // H, W >= 2
  int64_t l2_bytes = 0;                             // as Conv3x3Args (for the links' fallback)
};

// The chain's state: grid-barrier counters and fp64 statistics. Zero before the first launch (e.g.
// a zero-filled allocation); every launch leaves it zero, or with out_state leaves its last
// barrier's counter and one link's sums for the next launch to clear, so one state serves a stream's
// launches of one link count (a CUDA graph's replays included). Launches that may overlap need
// separate states.
size_t conv3x3_chain_state_bytes(int64_t N, int links);
// Scratch for the launch when the tiles do not all fit on the GPU at once (the per-link path).
size_t conv3x3_chain_workspace_bytes(int64_t N, int64_t H, int64_t W);
// Whether the persistent kernel runs for this size on the current device: one CTA per tile, all
// resident at once (the grid barriers need every CTA running).
bool conv3x3_chain_fits(ConvDtype dtype, int64_t N, int64_t H, int64_t W);
// Enqueue the chain: one persistent kernel where it fits, else `links` conv3x3_launch calls.
cudaError_t conv3x3_chain_launch(const ChainArgs& args, void* state, void* workspace, cudaStream_t stream);

// Whether a kernel exists for (cin, cout, upsample, stride).
bool conv3x3_config_supported(int cin, int cout, int upsample, int stride = 1);

// Tiles per output image, and the workspace a launch needs (16-byte aligned, no initialisation);
// Ho, Wo are the output's sizes. The moments launch of C channels uses the cout = C tiling.
int64_t conv3x3_tiles(int64_t Ho, int64_t Wo, int cout, int stride = 1);
size_t conv3x3_workspace_bytes(int64_t N, int64_t Ho, int64_t Wo, int cout, int stride = 1);

// Whether the current device runs the fused convolution (sm_90a code: compute capability 9.0).
// The moments launch runs on any GPU.
bool conv3x3_supported();

// Enqueue the convolution and the statistics hand-off on `stream` (two kernels; one with a
// norm_state). Returns
// cudaErrorInvalidValue for an unsupported configuration, else the first launch error.
cudaError_t conv3x3_launch(const Conv3x3Args& args, void* workspace, cudaStream_t stream);

// Enqueue the moments of x and the same hand-off (two kernels): InstanceNorm(x) = x·scale + shift.
// Returns cudaErrorInvalidValue for an unsupported channel count or size, else the first launch error.
cudaError_t moments_launch(const MomentsArgs& args, void* workspace, cudaStream_t stream);

}  // namespace styleforge
