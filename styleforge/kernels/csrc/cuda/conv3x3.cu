// The style network's residual-block convolution with its InstanceNorms fused in: 3×3, 128 → 128
// channels, stride 1, reflection pad 1, fp16/bf16 NHWC, fp32 accumulate, on Hopper wgmma.
//   prologue  the previous norm's apply (a = x·scale + shift, + residual, ReLU), reflection
//             resolved in the address math, written once to shared memory (and, if asked, the
//             tile's interior to `act`, which becomes the next residual);
//   main loop an implicit GEMM: M = 128 output pixels (an 8 × 16 tile), N = 128 output
//             channels, K = 9 taps × 128 input channels;
//   epilogue  the output, rounded, plus per-tile (sum, M2) of every channel for the next norm;
// then a second small kernel turns the tiles' moments into (scale, shift) per (sample, channel).
// So an InstanceNorm between two of these convolutions costs no pass over the activation.
// Pure CUDA (no torch); bindings_conv3x3.cpp binds it; semantics: reference_conv3x3.py.
//
// Block: 288 threads = two consumer warpgroups + one producer warp. Warpgroup wg owns output rows
// 4wg..4wg+3 of the tile (wgmma M = 64: warp w of the group owns row 4wg + w, its 16 pixels being
// the m16 rows of the A fragment) and all 128 output channels (wgmma N = 128, 64 fp32 accumulator
// registers per thread).
//  * A (activations) comes from registers: the prologue stores the 10 × 18-pixel halo tile in
//    shared memory, 256 bytes per pixel with the sixteen 16-byte chunks XOR-swizzled by the
//    pixel's low 3 bits, so the ldmatrix.x4 of 16 consecutive pixels (one tap, 16 channels) is
//    conflict-free. A tap (ky, kx) is the same tile shifted: no im2col, each input pixel is loaded
//    from global memory once per tile, not nine times. The fragments of tap t + 1 are loaded while
//    tap t's 8 wgmmas run (two register buffers).
//  * B (weights) comes from shared memory: one 32 KB tap at a time, in a 4-stage ring filled by
//    the producer warp with bulk copies (full/empty mbarriers). The packed weight is already the
//    shared-memory image: per tap two [128 n][64 k] blocks of 128-byte rows with the 128-byte
//    swizzle, i.e. K-major B with descriptor SBO = 1024 (8 rows), start + 32 bytes per k16 step.
//  * Statistics: from the rounded outputs (what the next layer reads), per tile the channel sum,
//    then the tile mean, then M2 = Σ(v − mean)²; the finalize kernel merges tiles with Chan's
//    formula, so large means do not cancel the variance away.
// Why one tile per block and no persistence: at 512² (the frame that needs it) the 128 × 128
// layer has 128 tiles, one wave; at 1080p the engine times this chain against cuDNN's and keeps the
// faster. Not covered: other channel counts, strides, upsampling, GPUs other than sm_90a (the engine
// keeps cuDNN there).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "smem_optin.cuh"
#include "sm90_ptx.cuh"
#include "../conv3x3.h"

namespace styleforge {
namespace {

constexpr int kC = kConv3x3Channels;
constexpr int kTH = kConv3x3TileH, kTW = kConv3x3TileW;
constexpr int kHaloH = kTH + 2, kHaloW = kTW + 2;
constexpr int kHaloPixels = kHaloH * kHaloW;               // 180
constexpr int kPixelBytes = kC * 2;                        // 256: sixteen 16-byte chunks
constexpr int kChunks = kPixelBytes / 16;
constexpr uint32_t kHaloBytes = kHaloPixels * kPixelBytes; // 46080 = 45 · 1024
constexpr uint32_t kTapBytes = kC * kC * 2;                // 32768: one tap of B
[[maybe_unused]] constexpr int kTaps = 9;
constexpr int kStages = 4;
constexpr int kConsumers = 256, kThreads = kConsumers + 32;
constexpr uint32_t kBarOff = kStages * kTapBytes + kHaloBytes;
constexpr uint32_t kRedOff = kBarOff + 2 * kStages * 8;     // fp32 [8 warps][128] + mean[128]
constexpr size_t kSmem = kRedOff + (8 + 1) * kC * 4 + 1024; // + slack to 1024-align the base
constexpr int kMomentsThreads = 256;

struct Params {
  const uint16_t* x;
  const uint16_t* residual;
  uint16_t* act;
  uint16_t* out;
  const unsigned char* weight;
  const float* scale;
  const float* shift;
  float2* partials;   // [N][tiles][128] (sum, M2)
  int H, W, tiles_x, tiles;
  bool relu;
};

#if SF_SM90A   // helpers of the sm_90a kernel only
__device__ __forceinline__ int reflect_clamp(int i, int n) {
  i = i < 0 ? -i : (i >= n ? 2 * n - 2 - i : i);
  return min(max(i, 0), n - 1);   // only tiles past the edge reach further; their outputs are dropped
}
#endif

template <typename T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      const float2 p = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[i]));
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    } else {
      const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

template <typename T>
__device__ __forceinline__ float round_to(float v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(__float2bfloat16_rn(v));
  } else {
    return __half2float(__float2half_rn(v));
  }
}

// Count of image pixels in tile `tile` (row-major over tiles_x): edge tiles are clipped.
__device__ __forceinline__ float tile_pixels(int tile, int tiles_x, int H, int W) {
  const int ty = tile / tiles_x, tx = tile - ty * tiles_x;
  return static_cast<float>(min(kTH, H - ty * kTH) * min(kTW, W - tx * kTW));
}

#if SF_SM90A
// Sums v over the 8 lanes that share lane % 4 (the g index of an mma fragment).
__device__ __forceinline__ float sum_over_g(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  v += __shfl_xor_sync(0xffffffffu, v, 16);
  return v;
}

__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }
#endif

template <typename T>
__global__ void __launch_bounds__(kThreads, 1) conv3x3_kernel(const Params p) {
#if SF_SM90A
  using namespace sm90;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* smem = smem_raw + (base - raw);
  const uint32_t w_s = base;                          // [stage][kb 2][n 128][128 B]
  const uint32_t halo_s = base + kStages * kTapBytes;  // [pixel 180][256 B], chunks swizzled
  unsigned char* halo = smem + kStages * kTapBytes;
  const uint32_t bar_full = base + kBarOff, bar_empty = bar_full + 8 * kStages;
  float* red = reinterpret_cast<float*>(smem + kRedOff);   // [8 warps][128]
  float* mean_s = red + 8 * kC;

  const int tid = threadIdx.x;
  const int n = blockIdx.x / p.tiles, tile = blockIdx.x - n * p.tiles;
  const int y0 = (tile / p.tiles_x) * kTH, x0 = (tile % p.tiles_x) * kTW;
  const int H = p.H, W = p.W;

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(bar_full + 8 * s, 1);
      mbar_init(bar_empty + 8 * s, 8);   // one arrival per consumer warp
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (tid >= kConsumers) {   // producer warp: the taps of B, through the ring
    if (tid == kConsumers) {
      for (int tap = 0; tap < kTaps; ++tap) {
        const int st = tap % kStages;
        if (tap >= kStages) mbar_wait(bar_empty + 8 * st, ((tap / kStages) - 1) & 1);
        mbar_expect_tx(bar_full + 8 * st, kTapBytes);
        bulk_copy_g2s(w_s + st * kTapBytes, p.weight + static_cast<size_t>(tap) * kTapBytes, kTapBytes,
                      bar_full + 8 * st);
      }
    }
    return;
  }

  // ---- prologue: a = act(x·scale + shift + residual) on the reflected halo tile ----------------
  {
    const int q = tid & (kChunks - 1);   // fixed per thread: its 8 channels' affine stays in registers
    float sc[8], sh[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sc[e] = p.scale ? p.scale[n * kC + q * 8 + e] : 1.f;
      sh[e] = p.shift ? p.shift[n * kC + q * 8 + e] : 0.f;
    }
    const uint4* x4 = reinterpret_cast<const uint4*>(p.x);
    const uint4* r4 = reinterpret_cast<const uint4*>(p.residual);
    constexpr int kRowsPerPass = kConsumers / kChunks;   // 16 pixels per pass
    constexpr int kBatch = 4;                            // loads in flight per thread
#pragma unroll 1
    for (int first = tid / kChunks; first < kHaloPixels; first += kBatch * kRowsPerPass) {
      uint4 v[kBatch], rv[kBatch];
      int64_t off[kBatch];
      bool interior[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int P = first + j * kRowsPerPass;
        const int r = P / kHaloW, c = P - r * kHaloW;
        const int gy = reflect_clamp(y0 - 1 + r, H), gx = reflect_clamp(x0 - 1 + c, W);
        off[j] = ((static_cast<int64_t>(n) * H + gy) * W + gx) * kChunks + q;
        interior[j] = r >= 1 && r <= kTH && c >= 1 && c <= kTW && y0 + r - 1 < H && x0 + c - 1 < W;
        if (P < kHaloPixels) {
          v[j] = __ldg(x4 + off[j]);
          if (r4) rv[j] = __ldg(r4 + off[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int P = first + j * kRowsPerPass;
        if (P >= kHaloPixels) break;
        float f[8];
        unpack8<T>(v[j], f);
#pragma unroll
        for (int e = 0; e < 8; ++e) f[e] = fmaf(f[e], sc[e], sh[e]);
        if (r4) {
          float g[8];
          unpack8<T>(rv[j], g);
#pragma unroll
          for (int e = 0; e < 8; ++e) f[e] += g[e];
        }
        if (p.relu) {
#pragma unroll
          for (int e = 0; e < 8; ++e) f[e] = fmaxf(f[e], 0.f);
        }
        const uint4 a = make_uint4(pack2<T>(f[0], f[1]), pack2<T>(f[2], f[3]), pack2<T>(f[4], f[5]),
                                   pack2<T>(f[6], f[7]));
        *reinterpret_cast<uint4*>(halo + P * kPixelBytes + ((q ^ (P & 7)) << 4)) = a;
        if (p.act && interior[j]) reinterpret_cast<uint4*>(p.act)[off[j]] = a;
      }
    }
  }
  consumers_sync();

  // ---- main loop: 9 taps × 8 k16 steps of wgmma m64n128k16 per warpgroup -----------------------
  const int lane = tid & 31, warp = tid >> 5;      // warp 0..7; warp & 3 is its place in the group
  const int wr = warp;                             // output row of the tile: 4·wg + (warp & 3)
  // ldmatrix.x4: lanes 0–15 address pixels 0–15 at channels 0–7 of the k16 step (→ a0, a1),
  // lanes 16–31 the same pixels at channels 8–15 (→ a2, a3).
  const int lrow = lane & 15, lhalf = lane >> 4;
  auto load_a = [&](uint32_t (&a)[8][4], int tap) {
    const int ky = tap / 3, kx = tap - ky * 3;
    const int P = (wr + ky) * kHaloW + lrow + kx;
    const uint32_t row = halo_s + P * kPixelBytes;
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) ldmatrix_x4(a[ks], row + (((2 * ks + lhalf) ^ (P & 7)) << 4));
  };
  constexpr bool kBF16 = std::is_same_v<T, __nv_bfloat16>;

  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.f;
  uint32_t a0[8][4], a1[8][4];
  load_a(a0, 0);
#pragma unroll
  for (int tap = 0; tap < kTaps; ++tap) {
    const int st = tap % kStages;
    uint32_t(&a)[8][4] = (tap & 1) ? a1 : a0;
    uint32_t(&next)[8][4] = (tap & 1) ? a0 : a1;
    mbar_wait(bar_full + 8 * st, (tap / kStages) & 1);
    wg_fence();
    const uint32_t wb = w_s + st * kTapBytes;
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      wgmma_rs_n128<kBF16, 0>(acc, a[ks], sw128_desc(wb + (ks >> 2) * (kTapBytes / 2) + (ks & 3) * 32, 16, 1024));
    }
    wg_commit();
    if (tap > 0) {
      wg_wait<1>();   // tap − 1's wgmmas are done: its B stage and A registers are free
      reg_fence(next);
      if (lane == 0) mbar_arrive(bar_empty + 8 * ((tap - 1) % kStages));
    }
    if (tap + 1 < kTaps) load_a(next, tap + 1);
  }
  wg_wait<0>();
  reg_fence(acc);
  reg_fence(a0);

  // ---- epilogue: round, per-tile moments, stage and store -------------------------------------
  // Lane (g, t) holds rows g and g + 8 (output columns x0 + g, x0 + g + 8 of row y0 + wr) and
  // channels 8i + 2t, 8i + 2t + 1 in acc[4i .. 4i + 3].
  const int g = lane >> 2, t = lane & 3;
  const int oy = y0 + wr;
  const bool v0 = oy < H && x0 + g < W, v1 = oy < H && x0 + g + 8 < W;
  const float count = static_cast<float>(min(kTH, H - y0) * min(kTW, W - x0));
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = round_to<T>(acc[i]);
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const float s0 = sum_over_g((v0 ? acc[4 * i] : 0.f) + (v1 ? acc[4 * i + 2] : 0.f));
    const float s1 = sum_over_g((v0 ? acc[4 * i + 1] : 0.f) + (v1 ? acc[4 * i + 3] : 0.f));
    if (g == 0) *reinterpret_cast<float2*>(red + warp * kC + 8 * i + 2 * t) = make_float2(s0, s1);
  }
  consumers_sync();
  float tile_sum = 0.f;
  if (tid < kC) {
#pragma unroll
    for (int w = 0; w < 8; ++w) tile_sum += red[w * kC + tid];
    mean_s[tid] = tile_sum / count;
  }
  consumers_sync();
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const float2 m = *reinterpret_cast<const float2*>(mean_s + 8 * i + 2 * t);
    const float d0 = v0 ? acc[4 * i] - m.x : 0.f, d2 = v1 ? acc[4 * i + 2] - m.x : 0.f;
    const float d1 = v0 ? acc[4 * i + 1] - m.y : 0.f, d3 = v1 ? acc[4 * i + 3] - m.y : 0.f;
    const float s0 = sum_over_g(d0 * d0 + d2 * d2), s1 = sum_over_g(d1 * d1 + d3 * d3);
    if (g == 0) *reinterpret_cast<float2*>(red + warp * kC + 8 * i + 2 * t) = make_float2(s0, s1);
  }
  // The halo is dead (every warp is past its last ldmatrix: the barrier above): stage the output
  // there as [pixel][256 B] with the same chunk swizzle, conflict-free for these 4-byte writes.
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int px = wr * kTW + g;   // (px + 8) & 7 == px & 7 == g
    const uint32_t off = ((i ^ g) << 4) + 4 * t;
    *reinterpret_cast<uint32_t*>(halo + px * kPixelBytes + off) = pack2<T>(acc[4 * i], acc[4 * i + 1]);
    *reinterpret_cast<uint32_t*>(halo + (px + 8) * kPixelBytes + off) = pack2<T>(acc[4 * i + 2], acc[4 * i + 3]);
  }
  consumers_sync();
  if (tid < kC) {
    float m2 = 0.f;
#pragma unroll
    for (int w = 0; w < 8; ++w) m2 += red[w * kC + tid];
    p.partials[(static_cast<int64_t>(n) * p.tiles + tile) * kC + tid] = make_float2(tile_sum, m2);
  }
  uint4* out4 = reinterpret_cast<uint4*>(p.out);
#pragma unroll
  for (int j = 0; j < kTH * kTW * kChunks / kConsumers; ++j) {
    const int idx = tid + j * kConsumers, px = idx / kChunks, q = idx & (kChunks - 1);
    const int y = y0 + px / kTW, xx = x0 + px % kTW;
    if (y < H && xx < W) {
      out4[((static_cast<int64_t>(n) * H + y) * W + xx) * kChunks + q] =
          *reinterpret_cast<const uint4*>(halo + px * kPixelBytes + ((q ^ (px & 7)) << 4));
    }
  }
#else
  __trap();   // built without sm_90a code: conv3x3_supported() keeps launches away
#endif
}

// Per-tile (sum, M2) of every channel of an NHWC 128-channel tensor, same tiles and layout as the
// convolution's epilogue. Thread: one 16-byte chunk (8 channels) of 8 pixels, all loads in flight.
template <typename T>
__global__ void __launch_bounds__(kMomentsThreads) moments_kernel(const uint16_t* x, float2* partials, int H, int W,
                                                                    int tiles_x, int tiles) {
  __shared__ float red[kMomentsThreads / kChunks][kC];   // [pixel lane][channel]
  __shared__ float mean_s[kC];
  const int n = blockIdx.x / tiles, tile = blockIdx.x - n * tiles;
  const int y0 = (tile / tiles_x) * kTH, x0 = (tile % tiles_x) * kTW;
  const int q = threadIdx.x & (kChunks - 1), lane_px = threadIdx.x / kChunks;   // 16 pixel lanes
  constexpr int kPer = kTH * kTW / (kMomentsThreads / kChunks);                 // 8 pixels each
  float v[kPer][8];
  bool valid[kPer];
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int px = lane_px + j * (kMomentsThreads / kChunks);
    const int y = y0 + px / kTW, xx = x0 + px % kTW;
    valid[j] = y < H && xx < W;
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (valid[j]) raw = __ldg(x4 + ((static_cast<int64_t>(n) * H + y) * W + xx) * kChunks + q);
    unpack8<T>(raw, v[j]);
  }
  const float count = static_cast<float>(min(kTH, H - y0) * min(kTW, W - x0));
  float s[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int j = 0; j < kPer; ++j)
#pragma unroll
    for (int e = 0; e < 8; ++e) s[e] += v[j][e];   // invalid pixels are zeros
#pragma unroll
  for (int e = 0; e < 8; ++e) red[lane_px][q * 8 + e] = s[e];
  __syncthreads();
  float tile_sum = 0.f;
  if (threadIdx.x < kC) {
    for (int l = 0; l < kMomentsThreads / kChunks; ++l) tile_sum += red[l][threadIdx.x];
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
  if (threadIdx.x < kC) {
    float m2 = 0.f;
    for (int l = 0; l < kMomentsThreads / kChunks; ++l) m2 += red[l][threadIdx.x];
    partials[(static_cast<int64_t>(n) * tiles + tile) * kC + threadIdx.x] = make_float2(tile_sum, m2);
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

// One warp per (sample, channel): lanes merge tiles lane, lane + 32, ..., then the warp merges.
__global__ void __launch_bounds__(256) handoff_kernel(const float2* partials, int N, int H, int W, int tiles_x,
                                                      int tiles, NormHandoff h) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= N * kC) return;
  const int n = warp / kC, c = warp - n * kC;
  float cnt = 0.f, mean = 0.f, m2 = 0.f;
  for (int t = lane; t < tiles; t += 32) {
    const float2 s = partials[(static_cast<int64_t>(n) * tiles + t) * kC + c];
    const float tc = tile_pixels(t, tiles_x, H, W);
    merge(cnt, mean, m2, tc, s.x / tc, s.y);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float cb = __shfl_xor_sync(0xffffffffu, cnt, o), mb = __shfl_xor_sync(0xffffffffu, mean, o),
                m2b = __shfl_xor_sync(0xffffffffu, m2, o);
    merge(cnt, mean, m2, cb, mb, m2b);
  }
  if (lane == 0) {
    const float var = fmaxf(m2 / cnt, 0.f);
    const float s = (h.weight ? h.weight[c] : 1.f) * rsqrtf(var + h.eps);
    h.scale[n * kC + c] = s;
    h.shift[n * kC + c] = (h.bias ? h.bias[c] : 0.f) - mean * s;
  }
}

cudaError_t launch_handoff(const float2* partials, int64_t N, int64_t H, int64_t W, const NormHandoff& h,
                           cudaStream_t stream) {
  const int tiles_x = static_cast<int>((W + kTW - 1) / kTW);
  const int tiles = static_cast<int>(conv3x3_tiles(H, W));
  const int64_t threads = N * kC * 32;
  handoff_kernel<<<static_cast<unsigned>((threads + 255) / 256), 256, 0, stream>>>(
      partials, static_cast<int>(N), static_cast<int>(H), static_cast<int>(W), tiles_x, tiles, h);
  return cudaPeekAtLastError();
}

// Whether this build has sm_90a code for the device (compute capability 9.0 and a binary for it,
// not a JIT of older PTX). Cached per device.
bool device_runs_sm90a() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> state[kMaxDevices];   // 0 unknown, 1 yes, −1 no
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return false;
  int s = state[dev].load(std::memory_order_relaxed);
  if (s == 0) {
    int major = 0, minor = 0;
    cudaFuncAttributes attr{};
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
                    major == 9 && minor == 0 &&
                    cudaFuncGetAttributes(&attr, conv3x3_kernel<__nv_bfloat16>) == cudaSuccess &&
                    attr.binaryVersion == 90;
    s = ok ? 1 : -1;
    state[dev].store(s, std::memory_order_relaxed);
  }
  return s > 0;
}

bool valid_sizes(int64_t N, int64_t H, int64_t W) {
  return N >= 0 && H >= 2 && W >= 2 && H < (1 << 20) && W < (1 << 20) && N * conv3x3_tiles(H, W) < 0x7fffffff;
}

template <typename T>
cudaError_t launch_conv(const Conv3x3Args& a, float2* partials, cudaStream_t stream, int id) {
  Params p;
  p.x = static_cast<const uint16_t*>(a.x);
  p.residual = static_cast<const uint16_t*>(a.residual);
  p.act = static_cast<uint16_t*>(a.act);
  p.out = static_cast<uint16_t*>(a.out);
  p.weight = static_cast<const unsigned char*>(a.weight);
  p.scale = a.scale;
  p.shift = a.shift;
  p.partials = partials;
  p.H = static_cast<int>(a.H);
  p.W = static_cast<int>(a.W);
  p.tiles_x = static_cast<int>((a.W + kTW - 1) / kTW);
  p.tiles = static_cast<int>(conv3x3_tiles(a.H, a.W));
  p.relu = a.relu;
  const cudaError_t err = allow_smem(conv3x3_kernel<T>, kSmem, id);
  if (err != cudaSuccess) return err;
  conv3x3_kernel<T><<<static_cast<unsigned>(a.N * p.tiles), kThreads, kSmem, stream>>>(p);
  return cudaPeekAtLastError();
}

}  // namespace

int64_t conv3x3_tiles(int64_t H, int64_t W) { return ((H + kTH - 1) / kTH) * ((W + kTW - 1) / kTW); }

size_t conv3x3_workspace_bytes(int64_t N, int64_t H, int64_t W) {
  return static_cast<size_t>(N * conv3x3_tiles(H, W)) * kC * sizeof(float2);
}

bool conv3x3_supported() { return device_runs_sm90a(); }

cudaError_t conv3x3_launch(const Conv3x3Args& a, void* workspace, cudaStream_t stream) {
  if (!valid_sizes(a.N, a.H, a.W) || (a.scale == nullptr) != (a.shift == nullptr) || !conv3x3_supported()) {
    return cudaErrorInvalidValue;
  }
  if (a.N == 0) return cudaSuccess;
  float2* partials = static_cast<float2*>(workspace);
  const cudaError_t err = a.dtype == ConvDtype::kBFloat16 ? launch_conv<__nv_bfloat16>(a, partials, stream, 0)
                                                          : launch_conv<__half>(a, partials, stream, 1);
  if (err != cudaSuccess) return err;
  return launch_handoff(partials, a.N, a.H, a.W, a.norm, stream);
}

cudaError_t moments_launch(const MomentsArgs& a, void* workspace, cudaStream_t stream) {
  if (!valid_sizes(a.N, a.H, a.W)) return cudaErrorInvalidValue;
  if (a.N == 0) return cudaSuccess;
  float2* partials = static_cast<float2*>(workspace);
  const int tiles_x = static_cast<int>((a.W + kTW - 1) / kTW), tiles = static_cast<int>(conv3x3_tiles(a.H, a.W));
  const unsigned blocks = static_cast<unsigned>(a.N * tiles);
  const uint16_t* x = static_cast<const uint16_t*>(a.x);
  const int H = static_cast<int>(a.H), W = static_cast<int>(a.W);
  if (a.dtype == ConvDtype::kBFloat16) {
    moments_kernel<__nv_bfloat16><<<blocks, kMomentsThreads, 0, stream>>>(x, partials, H, W, tiles_x, tiles);
  } else {
    moments_kernel<__half><<<blocks, kMomentsThreads, 0, stream>>>(x, partials, H, W, tiles_x, tiles);
  }
  const cudaError_t err = cudaPeekAtLastError();
  if (err != cudaSuccess) return err;
  return launch_handoff(partials, a.N, a.H, a.W, a.norm, stream);
}

}  // namespace styleforge
