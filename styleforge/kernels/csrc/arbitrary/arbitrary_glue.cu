// The arbitrary-style model's glue kernels: one pass over memory between two cuDNN convolutions
// (feature_pad), the per-channel normalisation of a feature map (norm_affine), AdaAttN's output and
// its LayerNorm from the attention's moments (adaattn_stats), and the full-size frame from the
// stroke scale's small output (detail_upscale). Semantics: reference/arbitrary_glue.py. All are
// memory-bound; each thread moves 16-byte chunks (8 channels) where the layout allows.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "../common/packed16.cuh"
#include "arbitrary_glue.h"

namespace styleforge {
namespace {

template <typename T>
__device__ __forceinline__ void load8(const void* base, int64_t element, float (&f)[8]) {
  const uint4 v = *reinterpret_cast<const uint4*>(static_cast<const T*>(base) + element);
  unpack8<T>(v, f);
}

// Rounds to T and returns the rounded values (what the next consumer of the stored tensor sees).
template <typename T>
__device__ __forceinline__ uint4 round8(float (&f)[8]) {
  uint4 v;
  v.x = pack2<T>(f[0], f[1]);
  v.y = pack2<T>(f[2], f[3]);
  v.z = pack2<T>(f[4], f[5]);
  v.w = pack2<T>(f[6], f[7]);
  unpack8<T>(v, f);
  return v;
}

template <typename T>
__device__ __forceinline__ void store8(void* base, int64_t element, const uint4& v) {
  *reinterpret_cast<uint4*>(static_cast<T*>(base) + element) = v;
}

// ---- feature_pad: v = resample(act(x + bias)) + skip, reflection-padded, kept, pooled ----------
// One thread per 2×2 quad of the (unpadded) output and 8 channels: the quad's pixels, their
// reflected copies in the border, and their average for `pooled`.
template <typename T>
__global__ void feature_pad_kernel(FeaturePadArgs a) {
  const int chunks = a.C / 8;
  const int qh = (a.Ho + 1) / 2, qw = (a.Wo + 1) / 2;
  const int64_t total = static_cast<int64_t>(a.N) * qh * qw * chunks;
  const int hp = a.Ho + 2 * a.pad, wp = a.Wo + 2 * a.pad;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int k = static_cast<int>(idx % chunks);
    int64_t rest = idx / chunks;
    const int qx = static_cast<int>(rest % qw);
    rest /= qw;
    const int qy = static_cast<int>(rest % qh);
    const int n = static_cast<int>(rest / qh);
    const int c0 = 8 * k;
    float bias[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) bias[e] = a.bias ? a.bias[c0 + e] : 0.f;
    float pool_sum[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int i = 2 * qy + (q >> 1), j = 2 * qx + (q & 1);
      if (i >= a.Ho || j >= a.Wo) continue;
      float v[8];
      if (a.resample == 1) {
        const int64_t base = (static_cast<int64_t>(n) * a.H + 2 * i) * a.W + 2 * j;
        float t[8];
        load8<T>(a.x, base * a.C + c0, v);
#pragma unroll
        for (int d = 1; d < 4; ++d) {
          load8<T>(a.x, (base + (d >> 1) * a.W + (d & 1)) * a.C + c0, t);
#pragma unroll
          for (int e = 0; e < 8; ++e) v[e] = fmaxf(v[e], t[e]);
        }
      } else {
        const int si = a.resample == 2 ? i / 2 : i, sj = a.resample == 2 ? j / 2 : j;
        load8<T>(a.x, ((static_cast<int64_t>(n) * a.H + si) * a.W + sj) * a.C + c0, v);
      }
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        v[e] += bias[e];
        if (a.relu) v[e] = fmaxf(v[e], 0.f);
      }
      const int64_t pixel = (static_cast<int64_t>(n) * a.Ho + i) * a.Wo + j;
      if (a.skip) {
        float s[8];
        load8<T>(a.skip, pixel * a.C + c0, s);
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] += s[e];
      }
      const uint4 packed = round8<T>(v);
      if (a.plain) store8<T>(a.plain, pixel * a.C + c0, packed);
      // This pixel and the border pixels that reflect onto it: row −1 mirrors row 1 and row Ho
      // mirrors row Ho − 2 (both, for row 1 of a 3-row plane); columns alike.
      int rows[3] = {i + a.pad, -1, -1}, cols[3] = {j + a.pad, -1, -1};
      if (a.pad) {
        if (i == 1) rows[1] = 0;
        if (i == a.Ho - 2) rows[2] = a.Ho + 1;
        if (j == 1) cols[1] = 0;
        if (j == a.Wo - 2) cols[2] = a.Wo + 1;
      }
#pragma unroll
      for (int r = 0; r < 3; ++r) {
        if (rows[r] < 0) continue;
#pragma unroll
        for (int s = 0; s < 3; ++s) {
          if (cols[s] < 0) continue;
          store8<T>(a.out, ((static_cast<int64_t>(n) * hp + rows[r]) * wp + cols[s]) * a.C + c0, packed);
        }
      }
#pragma unroll
      for (int e = 0; e < 8; ++e) pool_sum[e] += v[e];
    }
    if (a.pooled) {
      float p[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) p[e] = pool_sum[e] / 4.f;
      const uint4 packed = round8<T>(p);
      store8<T>(a.pooled, ((static_cast<int64_t>(n) * (a.Ho / 2) + qy) * (a.Wo / 2) + qx) * a.C + c0, packed);
    }
  }
}

// ---- norm_affine: per-channel mean and variance over positions, two steps -------------------------
// Step 1: CTA (split, 64-channel group, sample) sums x − r and (x − r)² over its positions, r the
// sample's first position (a shift against cancellation); 8 chunks × 32 position lanes per CTA.
constexpr int kAffineChannels = 64, kAffineLanes = 32;

template <typename T>
__global__ void __launch_bounds__(256) norm_affine_partials(NormAffineArgs a) {
  __shared__ float red_sum[kAffineLanes][kAffineChannels];
  __shared__ float red_sq[kAffineLanes][kAffineChannels];
  const int chunk = threadIdx.x % 8, lane = threadIdx.x / 8;
  const int n = blockIdx.z, c0 = blockIdx.y * kAffineChannels + 8 * chunk, split = blockIdx.x;
  float sum[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f}, sq[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  if (c0 < a.C) {
    const int64_t sample = static_cast<int64_t>(n) * a.P * a.C;
    float r[8], v[8];
    load8<T>(a.x, sample + c0, r);
    const int begin = static_cast<int>(static_cast<int64_t>(a.P) * split / a.splits);
    const int end = static_cast<int>(static_cast<int64_t>(a.P) * (split + 1) / a.splits);
    for (int p = begin + lane; p < end; p += kAffineLanes) {
      load8<T>(a.x, sample + static_cast<int64_t>(p) * a.C + c0, v);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float d = v[e] - r[e];
        sum[e] += d;
        sq[e] = fmaf(d, d, sq[e]);
      }
    }
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    red_sum[lane][8 * chunk + e] = sum[e];
    red_sq[lane][8 * chunk + e] = sq[e];
  }
  __syncthreads();
  if (threadIdx.x < kAffineChannels) {
    const int c = blockIdx.y * kAffineChannels + threadIdx.x;
    float s = 0.f, q = 0.f;
    for (int l = 0; l < kAffineLanes; ++l) {
      s += red_sum[l][threadIdx.x];
      q += red_sq[l][threadIdx.x];
    }
    if (c < a.C) a.partials[(static_cast<int64_t>(n) * a.splits + split) * a.C + c] = make_float2(s, q);
  }
}

// Step 2: one thread per (sample, channel) adds the splits in fp64 and forms (scale, shift).
template <typename T>
__global__ void norm_affine_finish(NormAffineArgs a) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= a.N * a.C) return;
  const int n = idx / a.C, c = idx % a.C;
  double s = 0.0, q = 0.0;
  for (int split = 0; split < a.splits; ++split) {
    const float2 v = a.partials[(static_cast<int64_t>(n) * a.splits + split) * a.C + c];
    s += v.x;
    q += v.y;
  }
  const double mean_d = s / a.P;
  const double var = fmax(q / a.P - mean_d * mean_d, 0.0);
  float r[8];
  load8<T>(a.x, static_cast<int64_t>(n) * a.P * a.C + (c & ~7), r);
  const double mean = static_cast<double>(r[c & 7]) + mean_d;
  const float scale = static_cast<float>(1.0 / sqrt(var + static_cast<double>(a.eps)));
  a.scale[idx] = scale;
  a.shift[idx] = static_cast<float>(-mean) * scale;
}

// ---- adaattn_stats: one warp per token; each lane 8 channels per 256 ---------------------------
constexpr int kMaxChunksPerLane = 4;   // C ≤ 1024

template <typename T>
__global__ void adaattn_stats_kernel(AdaAttnStatsArgs a) {
  const int lane = threadIdx.x % 32, half = a.D / 2, per_lane = a.C / 256;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t warp = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
       warp < static_cast<int64_t>(a.B) * a.N; warp += warps) {
    const int b = static_cast<int>(warp / a.N), t = static_cast<int>(warp % a.N);
    float y[kMaxChunksPerLane][8];
    float total = 0.f;
#pragma unroll
    for (int r = 0; r < kMaxChunksPerLane; ++r) {
      if (r >= per_lane) break;
      const int c0 = 8 * (lane + 32 * r), h = c0 / half, j = c0 % half;
      const int64_t orow = ((static_cast<int64_t>(b) * a.H + h) * a.N + t) * a.D;
      float m[8], e2[8], x[8];
      load8<T>(a.o, orow + j, m);
      load8<T>(a.o, orow + half + j, e2);
      load8<T>(a.x, (static_cast<int64_t>(b) * a.N + t) * a.C + c0, x);
      const int64_t vec = static_cast<int64_t>(b) * a.C + c0;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float s = sqrtf(fmaxf(e2[e] - m[e] * m[e], 0.f) + a.eps);
        const float norm = x[e] * a.x_scale[vec + e] + a.x_shift[vec + e];
        const float std = a.s_std[vec + e];
        y[r][e] = std * s * norm + (a.s_mean[vec + e] + std * m[e]);
      }
      store8<T>(a.y, (static_cast<int64_t>(b) * a.N + t) * a.C + c0, round8<T>(y[r]));
#pragma unroll
      for (int e = 0; e < 8; ++e) total += y[r][e];
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) total += __shfl_xor_sync(0xffffffffu, total, off);
    const float mean = total / a.C;
    float var = 0.f;
#pragma unroll
    for (int r = 0; r < kMaxChunksPerLane; ++r) {
      if (r >= per_lane) break;
#pragma unroll
      for (int e = 0; e < 8; ++e) var += (y[r][e] - mean) * (y[r][e] - mean);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) var += __shfl_xor_sync(0xffffffffu, var, off);
    const float rstd = rsqrtf(var / a.C + a.ln_eps);
#pragma unroll
    for (int r = 0; r < kMaxChunksPerLane; ++r) {
      if (r >= per_lane) break;
      const int c0 = 8 * (lane + 32 * r);
      float v[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = (y[r][e] - mean) * rstd * a.ln_weight[c0 + e] + a.ln_bias[c0 + e];
      store8<T>(a.y_ln, (static_cast<int64_t>(b) * a.N + t) * a.C + c0, round8<T>(v));
    }
  }
}

// ---- detail_upscale: bicubic (PyTorch's, A = −0.75, borders clamped, along W then H, as its
// kernel sums) + the content's luma. Two passes: 4 coalesced taps a pixel in the second instead
// of 16 scattered ones (the one-pass kernel was the slower) --------------------------------------
__device__ __forceinline__ void cubic_weights(float t, float (&w)[4]) {
  constexpr float A = -0.75f;
  auto near = [](float x) { return ((A + 2.f) * x - (A + 3.f)) * x * x + 1.f; };
  auto far = [](float x) { return ((A * x - 5.f * A) * x + 8.f * A) * x - 4.f * A; };
  w[0] = far(t + 1.f);
  w[1] = near(t);
  w[2] = near(1.f - t);
  w[3] = far(2.f - t);
}

// The source taps of output index `o` of a bicubic resize from `in` to `out` samples.
__device__ __forceinline__ void cubic_taps(int o, int in, float scale, float (&w)[4], int (&idx)[4]) {
  const float r = scale * (o + 0.5f) - 0.5f;
  const float f = floorf(r);
  cubic_weights(r - f, w);
#pragma unroll
  for (int k = 0; k < 4; ++k) idx[k] = min(max(static_cast<int>(f) - 1 + k, 0), in - 1);
}

// Pass 1, along W at the small height: wide (N, 3, h, W) = the rows of diff resized to W.
__global__ void detail_upscale_rows(DetailUpscaleArgs a) {
  const int64_t total = static_cast<int64_t>(a.N) * 3 * a.h * a.W;
  const float scale = static_cast<float>(a.w) / a.W;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int x = static_cast<int>(idx % a.W);
    const int64_t row = idx / a.W;                 // (n·3 + c)·h + r
    float w[4];
    int xs[4];
    cubic_taps(x, a.w, scale, w, xs);
    const float* src = a.diff + row * a.w;
    a.wide[idx] = src[xs[0]] * w[0] + src[xs[1]] * w[1] + src[xs[2]] * w[2] + src[xs[3]] * w[3];
  }
}

// Pass 2, along H: out = clamp(Σ taps of wide + luma(content), 0, 255), one thread per pixel.
__global__ void detail_upscale_columns(DetailUpscaleArgs a) {
  const int64_t total = static_cast<int64_t>(a.N) * a.H * a.W;
  const float scale = static_cast<float>(a.h) / a.H;
  const int64_t plane = static_cast<int64_t>(a.H) * a.W;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int x = static_cast<int>(idx % a.W);
    const int y = static_cast<int>((idx / a.W) % a.H);
    const int n = static_cast<int>(idx / plane);
    float w[4];
    int ys[4];
    cubic_taps(y, a.h, scale, w, ys);
    const float* in = a.content + n * 3 * plane + static_cast<int64_t>(y) * a.W + x;
    const float luma = in[0] * 0.299f + in[plane] * 0.587f + in[2 * plane] * 0.114f;
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const float* col = a.wide + (static_cast<int64_t>(n) * 3 + c) * a.h * a.W + x;
      float acc = 0.f;
#pragma unroll
      for (int r = 0; r < 4; ++r) acc += col[static_cast<int64_t>(ys[r]) * a.W] * w[r];
      a.out[(static_cast<int64_t>(n) * 3 + c) * plane + static_cast<int64_t>(y) * a.W + x] =
          fminf(fmaxf(acc + luma, 0.f), 255.f);
    }
  }
}

int grid_for(int64_t work, int threads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<int>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

}  // namespace

int norm_affine_splits(int positions) {
  const int splits = positions / 256;
  return splits < 1 ? 1 : (splits > 64 ? 64 : splits);
}

void launch_feature_pad(const FeaturePadArgs& a, cudaStream_t stream) {
  const int64_t work = static_cast<int64_t>(a.N) * ((a.Ho + 1) / 2) * ((a.Wo + 1) / 2) * (a.C / 8);
  const int grid = grid_for(work, 256);
  if (a.dtype == GlueDtype::kBFloat16) feature_pad_kernel<__nv_bfloat16><<<grid, 256, 0, stream>>>(a);
  else feature_pad_kernel<__half><<<grid, 256, 0, stream>>>(a);
}

void launch_norm_affine(const NormAffineArgs& a, cudaStream_t stream) {
  const dim3 grid(a.splits, (a.C + kAffineChannels - 1) / kAffineChannels, a.N);
  const int finish = grid_for(static_cast<int64_t>(a.N) * a.C, 256);
  if (a.dtype == GlueDtype::kBFloat16) {
    norm_affine_partials<__nv_bfloat16><<<grid, 256, 0, stream>>>(a);
    norm_affine_finish<__nv_bfloat16><<<finish, 256, 0, stream>>>(a);
  } else {
    norm_affine_partials<__half><<<grid, 256, 0, stream>>>(a);
    norm_affine_finish<__half><<<finish, 256, 0, stream>>>(a);
  }
}

void launch_adaattn_stats(const AdaAttnStatsArgs& a, cudaStream_t stream) {
  const int grid = grid_for(static_cast<int64_t>(a.B) * a.N * 32, 256);
  if (a.dtype == GlueDtype::kBFloat16) adaattn_stats_kernel<__nv_bfloat16><<<grid, 256, 0, stream>>>(a);
  else adaattn_stats_kernel<__half><<<grid, 256, 0, stream>>>(a);
}

void launch_detail_upscale(const DetailUpscaleArgs& a, cudaStream_t stream) {
  detail_upscale_rows<<<grid_for(static_cast<int64_t>(a.N) * 3 * a.h * a.W, 256), 256, 0, stream>>>(a);
  detail_upscale_columns<<<grid_for(static_cast<int64_t>(a.N) * a.H * a.W, 256), 256, 0, stream>>>(a);
}

}  // namespace styleforge
