// Fused InstanceNorm family: statistics, affine, residual, ReLU, ×2 nearest upsample and
// reflection pad in two passes over x (statistics, then one write of the padded output).
//
// Pure CUDA (runtime, fp16 and bf16 headers only, no torch) so CI can compile-check it with
// nvcc on a machine without a GPU; bindings.cpp turns tensors into InstanceNormArgs. The
// semantics are those of styleforge/kernels/reference.py.
//
// Design:
//   1. stats:    every (n, c) plane is split over several blocks, since N·C can be 32 on a
//                GPU of 132 SMs. Threads accumulate sums of (x − shift) and (x − shift)² in
//                fp32, where `shift` is the mean of 16 samples of the plane: the network works
//                in 0–255, and shifting near the mean keeps E[d²] − E[d]² from cancelling.
//                Each block writes its (Σd, Σd²) to a partials array: no atomics, no memset,
//                and the result is bitwise deterministic.
//                NCHW: a block reduces a contiguous chunk of one plane with 16-byte loads
//                (scalar head/tail for misaligned starts). channels_last: a block takes a
//                range of pixels × a tile of up to 32 channel groups, one group of 16 bytes
//                (8 half/bf16 or 4 fp32 channels) per thread when C allows, else one channel.
//   2. finalize: one warp per plane sums the partials in fp64 and stores
//                (mean_hi, scale, offset) so that y = (x − mean_hi)·scale + offset, where
//                mean_hi is the mean rounded to fp32 and offset absorbs the rounding: x − mean_hi
//                is exact near the mean, so a large mean costs no precision.
//   3. apply:    iterates over OUTPUT pixels (coalesced writes); each output row/column maps
//                to its source by reflection then ÷upsample; the residual is read through
//                its own strides. channels_last writes 16 bytes per thread.
// The shift is computed by the chunk-0 block of each plane and handed to finalize through the
// workspace, so every number that finalize combines was formed from the same shift.
// L2: the statistics pass streams x from its start to its end, so when it finishes the L2
// cache holds the END of x; the apply pass therefore walks output rows from last to first and
// finds its first ~L2-size of input there instead of in DRAM. Tensors that fit in L2 are read
// from DRAM once; larger ones cost one read, one write and (size − L2) of re-read.
// Length: ~660 lines, over STYLE.md's 600, because the host planner that sizes the grids must
// stay in the same file as the kernels whose indexing it mirrors.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "../instance_norm.h"

namespace styleforge {
namespace {

constexpr int kThreads = 256;
constexpr int kShiftSamples = 16;
constexpr int kMaxTileGroups = 32;   // channel groups per channels_last block
constexpr int kMaxChunks = 4096;     // blocks per plane in the statistics pass
constexpr int kMaxGridY = 65535;
constexpr int kUnroll = 4;           // loads in flight per thread in the apply kernels

// ---- element access: fp32 math on fp32/fp16/bf16 storage ------------------------------------

template <typename T> struct Elem;

template <> struct Elem<float> {
  static constexpr int kPerWord = 1;
  __device__ __forceinline__ static float load(const float* p) { return __ldg(p); }
  __device__ __forceinline__ static void store(float* p, float v) { *p = v; }
  __device__ __forceinline__ static float unpack(uint32_t w, int) { return __uint_as_float(w); }
  __device__ __forceinline__ static uint32_t pack(const float* v) { return __float_as_uint(v[0]); }
};

template <> struct Elem<__half> {
  static constexpr int kPerWord = 2;
  __device__ __forceinline__ static float load(const __half* p) { return __half2float(__ldg(p)); }
  __device__ __forceinline__ static void store(__half* p, float v) { *p = __float2half_rn(v); }
  __device__ __forceinline__ static float unpack(uint32_t w, int i) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(i ? (w >> 16) : (w & 0xffffu))));
  }
  __device__ __forceinline__ static uint32_t pack(const float* v) {
    return static_cast<uint32_t>(__half_as_ushort(__float2half_rn(v[0]))) |
           (static_cast<uint32_t>(__half_as_ushort(__float2half_rn(v[1]))) << 16);
  }
};

template <> struct Elem<__nv_bfloat16> {
  static constexpr int kPerWord = 2;
  __device__ __forceinline__ static float load(const __nv_bfloat16* p) { return __bfloat162float(__ldg(p)); }
  __device__ __forceinline__ static void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
  // bf16 is the top half of an fp32: widening is a shift, exact.
  __device__ __forceinline__ static float unpack(uint32_t w, int i) {
    return __uint_as_float(i ? (w & 0xffff0000u) : (w << 16));
  }
  __device__ __forceinline__ static uint32_t pack(const float* v) {
    return static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(v[0]))) |
           (static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(v[1]))) << 16);
  }
};

// VEC elements at p: one 16-byte access when VEC·sizeof(T) == 16 (p must be 16-byte aligned),
// a scalar access when VEC == 1. Loads take the read-only path (__ldg): x and the residual are
// never written by these kernels, and the compiler cannot prove that on its own.
template <typename T, int VEC>
__device__ __forceinline__ void load_vec(const T* p, float (&v)[VEC]) {
  if constexpr (VEC == 1) {
    v[0] = Elem<T>::load(p);
  } else {
    static_assert(VEC * sizeof(T) == 16, "vector accesses are 16 bytes");
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = Elem<T>::unpack(w[k / Elem<T>::kPerWord], k % Elem<T>::kPerWord);
  }
}

template <typename T, int VEC>
__device__ __forceinline__ void store_vec(T* p, const float (&v)[VEC]) {
  if constexpr (VEC == 1) {
    Elem<T>::store(p, v[0]);
  } else {
    static_assert(VEC * sizeof(T) == 16, "vector accesses are 16 bytes");
    constexpr int kPer = Elem<T>::kPerWord;
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = Elem<T>::pack(v + k * kPer);
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// Mean of kShiftSamples values spread over a plane of hw pixels, `stride` elements apart.
// Every block of a plane runs this same code on the same data, so all get the same float.
template <typename T>
__device__ float sample_shift(const T* plane, int64_t stride, int64_t hw) {
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kShiftSamples; ++j) {
    const int64_t i = ((2 * j + 1) * hw) / (2 * kShiftSamples);
    s += Elem<T>::load(plane + i * stride);
  }
  return s * (1.0f / kShiftSamples);
}

// Σ over the block of (a, b), in a fixed order; the result is valid in thread 0 only.
__device__ __forceinline__ float2 block_sum2(float a, float b) {
  __shared__ float2 warp_sums[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = make_float2(a, b);
  __syncthreads();
  float2 total = make_float2(0.f, 0.f);
  if (threadIdx.x == 0) {
    for (int w = 0; w < kThreads / 32; ++w) {
      total.x += warp_sums[w].x;
      total.y += warp_sums[w].y;
    }
  }
  return total;
}

// Output index o along a side of `len` (already upsampled) source pixels padded by `pad`
// → source index before the upsample. Needs pad < len, so one reflection suffices.
__device__ __forceinline__ int source_index(int o, int pad, int len, int up_shift) {
  int t = o - pad;
  t = t < 0 ? -t : t;
  t = t >= len ? 2 * (len - 1) - t : t;
  return t >> up_shift;
}

// ReLU that keeps NaN (as torch.relu does); fmaxf would turn NaN into 0.
__device__ __forceinline__ float relu_nan(float y) { return y < 0.f ? 0.f : y; }

// ---- pass 1: statistics ------------------------------------------------------------------

// grid.x = planes × chunks; block (plane, chunk) reduces elements [chunk·len, +len) of a plane.
template <typename T>
__global__ void __launch_bounds__(kThreads)
stats_nchw_kernel(const T* __restrict__ x, int64_t hw, int chunks, int64_t chunk_len,
                  float2* __restrict__ partials, float* __restrict__ shifts) {
  constexpr int VEC = 16 / sizeof(T);
  const int64_t plane = blockIdx.x / chunks;
  const int chunk = static_cast<int>(blockIdx.x % chunks);
  const T* base = x + plane * hw;

  __shared__ float s_shift;
  if (threadIdx.x == 0) {
    const float s = sample_shift(base, 1, hw);
    s_shift = s;
    if (chunk == 0) shifts[plane] = s;
  }
  __syncthreads();
  const float shift = s_shift;

  const int64_t begin = static_cast<int64_t>(chunk) * chunk_len;
  const int64_t count = min(chunk_len, hw - begin);
  const T* p = base + begin;
  // Elements before the first 16-byte boundary (planes of odd size start misaligned).
  const int misaligned = static_cast<int>((reinterpret_cast<uintptr_t>(p) & 15) / sizeof(T));
  const int64_t head = min(static_cast<int64_t>((VEC - misaligned) % VEC), count);
  const int64_t vectors = (count - head) / VEC;
  const int64_t tail = head + vectors * VEC;

  float sum = 0.f, sq = 0.f;
  if (threadIdx.x < head) {
    const float d = Elem<T>::load(p + threadIdx.x) - shift;
    sum += d;
    sq = fmaf(d, d, sq);
  }
  const T* body = p + head;
#pragma unroll 4
  for (int64_t i = threadIdx.x; i < vectors; i += kThreads) {
    float v[VEC];
    load_vec<T, VEC>(body + i * VEC, v);
    float s = 0.f, q = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float d = v[k] - shift;
      s += d;
      q = fmaf(d, d, q);
    }
    sum += s;
    sq += q;
  }
  if (tail + threadIdx.x < count) {
    const float d = Elem<T>::load(p + tail + threadIdx.x) - shift;
    sum += d;
    sq = fmaf(d, d, sq);
  }
  const float2 total = block_sum2(sum, sq);
  if (threadIdx.x == 0) partials[plane * chunks + chunk] = total;
}

// grid.x = N × tiles × chunks. Thread t handles channel group (tile·tile_groups + t % tile_groups)
// of pixels chunk_begin + t / tile_groups, + rows, ... (rows = kThreads / tile_groups).
template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads)
stats_nhwc_kernel(const T* __restrict__ x, int64_t hw, int C, int groups, int tile_groups, int tiles,
                  int chunks, int64_t chunk_len, float2* __restrict__ partials,
                  float* __restrict__ shifts) {
  const int chunk = static_cast<int>(blockIdx.x % chunks);
  const int64_t rest = blockIdx.x / chunks;
  const int tile = static_cast<int>(rest % tiles);
  const int64_t n = rest / tiles;
  const int rows = kThreads / tile_groups;
  const int g = threadIdx.x % tile_groups;
  const int r = threadIdx.x / tile_groups;
  const int tile_c0 = tile * tile_groups * VEC;
  const int width = min(tile_groups, groups - tile * tile_groups) * VEC;   // channels in this tile
  const bool active = r < rows && g * VEC < width;
  const T* xn = x + n * hw * C;

  __shared__ float s_shift[kMaxTileGroups * VEC];
  __shared__ float s_red[2][kThreads * VEC];
  for (int i = threadIdx.x; i < width; i += kThreads) {
    const float s = sample_shift(xn + tile_c0 + i, C, hw);
    s_shift[i] = s;
    if (chunk == 0) shifts[n * C + tile_c0 + i] = s;
  }
  __syncthreads();

  float shift[VEC], sum[VEC], sq[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    shift[k] = active ? s_shift[g * VEC + k] : 0.f;
    sum[k] = 0.f;
    sq[k] = 0.f;
  }
  if (active) {
    const int64_t p0 = static_cast<int64_t>(chunk) * chunk_len;
    const int64_t p1 = min(p0 + chunk_len, hw);
    const T* col = xn + tile_c0 + g * VEC;
#pragma unroll 4
    for (int64_t pix = p0 + r; pix < p1; pix += rows) {
      float v[VEC];
      load_vec<T, VEC>(col + pix * C, v);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float d = v[k] - shift[k];
        sum[k] += d;
        sq[k] = fmaf(d, d, sq[k]);
      }
    }
  }
  // Row r, column g·VEC + k of a [rows][tile_groups·VEC] table is entry t·VEC + k.
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    s_red[0][threadIdx.x * VEC + k] = sum[k];
    s_red[1][threadIdx.x * VEC + k] = sq[k];
  }
  __syncthreads();
  const int row_width = tile_groups * VEC;
  for (int i = threadIdx.x; i < width; i += kThreads) {
    float s = 0.f, q = 0.f;
    for (int rr = 0; rr < rows; ++rr) {
      s += s_red[0][rr * row_width + i];
      q += s_red[1][rr * row_width + i];
    }
    partials[(n * C + tile_c0 + i) * chunks + chunk] = make_float2(s, q);
  }
}

// ---- pass 2: per-plane coefficients --------------------------------------------------------

// One warp per plane: coef = (mean_hi, scale, offset, 0) with y = (x − mean_hi)·scale + offset.
__global__ void __launch_bounds__(kThreads)
finalize_kernel(const float2* __restrict__ partials, const float* __restrict__ shifts,
                const float* __restrict__ weight, const float* __restrict__ bias,
                float4* __restrict__ coef, int64_t planes, int64_t C, int chunks, double inv_count,
                double eps) {
  const int lane = threadIdx.x & 31;
  const int64_t plane = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
  if (plane >= planes) return;   // uniform per warp
  double s = 0.0, q = 0.0;
  for (int i = lane; i < chunks; i += 32) {
    const float2 p = partials[plane * chunks + i];
    s += p.x;
    q += p.y;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    q += __shfl_xor_sync(0xffffffffu, q, o);
  }
  if (lane == 0) {
    const double centred_mean = s * inv_count;   // mean of x − shift
    const double var = fmax(q * inv_count - centred_mean * centred_mean, 0.0);
    const double mean = static_cast<double>(shifts[plane]) + centred_mean;
    const int64_t c = plane % C;
    const double scale = (weight ? static_cast<double>(weight[c]) : 1.0) / sqrt(var + eps);
    const float mean_hi = static_cast<float>(mean);
    const double offset = (bias ? static_cast<double>(bias[c]) : 0.0) - (mean - mean_hi) * scale;
    coef[plane] = make_float4(mean_hi, static_cast<float>(scale), static_cast<float>(offset), 0.f);
  }
}

// ---- pass 3: apply and write the padded/upsampled output --------------------------------------

struct ApplyParams {
  const void* x;
  void* out;
  const void* res;
  int64_t rs_n, rs_c, rs_h, rs_w;
  const float4* coef;
  int64_t rows;          // output rows: N·C·Ho (NCHW) or N·Ho (channels_last)
  int C, H, W, Ho, Wo;
  int pad, up_shift;
  bool relu;
  int cols_per_tile;     // output columns per block
  int tiles, tile_groups, groups;   // channels_last channel tiling
};

// grid = (column tiles, min(rows, 65535)); a block walks rows with a grid stride. Each thread
// issues kUnroll loads before its first store, so enough bytes are in flight per SM.
template <typename T>
__global__ void __launch_bounds__(kThreads) apply_nchw_kernel(ApplyParams p) {
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  const T* res = static_cast<const T*>(p.res);
  const int hu = p.H << p.up_shift, wu = p.W << p.up_shift;
  const int col0 = blockIdx.x * p.cols_per_tile;
  const int col1 = min(col0 + p.cols_per_tile, p.Wo);
  for (int64_t i = blockIdx.y; i < p.rows; i += gridDim.y) {
    const int64_t row = p.rows - 1 - i;   // last rows first: see "L2" at the top
    const int64_t plane = row / p.Ho;
    const int oh = static_cast<int>(row - plane * p.Ho);
    const int ih = source_index(oh, p.pad, hu, p.up_shift);
    const float4 k = p.coef[plane];
    const T* xrow = x + (plane * p.H + ih) * p.W;
    T* orow = out + (plane * p.Ho + oh) * p.Wo;
    const T* rrow = nullptr;
    if (res != nullptr) {
      const int64_t n = plane / p.C;
      rrow = res + n * p.rs_n + (plane - n * p.C) * p.rs_c + ih * p.rs_h;
    }
    for (int ow0 = col0 + threadIdx.x; ow0 < col1; ow0 += kUnroll * kThreads) {
      float v[kUnroll], r[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int ow = ow0 + u * kThreads;
        v[u] = r[u] = 0.f;
        if (ow < col1) {
          const int iw = source_index(ow, p.pad, wu, p.up_shift);
          v[u] = Elem<T>::load(xrow + iw);
          if (rrow != nullptr) r[u] = Elem<T>::load(rrow + iw * p.rs_w);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int ow = ow0 + u * kThreads;
        if (ow < col1) {
          float y = fmaf(v[u] - k.x, k.y, k.z) + r[u];
          if (p.relu) y = relu_nan(y);
          Elem<T>::store(orow + ow, y);
        }
      }
    }
  }
}

// grid = (column tiles × channel tiles, min(N·Ho, 65535)). Thread t owns channel group
// tile·tile_groups + t % tile_groups and output columns col0 + t / tile_groups + j·rows.
// VEC > 1 needs x, out and the residual 16-byte aligned with channel stride 1 (host checks).
// HAS_RES is a template constant so the common no-residual case keeps its registers for the
// kUnroll loads in flight.
template <typename T, int VEC, bool HAS_RES>
__global__ void __launch_bounds__(kThreads) apply_nhwc_kernel(ApplyParams p) {
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  const T* res = static_cast<const T*>(p.res);
  const int tile = blockIdx.x % p.tiles;
  const int col_tile = blockIdx.x / p.tiles;
  const int rows_per_sweep = kThreads / p.tile_groups;
  const int g = threadIdx.x % p.tile_groups;
  const int r = threadIdx.x / p.tile_groups;
  const int group = tile * p.tile_groups + g;
  if (r >= rows_per_sweep || group >= p.groups) return;   // no barriers below
  const int c0 = group * VEC;
  const int hu = p.H << p.up_shift, wu = p.W << p.up_shift;
  const int col_begin = col_tile * p.cols_per_tile;
  const int col1 = min(col_begin + p.cols_per_tile, p.Wo);

  int64_t current_n = -1;
  float mean[VEC], scale[VEC], offset[VEC];
  for (int64_t i = blockIdx.y; i < p.rows; i += gridDim.y) {
    const int64_t row = p.rows - 1 - i;   // last rows first: see "L2" at the top
    const int64_t n = row / p.Ho;
    const int oh = static_cast<int>(row - n * p.Ho);
    const int ih = source_index(oh, p.pad, hu, p.up_shift);
    if (n != current_n) {
      current_n = n;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float4 q = p.coef[n * p.C + c0 + k];
        mean[k] = q.x;
        scale[k] = q.y;
        offset[k] = q.z;
      }
    }
    const T* xrow = x + (n * p.H + ih) * p.W * p.C + c0;
    T* orow = out + (n * p.Ho + oh) * p.Wo * p.C + c0;
    const T* rrow = HAS_RES ? res + n * p.rs_n + ih * p.rs_h + c0 * p.rs_c : nullptr;
    for (int ow0 = col_begin + r; ow0 < col1; ow0 += kUnroll * rows_per_sweep) {
      float v[kUnroll][VEC];
      float rv[HAS_RES ? kUnroll : 1][VEC];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int ow = ow0 + u * rows_per_sweep;
        if (ow < col1) {
          const int iw = source_index(ow, p.pad, wu, p.up_shift);
          load_vec<T, VEC>(xrow + static_cast<int64_t>(iw) * p.C, v[u]);
          if constexpr (HAS_RES) load_vec<T, VEC>(rrow + iw * p.rs_w, rv[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int ow = ow0 + u * rows_per_sweep;
        if (ow < col1) {
#pragma unroll
          for (int k = 0; k < VEC; ++k) {
            float y = fmaf(v[u][k] - mean[k], scale[k], offset[k]);
            if constexpr (HAS_RES) y += rv[u][k];
            v[u][k] = p.relu ? relu_nan(y) : y;
          }
          store_vec<T, VEC>(orow + static_cast<int64_t>(ow) * p.C, v[u]);
        }
      }
    }
  }
}

// ---- host: planning and launch -------------------------------------------------------------

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

struct Plan {
  int64_t planes = 0;
  // statistics
  int stats_vec = 1;              // channels_last: elements per thread access (1 or 16 bytes)
  int stats_tile_groups = 1, stats_tiles = 1;
  int chunks = 1;
  int64_t chunk_len = 0;          // elements (NCHW) or pixels (channels_last)
  // apply
  int apply_vec = 1;
  int apply_tile_groups = 1, apply_tiles = 1;
  int cols_per_tile = 1, col_tiles = 1;
  int64_t rows = 0;
  // workspace byte offsets
  size_t coef_offset = 0, partials_offset = 0, shifts_offset = 0, bytes = 0;
};

// Blocks per streaming pass: with 2–4 resident blocks per SM, ~24–32 blocks per SM are 8+ waves,
// so the last, partly filled wave costs little (one block per row would leave 4.1 waves at
// 1080p: a fifth of the time spent on a tenth of the work).
constexpr int kStatsBlocksPerSm = 24;
constexpr int kApplyBlocksPerSm = 32;
int64_t target_blocks(const InstanceNormArgs& a, int per_sm) {
  return per_sm * static_cast<int64_t>(std::max(a.num_sms, 1));
}

Plan make_plan(const InstanceNormArgs& a, int elem_size) {
  Plan plan;
  const int vec = 16 / elem_size;
  const int64_t hw = a.H * a.W;
  const int64_t ho = a.H * a.upsample + 2 * a.pad, wo = a.W * a.upsample + 2 * a.pad;
  plan.planes = a.N * a.C;
  const int64_t stats_target = target_blocks(a, kStatsBlocksPerSm);
  const int64_t apply_target = target_blocks(a, kApplyBlocksPerSm);

  if (!a.channels_last) {
    // Chunks are multiples of 64 elements so they start 16-byte aligned whenever the plane does,
    // and hold ≥ 4 vectors per thread.
    const int64_t min_len = static_cast<int64_t>(kThreads) * vec * 4;
    const int64_t want = std::min<int64_t>(ceil_div(stats_target, plan.planes), kMaxChunks);
    const int64_t most = std::max<int64_t>(1, hw / min_len);
    const int64_t chunks = std::max<int64_t>(1, std::min(want, most));
    plan.chunk_len = ceil_div(ceil_div(hw, chunks), 64) * 64;
    plan.chunks = static_cast<int>(ceil_div(hw, plan.chunk_len));
    plan.rows = plan.planes * ho;
    plan.col_tiles = static_cast<int>(std::max<int64_t>(
        1, std::min(ceil_div(apply_target, plan.rows), wo / (kUnroll * kThreads))));
    plan.cols_per_tile = static_cast<int>(ceil_div(wo, plan.col_tiles));
  } else {
    const bool x_vec = a.C % vec == 0 && aligned16(a.x);
    plan.stats_vec = x_vec ? vec : 1;
    const int64_t stats_groups = a.C / plan.stats_vec;
    plan.stats_tile_groups = static_cast<int>(std::min<int64_t>(stats_groups, kMaxTileGroups));
    plan.stats_tiles = static_cast<int>(ceil_div(stats_groups, plan.stats_tile_groups));
    const int64_t rows_per_sweep = kThreads / plan.stats_tile_groups;
    const int64_t want = std::min<int64_t>(ceil_div(stats_target, a.N * plan.stats_tiles), kMaxChunks);
    const int64_t most = std::max<int64_t>(1, hw / (rows_per_sweep * 4));
    const int64_t chunks = std::max<int64_t>(1, std::min(want, most));
    plan.chunk_len = ceil_div(hw, chunks);
    plan.chunks = static_cast<int>(ceil_div(hw, plan.chunk_len));

    bool res_vec = true;
    if (a.residual != nullptr) {
      res_vec = a.res_stride[1] == 1 && aligned16(a.residual) && a.res_stride[0] % vec == 0 &&
                a.res_stride[2] % vec == 0 && a.res_stride[3] % vec == 0;
    }
    plan.apply_vec = x_vec && aligned16(a.out) && res_vec ? vec : 1;
    const int64_t apply_groups = a.C / plan.apply_vec;
    plan.apply_tile_groups = static_cast<int>(std::min<int64_t>(apply_groups, kMaxTileGroups));
    plan.apply_tiles = static_cast<int>(ceil_div(apply_groups, plan.apply_tile_groups));
    plan.rows = a.N * ho;
    const int64_t sweep = kThreads / plan.apply_tile_groups;
    // Each thread keeps ≥ kUnroll columns per tile (one full unrolled iteration).
    plan.col_tiles = static_cast<int>(std::max<int64_t>(
        1, std::min(ceil_div(apply_target, plan.rows * plan.apply_tiles), wo / (kUnroll * sweep))));
    plan.cols_per_tile = static_cast<int>(ceil_div(wo, plan.col_tiles));
  }
  plan.coef_offset = 0;
  plan.partials_offset = static_cast<size_t>(plan.planes) * sizeof(float4);
  plan.shifts_offset = plan.partials_offset + static_cast<size_t>(plan.planes) * plan.chunks * sizeof(float2);
  plan.bytes = plan.shifts_offset + static_cast<size_t>(plan.planes) * sizeof(float);
  return plan;
}

int elem_size(ScalarKind kind) { return kind == ScalarKind::kFloat32 ? 4 : 2; }

// Strides of size-1 dimensions are never used; zero them so they cannot defeat vectorisation.
InstanceNormArgs normalised(const InstanceNormArgs& in) {
  InstanceNormArgs a = in;
  const int64_t sizes[4] = {a.N, a.C, a.H, a.W};
  for (int d = 0; d < 4; ++d) {
    if (sizes[d] == 1) a.res_stride[d] = 0;
  }
  if (a.C == 1) a.res_stride[1] = 1;
  return a;
}

template <typename T>
cudaError_t launch_typed(const InstanceNormArgs& a, const Plan& plan, char* ws, cudaStream_t stream) {
  float4* coef = reinterpret_cast<float4*>(ws + plan.coef_offset);
  float2* partials = reinterpret_cast<float2*>(ws + plan.partials_offset);
  float* shifts = reinterpret_cast<float*>(ws + plan.shifts_offset);
  const T* x = static_cast<const T*>(a.x);
  const int64_t hw = a.H * a.W;
  constexpr int kVec = 16 / sizeof(T);

  if (!a.channels_last) {
    const int64_t blocks = plan.planes * plan.chunks;
    if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
    stats_nchw_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        x, hw, plan.chunks, plan.chunk_len, partials, shifts);
  } else {
    const int64_t blocks = a.N * plan.stats_tiles * plan.chunks;
    if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
    const int groups = static_cast<int>(a.C / plan.stats_vec);
    if (plan.stats_vec == kVec) {
      stats_nhwc_kernel<T, kVec><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          x, hw, static_cast<int>(a.C), groups, plan.stats_tile_groups, plan.stats_tiles, plan.chunks,
          plan.chunk_len, partials, shifts);
    } else {
      stats_nhwc_kernel<T, 1><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          x, hw, static_cast<int>(a.C), groups, plan.stats_tile_groups, plan.stats_tiles, plan.chunks,
          plan.chunk_len, partials, shifts);
    }
  }
  cudaError_t err = cudaPeekAtLastError();
  if (err != cudaSuccess) return err;

  const int64_t finalize_blocks = ceil_div(plan.planes, kThreads / 32);
  if (finalize_blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  finalize_kernel<<<static_cast<unsigned>(finalize_blocks), kThreads, 0, stream>>>(
      partials, shifts, a.weight, a.bias, coef, plan.planes, a.C, plan.chunks,
      1.0 / static_cast<double>(hw), a.eps);
  err = cudaPeekAtLastError();
  if (err != cudaSuccess) return err;

  ApplyParams p{};
  p.x = a.x;
  p.out = a.out;
  p.res = a.residual;
  p.rs_n = a.res_stride[0];
  p.rs_c = a.res_stride[1];
  p.rs_h = a.res_stride[2];
  p.rs_w = a.res_stride[3];
  p.coef = coef;
  p.rows = plan.rows;
  p.C = static_cast<int>(a.C);
  p.H = static_cast<int>(a.H);
  p.W = static_cast<int>(a.W);
  p.Ho = static_cast<int>(a.H * a.upsample + 2 * a.pad);
  p.Wo = static_cast<int>(a.W * a.upsample + 2 * a.pad);
  p.pad = a.pad;
  p.up_shift = a.upsample == 2 ? 1 : 0;
  p.relu = a.relu;
  p.cols_per_tile = plan.cols_per_tile;
  p.tiles = plan.apply_tiles;
  p.tile_groups = plan.apply_tile_groups;
  p.groups = static_cast<int>(a.C / plan.apply_vec);
  const dim3 grid(static_cast<unsigned>(plan.col_tiles * (a.channels_last ? plan.apply_tiles : 1)),
                  static_cast<unsigned>(std::min<int64_t>(plan.rows, kMaxGridY)));
  const bool has_res = a.residual != nullptr;
  if (!a.channels_last) {
    apply_nchw_kernel<T><<<grid, kThreads, 0, stream>>>(p);
  } else if (plan.apply_vec == kVec && has_res) {
    apply_nhwc_kernel<T, kVec, true><<<grid, kThreads, 0, stream>>>(p);
  } else if (plan.apply_vec == kVec) {
    apply_nhwc_kernel<T, kVec, false><<<grid, kThreads, 0, stream>>>(p);
  } else if (has_res) {
    apply_nhwc_kernel<T, 1, true><<<grid, kThreads, 0, stream>>>(p);
  } else {
    apply_nhwc_kernel<T, 1, false><<<grid, kThreads, 0, stream>>>(p);
  }
  return cudaPeekAtLastError();
}

bool args_valid(const InstanceNormArgs& a) {
  const int64_t ho = a.H * a.upsample + 2 * a.pad, wo = a.W * a.upsample + 2 * a.pad;
  return a.x != nullptr && a.out != nullptr && a.N >= 0 && a.C >= 0 && a.H >= 1 && a.W >= 1 &&
         (a.upsample == 1 || a.upsample == 2) && a.pad >= 0 && a.pad < a.H * a.upsample &&
         a.pad < a.W * a.upsample && a.C <= INT_MAX && ho <= INT_MAX && wo <= INT_MAX;
}

}  // namespace

size_t instance_norm_workspace_bytes(const InstanceNormArgs& args) {
  const InstanceNormArgs a = normalised(args);
  if (!args_valid(a) || a.N * a.C == 0) return 0;
  return make_plan(a, elem_size(a.dtype)).bytes;
}

cudaError_t instance_norm_launch(const InstanceNormArgs& args, void* workspace, cudaStream_t stream) {
  const InstanceNormArgs a = normalised(args);
  if (!args_valid(a)) return cudaErrorInvalidValue;
  if (a.N * a.C == 0) return cudaSuccess;
  if (workspace == nullptr || !aligned16(workspace)) return cudaErrorInvalidValue;
  const Plan plan = make_plan(a, elem_size(a.dtype));
  char* ws = static_cast<char*>(workspace);
  switch (a.dtype) {   // the one dtype switch: ScalarKind → element type
    case ScalarKind::kFloat32: return launch_typed<float>(a, plan, ws, stream);
    case ScalarKind::kFloat16: return launch_typed<__half>(a, plan, ws, stream);
    case ScalarKind::kBFloat16: return launch_typed<__nv_bfloat16>(a, plan, ws, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace styleforge
