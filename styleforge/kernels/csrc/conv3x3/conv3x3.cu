// The style network's 3×3 convolutions with their InstanceNorms fused in, fp16/bf16 NHWC, fp32
// accumulate, on Hopper wgmma: (Cin, Cout, ×upsample, stride) = (128, 128, 1, 1) for the residual
// blocks, (128, 64, 2, 1), (64, 32, 2, 1) for the decoder and (32, 64, 1, 2), (64, 128, 1, 2) for
// the encoder's conv2 and conv3 (applying IN1 and IN2, gathering IN2 and IN3); reflection pad 1.
// Cin 32 runs as Cin 64 in the weight (K padded to the 64-channel blocks of the B layout; conv2 is
// 2.4 of the network's 81 GFLOP), but its halo holds the 32 real channels and the zero k-steps are
// skipped (Cfg::kNarrow).
//   prologue  the previous norm's apply (a = x·scale + shift, + residual, ReLU), the ×2 nearest
//             upsample and the reflection resolved in the address math, written once to shared
//             memory (and, if asked, the tile's interior to `act`, which becomes the next residual);
//   main loop an implicit GEMM: M = the tile's output pixels, N = Cout, K = 9 taps × Cin (×2 upsample:
//             4 taps × Cin per output phase on the low-resolution input, see Cfg::kPhase);
//   epilogue  the output, rounded, plus per-tile (sum, M2) of every channel for the next norm;
// then a second small kernel turns the tiles' moments into (scale, shift) per (sample, channel) — or,
// given a zeroed state (norm_sums.h), the tiles add them to fp64 sums and the grid's last CTA does
// it, with no kernel boundary in between (the engine's form: no hand-off kernel after each convolution).
// So an InstanceNorm between two of these convolutions costs no pass over the activation. Both
// kernels are launched with programmatic dependent launch: a convolution's blocks start, set up
// and fetch their first weights while the hand-off before them still runs.
// The tile itself (geometry, prologue, wgmma main loop, epilogue) is conv3x3_tile.cuh, shared
// with the residual chain's persistent kernel (conv3x3_chain.cu); this file holds the single
// convolution's kernel, the moments and hand-off kernels and the launchers.
// Why one tile per block: at 512² (the frame that needs it) the 128 × 128 layer has 128 tiles, one
// wave; at 1080p this takes 2× cuDNN's time (7.7 waves of one CTA per SM, the weights streamed again
// per tile) and the engine, which times both, keeps cuDNN there. Not covered: other channel counts,
// strides, GPUs other than sm_90a (the engine keeps cuDNN there).
// Pure CUDA (no torch); conv3x3_binding.cpp binds it; semantics: reference/conv3x3.py.
#include "conv3x3_tile.cuh"

namespace styleforge {
namespace {

template <typename T, int CIN, int COUT, int UP, int STRIDE = 1, int CIN_X = CIN>
__global__ void __launch_bounds__(Cfg<CIN, COUT, UP, STRIDE, CIN_X>::kThreadsPerCta)
    __maxnreg__((Cfg<CIN, COUT, UP, STRIDE, CIN_X>::kMaxRegs)) conv3x3_kernel(const Params p) {
#if STYLEFORGE_SM90A
  using C = Cfg<CIN, COUT, UP, STRIDE, CIN_X>;
  extern __shared__ unsigned char smem_raw[];
  const TileSmem<C> sm(smem_raw);
  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();
  allow_dependents_launch();   // the hand-off kernel may be scheduled; it waits for this grid to end
  if constexpr (C::kResidentWeights) {
    if (threadIdx.x == 0) produce_taps<C>(sm, p.weight, 0);   // every tap at once: the ring holds them all
  } else if (threadIdx.x >= kConsumers) {   // producer warp
    if (threadIdx.x == kConsumers) produce_taps<C>(sm, p.weight, 0);
    __syncwarp();
    if (p.in_counter != nullptr) {
      // The input sums: once this CTA's consumers have read them, count the CTA; the last to count
      // (every CTA has read them) clears them for the next launch of their producer. Here, off the
      // consumers' registers and critical path.
      sums_read_wait();
      unsigned last = 0;
      if (threadIdx.x == kConsumers) last = atomicAdd(p.in_counter, 1u) == gridDim.x - 1;
      if (__shfl_sync(0xffffffffu, last, 0)) {
        double* sums = const_cast<double*>(p.in_sums);
        for (int i = threadIdx.x - kConsumers; i < 2 * kNormSumCopies * p.sums_stride; i += 32) sums[i] = 0.0;
        if (threadIdx.x == kConsumers) *p.in_counter = 0;
      }
    }
    return;
  }
  grid_dependency_wait();   // x, scale, shift, residual and the input sums come from the kernels before this one
#if SF_TILE_PROFILE
  Params lp = p;   // profile builds: tile i of this CTA writes record i of its region
  auto tile_p = [&](int i) -> const Params& {
    lp.profile = p.profile ? p.profile + (static_cast<size_t>(blockIdx.x) * p.profile_iters + i) * kTileProfileSlots
                           : nullptr;
    return lp;
  };
#else
  auto tile_p = [&](int) -> const Params& { return p; };
#endif
  if constexpr (C::kResidentWeights) {
    // A persistent grid: CTA b takes tiles b, b + grid, ... The input affine from sums is formed once
    // per sample a CTA meets; its last tile's sample is its last read of the sums.
    const int total = p.N * p.tiles;
    const int last_n = (blockIdx.x + (total - 1 - static_cast<int>(blockIdx.x)) / gridDim.x * gridDim.x) / p.tiles;
    unsigned ticket = 0;
    int prev_n = -1;
#pragma unroll 1
    for (int t = blockIdx.x, i = 0; t < total; t += gridDim.x, ++i) {
      if (t != static_cast<int>(blockIdx.x)) consumers_sync();   // the last tile's reads of its staged output are done
      const int n = t / p.tiles;
      conv_tile<T, CIN, COUT, UP, STRIDE, CIN_X, false>(tile_p(i), sm, n, t - n * p.tiles, 0, n != prev_n, n == last_n,
                                                        &ticket);
      prev_n = n;
    }
    if (p.in_counter != nullptr) {   // the input sums: the CTA that counted last clears them
      norm_state_release(p.in_counter, p.sums_stride, ticket, reinterpret_cast<unsigned*>(sm.mean_s), threadIdx.x,
                         kConsumers, [] { consumers_sync(); });
    }
  } else {
    const int n = blockIdx.x / p.tiles;
    conv_tile<T, CIN, COUT, UP, STRIDE, CIN_X, false>(tile_p(0), sm, n, blockIdx.x - n * p.tiles, 0);
  }
  if (p.norm_state != nullptr && p.norm_out.scale != nullptr) {   // in-kernel hand-off: the last CTA writes (scale, shift)
    norm_state_finish(p.norm_state, p.N * COUT, COUT, 1.0 / (static_cast<double>(p.Ho) * p.Wo), p.norm_out,
                      reinterpret_cast<unsigned*>(sm.mean_s), threadIdx.x, kConsumers, [] { consumers_sync(); });
  }
#else
  __trap();   // built without sm_90a code: conv3x3_supported() keeps launches away
#endif
}


// Per-tile (sum, M2) of every channel of an NHWC C-channel tensor, C = 32, 64 or 128: the same
// tiles and layout as the Cout = C convolution's epilogue, which launch_handoff reads. Thread: one
// 16-byte chunk (8 channels) of kPer pixels, all loads in flight. The tile (16 × conv3x3_tile_h(C)
// pixels) over the pixel lanes (256 / (C/8)): 8 pixels per thread at C 128 and 64, 4 at C 32; red
// is 8 KB for every C.
template <int C>
constexpr int kMomentsTH = conv3x3_tile_h(C);   // host constexpr: evaluated here, not in the kernel
template <typename T, int C>
__global__ void __launch_bounds__(kMomentsThreads) moments_kernel(const uint16_t* x, float2* partials, int H, int W,
                                                                    int tiles_x, int tiles) {
  constexpr int kMChunks = C / 8, kMLanes = kMomentsThreads / kMChunks, kMTH = kMomentsTH<C>;
  constexpr int kPer = kMTH * kTW / kMLanes;   // 8 pixels each (4 at C 32)
  static_assert((kMChunks & (kMChunks - 1)) == 0 && kPer * kMLanes == kMTH * kTW, "moments: C = 32, 64 or 128");
  __shared__ float red[kMLanes][C];   // [pixel lane][channel]
  __shared__ float mean_s[C];
  const int n = blockIdx.x / tiles, tile = blockIdx.x - n * tiles;
  const int y0 = (tile / tiles_x) * kMTH, x0 = (tile % tiles_x) * kTW;
  const int q = threadIdx.x & (kMChunks - 1), lane_px = threadIdx.x / kMChunks;
  float v[kPer][8];
  bool valid[kPer];
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int px = lane_px + j * kMLanes;
    const int y = y0 + px / kTW, xx = x0 + px % kTW;
    valid[j] = y < H && xx < W;
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (valid[j]) raw = __ldg(x4 + ((static_cast<int64_t>(n) * H + y) * W + xx) * kMChunks + q);
    unpack8<T>(raw, v[j]);
  }
  const float count = static_cast<float>(min(kMTH, H - y0) * min(kTW, W - x0));
  float s[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int j = 0; j < kPer; ++j)
#pragma unroll
    for (int e = 0; e < 8; ++e) s[e] += v[j][e];   // invalid pixels are zeros
#pragma unroll
  for (int e = 0; e < 8; ++e) red[lane_px][q * 8 + e] = s[e];
  __syncthreads();
  float tile_sum = 0.f;
  if (threadIdx.x < C) {
    // Unroll 4, not the compiler's choice: with v still live, unrolling C = 32's 64 lanes by 8 or
    // more spills on sm_80 (its ptxas holds this kernel to 80 registers).
#pragma unroll 4
    for (int l = 0; l < kMLanes; ++l) tile_sum += red[l][threadIdx.x];
    mean_s[threadIdx.x] = tile_sum / count;
  }
  __syncthreads();
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float m = mean_s[q * 8 + e];
    float acc = 0.f;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const float d = valid[j] ? v[j][e] - m : 0.f;
      acc = fmaf(d, d, acc);
    }
    s[e] = acc;
  }
  __syncthreads();   // every thread has read mean_s and finished reading red
#pragma unroll
  for (int e = 0; e < 8; ++e) red[lane_px][q * 8 + e] = s[e];
  __syncthreads();
  if (threadIdx.x < C) {
    float m2 = 0.f;
    for (int l = 0; l < kMLanes; ++l) m2 += red[l][threadIdx.x];
    partials[(static_cast<int64_t>(n) * tiles + tile) * C + threadIdx.x] = make_float2(tile_sum, m2);
  }
}

// Chan et al.'s merge of (count, mean, M2) summaries.
__device__ __forceinline__ void merge(float& na, float& ma, float& m2a, float nb, float mb, float m2b) {
  const float n = na + nb;
  if (n == 0.f) return;
  const float d = mb - ma, f = nb / n;
  ma = fmaf(d, f, ma);
  m2a += m2b + d * d * na * f;
  na = n;
}

// One block per (sample, channel): each thread merges every kHandoffThreads-th tile, kHandoffLoads
// loads in flight, then the block merges its threads (shuffles, then the warps through shared
// memory). A warp per channel was the first form: at 512² deconv2's output has 1024 tiles per
// channel and only 32 channels, so 32 warps merged 32 tiles each in series; at 4K, 32400 tiles each.
// A block sized to the tiles (32 threads per 8, up to 512) was slower at every frame size
// (docs/kernels/conv3x3.md), so every block has 512.
constexpr int kHandoffThreads = 512, kHandoffLoads = 8;
struct HandoffGeometry {
  int N, C, H, W, th, tiles_x, tiles;
};
__global__ void __launch_bounds__(kHandoffThreads) handoff_kernel(const float2* partials, HandoffGeometry geo,
                                                                  NormHandoff h) {
  __shared__ float3 warp_m[kHandoffThreads / 32];   // (count, mean, M2) per warp
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  grid_dependency_wait();      // the partials come from the kernel before this one
  allow_dependents_launch();   // the next convolution may start loading its weights
  const int n = blockIdx.x / geo.C, c = blockIdx.x - n * geo.C;
  const float2* part = partials + static_cast<int64_t>(n) * geo.tiles * geo.C + c;
  float cnt = 0.f, mean = 0.f, m2 = 0.f;
  for (int t0 = threadIdx.x; t0 < geo.tiles; t0 += kHandoffThreads * kHandoffLoads) {
    float2 s[kHandoffLoads];
#pragma unroll
    for (int j = 0; j < kHandoffLoads; ++j) {
      const int t = t0 + kHandoffThreads * j;
      s[j] = t < geo.tiles ? part[static_cast<int64_t>(t) * geo.C] : make_float2(0.f, 0.f);
    }
#pragma unroll
    for (int j = 0; j < kHandoffLoads; ++j) {
      const int t = t0 + kHandoffThreads * j;
      if (t < geo.tiles) {
        const float tc = tile_pixels(t, geo.tiles_x, geo.th, geo.H, geo.W);
        merge(cnt, mean, m2, tc, s[j].x / tc, s[j].y);
      }
    }
  }
  auto merge_warp = [&]() {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float cb = __shfl_xor_sync(0xffffffffu, cnt, o), mb = __shfl_xor_sync(0xffffffffu, mean, o),
                  m2b = __shfl_xor_sync(0xffffffffu, m2, o);
      merge(cnt, mean, m2, cb, mb, m2b);
    }
  };
  merge_warp();
  if (lane == 0) warp_m[warp] = make_float3(cnt, mean, m2);
  __syncthreads();
  if (warp != 0) return;
  const float3 w = lane < kHandoffThreads / 32 ? warp_m[lane] : make_float3(0.f, 0.f, 0.f);   // count 0: merges as nothing
  cnt = w.x;
  mean = w.y;
  m2 = w.z;
  merge_warp();
  if (lane == 0) {
    const float var = fmaxf(m2 / cnt, 0.f);
    const float s = (h.weight ? h.weight[c] : 1.f) * rsqrtf(var + h.eps);
    h.scale[n * geo.C + c] = s;
    h.shift[n * geo.C + c] = (h.bias ? h.bias[c] : 0.f) - mean * s;
  }
}

cudaError_t launch_handoff(const float2* partials, int64_t N, int64_t Ho, int64_t Wo, int cout, int stride,
                           const NormHandoff& h, bool pdl, cudaStream_t stream) {
  HandoffGeometry geo;
  geo.N = static_cast<int>(N);
  geo.C = cout;
  geo.H = static_cast<int>(Ho);
  geo.W = static_cast<int>(Wo);
  geo.th = conv3x3_tile_h(cout, stride);
  geo.tiles_x = static_cast<int>((Wo + kTW - 1) / kTW);
  geo.tiles = static_cast<int>(conv3x3_tiles(Ho, Wo, cout, stride));
  const cudaError_t err = launch_pdl(pdl, handoff_kernel, dim3(static_cast<unsigned>(N * cout)), dim3(kHandoffThreads), 0,
                                     stream, partials, geo, h);
  return err != cudaSuccess ? err : cudaPeekAtLastError();
}

// min_out: the smallest output side the reflection allows (2: the pad is in the output frame; 1 for
// stride 2, whose pad is in the input frame, checked by the caller).
bool valid_sizes(int64_t N, int64_t Ho, int64_t Wo, int cout, int64_t min_out = 2, int stride = 1) {
  return N >= 0 && Ho >= min_out && Wo >= min_out && Ho < (1 << 20) && Wo < (1 << 20) &&
         N * conv3x3_tiles(Ho, Wo, cout, stride) < 0x7fffffff;
}

template <typename T, int CIN, int COUT, int UP, int STRIDE = 1, int CIN_X = CIN>
cudaError_t launch_conv(const Conv3x3Args& a, float2* partials, cudaStream_t stream, int id) {
  using C = Cfg<CIN, COUT, UP, STRIDE, CIN_X>;
  Params p{};   // the chain-only fields stay null
  p.x = static_cast<const uint16_t*>(a.x);
  p.residual = static_cast<const uint16_t*>(a.residual);
  p.act = static_cast<uint16_t*>(a.act);
  p.out = static_cast<uint16_t*>(a.out);
  p.weight = static_cast<const unsigned char*>(a.weight);
  p.scale = a.scale;
  p.shift = a.shift;
  p.partials = partials;
  if (a.norm_state != nullptr) {   // with norm.scale null: the sums stay in the state for the consumer
    p.norm_state = a.norm_state;
    p.norm_out = a.norm;
  }
  if (a.in_state != nullptr) {     // the input norm from the producer's sums
    p.in_counter = static_cast<unsigned*>(a.in_state);
    p.in_sums = norm_state_sums(a.in_state);
    p.gamma = a.in_norm_weight;
    p.beta = a.in_norm_bias;
    p.eps = a.in_eps;
    p.inv_count = 1.0 / (static_cast<double>(a.H) * a.W);
    p.sums_stride = static_cast<int>(a.N) * CIN_X;
  }
  p.N = static_cast<int>(a.N);
  p.H = static_cast<int>(a.H);
  p.W = static_cast<int>(a.W);
  p.Ho = static_cast<int>(conv3x3_out_size(a.H, UP, STRIDE));
  p.Wo = static_cast<int>(conv3x3_out_size(a.W, UP, STRIDE));
  p.tiles_x = (p.Wo + kTW - 1) / kTW;
  p.tiles = static_cast<int>(conv3x3_tiles(p.Ho, p.Wo, COUT, STRIDE));
  p.relu = a.relu;
  p.l2_evict_first = activations_evict_first(
      a.N * (a.H * a.W * CIN_X + static_cast<int64_t>(p.Ho) * p.Wo * COUT) * 2, a.l2_bytes);
  const auto kernel = conv3x3_kernel<T, CIN, COUT, UP, STRIDE, CIN_X>;
  cudaError_t err = allow_smem(kernel, C::kSmem, id, C::kMinBlocks == 2);
  if (err != cudaSuccess) return err;
  int64_t grid = a.N * p.tiles;
  if constexpr (C::kResidentWeights) {   // persistent: as many CTAs as run at once
    int ctas = 0;
    err = resident_ctas(kernel, C::kThreadsPerCta, C::kSmem, id, ctas);
    if (err != cudaSuccess) return err;
    grid = std::min<int64_t>(grid, ctas);
  }
#if SF_TILE_PROFILE
  p.profile_iters = static_cast<int>((a.N * p.tiles + grid - 1) / grid);
  p.profile = tile_profile_region(static_cast<long long>(CIN_X) << 24 | COUT << 16 | UP << 8 | STRIDE,
                                  static_cast<int>(grid), p.profile_iters);
#endif
  err = launch_pdl(true, kernel, dim3(static_cast<unsigned>(grid)), dim3(C::kThreadsPerCta), C::kSmem, stream, p);
  return err != cudaSuccess ? err : cudaPeekAtLastError();
}

template <typename T>
cudaError_t dispatch(const Conv3x3Args& a, float2* partials, cudaStream_t stream, int id0) {
  if (a.stride == 2 && a.cin == 32) return launch_conv<T, 64, 64, 1, 2, 32>(a, partials, stream, id0 + 4);
  if (a.stride == 2) return launch_conv<T, 64, 128, 1, 2>(a, partials, stream, id0 + 3);
  if (a.cin == 128 && a.cout == 128) return launch_conv<T, 128, 128, 1>(a, partials, stream, id0);
  if (a.cin == 128) return launch_conv<T, 128, 64, 2>(a, partials, stream, id0 + 1);
  return launch_conv<T, 64, 32, 2>(a, partials, stream, id0 + 2);
}

}  // namespace

#if SF_TILE_PROFILE
// The registered buffer (sf_tile_profile_set) and what each launch took of it: (offset, entries,
// tag, grid, iters) per launch, in launch order (sf_tile_profile_meta).
namespace {
long long* g_profile = nullptr;
long long g_profile_capacity = 0, g_profile_used = 0;
constexpr int kProfileMetaMax = 4096, kProfileMetaFields = 5;
long long g_profile_meta[kProfileMetaMax][kProfileMetaFields];
int g_profile_launches = 0;
}  // namespace

long long* tile_profile_region(long long tag, int grid, int iters) {
  const long long entries = static_cast<long long>(grid) * iters * kTileProfileSlots;
  if (g_profile == nullptr || g_profile_used + entries > g_profile_capacity || g_profile_launches == kProfileMetaMax) {
    return nullptr;
  }
  long long* region = g_profile + g_profile_used;
  long long* meta = g_profile_meta[g_profile_launches++];
  meta[0] = g_profile_used;
  meta[1] = entries;
  meta[2] = tag;
  meta[3] = grid;
  meta[4] = iters;
  g_profile_used += entries;
  return region;
}
#endif

bool conv3x3_config_supported(int cin, int cout, int upsample, int stride) {
  if (stride == 2) return upsample == 1 && ((cin == 64 && cout == 128) || (cin == 32 && cout == 64));
  return stride == 1 && ((cin == 128 && cout == 128 && upsample == 1) || (cin == 128 && cout == 64 && upsample == 2) ||
                         (cin == 64 && cout == 32 && upsample == 2));
}

int64_t conv3x3_tiles(int64_t Ho, int64_t Wo, int cout, int stride) {
  const int th = conv3x3_tile_h(cout, stride);
  return ((Ho + th - 1) / th) * ((Wo + kTW - 1) / kTW);
}

size_t conv3x3_workspace_bytes(int64_t N, int64_t Ho, int64_t Wo, int cout, int stride) {
  return static_cast<size_t>(N * conv3x3_tiles(Ho, Wo, cout, stride)) * cout * sizeof(float2);
}

bool conv3x3_supported() { return device_runs_sm90a(conv3x3_kernel<__nv_bfloat16, 128, 128, 1>); }

cudaError_t conv3x3_launch(const Conv3x3Args& a, void* workspace, cudaStream_t stream) {
  const int64_t ho = conv3x3_out_size(a.H, a.upsample, a.stride), wo = conv3x3_out_size(a.W, a.upsample, a.stride);
  const bool sizes_ok = a.stride == 2 ? a.H >= 2 && a.W >= 2 && valid_sizes(a.N, ho, wo, a.cout, 1, 2)
                                      : valid_sizes(a.N, ho, wo, a.cout);
  if (!conv3x3_config_supported(a.cin, a.cout, a.upsample, a.stride) || !sizes_ok ||
      (a.scale == nullptr) != (a.shift == nullptr) || (a.scale != nullptr && a.in_state != nullptr) ||
      (a.norm.scale == nullptr) != (a.norm.shift == nullptr) || (a.act != nullptr && a.upsample != 1) ||
      !conv3x3_supported()) {
    return cudaErrorInvalidValue;
  }
  if (a.N == 0) return cudaSuccess;
  // No hand-off asked for (norm.scale and norm_state null): no statistics at all. With a norm_state,
  // no partials (the workspace may be empty); the affine is written only with norm.scale.
  const bool stats = a.norm.scale != nullptr || a.norm_state != nullptr;
  float2* partials = stats && a.norm_state == nullptr ? static_cast<float2*>(workspace) : nullptr;
  const cudaError_t err = a.dtype == ConvDtype::kBFloat16 ? dispatch<__nv_bfloat16>(a, partials, stream, 0)
                                                          : dispatch<__half>(a, partials, stream, 5);
  if (err != cudaSuccess || partials == nullptr) return err;
  return launch_handoff(partials, a.N, ho, wo, a.cout, a.stride, a.norm, true, stream);
}

cudaError_t moments_launch(const MomentsArgs& a, void* workspace, cudaStream_t stream) {
  const int c = a.channels;
  if (!moments_channels_supported(c) || !valid_sizes(a.N, a.H, a.W, c)) return cudaErrorInvalidValue;
  if (a.N == 0) return cudaSuccess;
  float2* partials = static_cast<float2*>(workspace);
  const int tiles_x = static_cast<int>((a.W + kTW - 1) / kTW), tiles = static_cast<int>(conv3x3_tiles(a.H, a.W, c));
  const unsigned blocks = static_cast<unsigned>(a.N * tiles);
  const uint16_t* x = static_cast<const uint16_t*>(a.x);
  const int H = static_cast<int>(a.H), W = static_cast<int>(a.W);
  // One instantiation per (dtype, C): the tile height and the lane split are compile-time.
  using Kernel = void (*)(const uint16_t*, float2*, int, int, int, int);
  const bool bf16 = a.dtype == ConvDtype::kBFloat16;
  const Kernel kernel = c == 128 ? (bf16 ? moments_kernel<__nv_bfloat16, 128> : moments_kernel<__half, 128>)
                        : c == 64 ? (bf16 ? moments_kernel<__nv_bfloat16, 64> : moments_kernel<__half, 64>)
                                  : (bf16 ? moments_kernel<__nv_bfloat16, 32> : moments_kernel<__half, 32>);
  kernel<<<blocks, kMomentsThreads, 0, stream>>>(x, partials, H, W, tiles_x, tiles);
  const cudaError_t err = cudaPeekAtLastError();
  if (err != cudaSuccess) return err;
  return launch_handoff(partials, a.N, a.H, a.W, c, 1, a.norm, device_runs_sm90a(conv3x3_kernel<__nv_bfloat16, 128, 128, 1>), stream);
}

}  // namespace styleforge

#if SF_TILE_PROFILE
// The dev scripts' handles (ctypes): register a device buffer of `capacity` int64 entries (launches
// from then on take regions of it, from its start), and read back the launches' (offset, entries,
// tag, grid, iters); returns how many launches took a region.
extern "C" void sf_tile_profile_set(long long* buffer, long long capacity) {
  styleforge::g_profile = buffer;
  styleforge::g_profile_capacity = capacity;
  styleforge::g_profile_used = 0;
  styleforge::g_profile_launches = 0;
}
extern "C" int sf_tile_profile_meta(long long* out, int max_launches) {
  const int n = std::min(max_launches, styleforge::g_profile_launches);
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < styleforge::kProfileMetaFields; ++f) {
      out[i * styleforge::kProfileMetaFields + f] = styleforge::g_profile_meta[i][f];
    }
  }
  return styleforge::g_profile_launches;
}
#endif
