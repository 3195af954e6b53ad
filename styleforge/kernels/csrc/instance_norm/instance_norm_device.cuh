// Device code shared by the two InstanceNorm paths (instance_norm.cu: statistics, finalize and
// apply as three launches; instance_norm_single.cu: the same steps in one cooperative launch):
// fp32 math on fp32/fp16/bf16 storage, 16-byte vector access, the moments and their merges, the
// reflection/upsample index map, and the per-block statistics and per-plane finalize bodies.
// Pure CUDA (runtime, fp16 and bf16 headers only, no torch). Everything is in an anonymous
// namespace: each .cu gets its own copy, so nothing here is an exported symbol.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

namespace styleforge {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxTileGroups = 32;   // channel groups per channels_last block (a power of two)
constexpr int kMaxVec = 8;          // elements per 16-byte access (half/bf16)
constexpr int kStatsLoads = 4;      // 16-byte loads in flight per thread in the statistics kernels
constexpr int kStatsResident = 4;   // statistics blocks per SM that the planner sizes the grid for
// What __launch_bounds__ asks for: sm_80's code generation for the bf16 kernel spills at 64
// registers, so there it asks for 3 blocks (80 registers); the target GPUs are sm_90.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define STYLEFORGE_STATS_MIN_BLOCKS 3
#else
#define STYLEFORGE_STATS_MIN_BLOCKS 4
#endif
constexpr int kMaxChunks = 4096;     // blocks per plane in the statistics pass
constexpr int kMaxGridY = 65535;
constexpr int kUnroll = 4;           // loads in flight per thread in the apply kernels (×2 without residual)

// ---- element access: fp32 math on fp32/fp16/bf16 storage ------------------------------------

template <typename T> struct Elem;

template <> struct Elem<float> {
  static constexpr int kPerWord = 1;
  __device__ __forceinline__ static float load(const float* p) { return __ldg(p); }
  __device__ __forceinline__ static float unpack_one(float v) { return v; }
  __device__ __forceinline__ static void store(float* p, float v) { *p = v; }
  __device__ __forceinline__ static float unpack(uint32_t w, int) { return __uint_as_float(w); }
  __device__ __forceinline__ static uint32_t pack(const float* v) { return __float_as_uint(v[0]); }
};

template <> struct Elem<__half> {
  static constexpr int kPerWord = 2;
  __device__ __forceinline__ static float load(const __half* p) { return __half2float(__ldg(p)); }
  __device__ __forceinline__ static float unpack_one(__half v) { return __half2float(v); }
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
  __device__ __forceinline__ static float unpack_one(__nv_bfloat16 v) { return __bfloat162float(v); }
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

// VEC elements at p as loaded: one 16-byte word when VEC·sizeof(T) == 16 (p must be 16-byte
// aligned), one element when VEC == 1. Loads take the read-only path (__ldg): x and the residual
// are never written by these kernels, and the compiler cannot prove that on its own. Kernels that
// keep several loads in flight hold them packed (4 registers per 16 bytes, not 8 floats) and
// widen each just before use.
template <typename T, int VEC> struct Packed { uint4 w; };
template <typename T> struct Packed<T, 1> { T w; };

template <typename T, int VEC>
__device__ __forceinline__ Packed<T, VEC> load_packed(const T* p) {
  if constexpr (VEC == 1) {
    return Packed<T, 1>{__ldg(p)};
  } else {
    static_assert(VEC * sizeof(T) == 16, "vector accesses are 16 bytes");
    return Packed<T, VEC>{__ldg(reinterpret_cast<const uint4*>(p))};
  }
}

template <typename T, int VEC>
__device__ __forceinline__ void unpack(const Packed<T, VEC>& raw, float (&v)[VEC]) {
  if constexpr (VEC == 1) {
    v[0] = Elem<T>::unpack_one(raw.w);
  } else {
    const uint32_t w[4] = {raw.w.x, raw.w.y, raw.w.z, raw.w.w};
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = Elem<T>::unpack(w[k / Elem<T>::kPerWord], k % Elem<T>::kPerWord);
  }
}

template <typename T, int VEC>
__device__ __forceinline__ void load_vec(const T* p, float (&v)[VEC]) {
  unpack<T, VEC>(load_packed<T, VEC>(p), v);
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

// Moments of a set of values: n of them, mean shift + mean, Σ(x − mean)² = m2. Each thread
// takes its own first value as the shift (no shared sampling phase, no barrier) and sums
// d = x − shift and d² in fp32: d is of the order of σ, so q − s·s/n does not cancel even when
// |mean|/σ is 1000. Two sets merge by Chan et al.'s pairwise update with the difference of the
// means formed as (shift_b − shift_a) + (mean_b − mean_a): the shifts are data values of one
// plane, so their difference is exact or nearly, and the mean never rounds at its magnitude.
struct Moments {
  float n, shift, mean, m2;
};

__device__ __forceinline__ Moments moments_of(int count, float shift, float s, float q) {
  Moments m{static_cast<float>(count), shift, 0.f, 0.f};
  if (count > 0) {
    m.mean = s / static_cast<float>(count);
    m.m2 = fmaxf(fmaf(-s, m.mean, q), 0.f);
  }
  return m;
}

// a then b; keeps a's shift. Empty sets (n = 0) are the identity on either side.
__device__ __forceinline__ Moments merge(Moments a, const Moments& b) {
  if (b.n == 0.f) return a;
  if (a.n == 0.f) return b;
  const float n = a.n + b.n;
  const float delta = (b.shift - a.shift) + (b.mean - a.mean);
  const float fb = b.n / n;
  a.mean = fmaf(delta, fb, a.mean);
  a.m2 = a.m2 + b.m2 + delta * delta * a.n * fb;
  a.n = n;
  return a;
}

// Merge with the lane `o` away, lower lane first, so both lanes of a pair hold the same bits.
__device__ __forceinline__ Moments merge_lane(const Moments& m, int o) {
  Moments other;
  other.n = __shfl_xor_sync(0xffffffffu, m.n, o);
  other.shift = __shfl_xor_sync(0xffffffffu, m.shift, o);
  other.mean = __shfl_xor_sync(0xffffffffu, m.mean, o);
  other.m2 = __shfl_xor_sync(0xffffffffu, m.m2, o);
  return (threadIdx.x & o) ? merge(other, m) : merge(m, other);
}

__device__ __forceinline__ float4 as_float4(const Moments& m) { return make_float4(m.n, m.shift, m.mean, m.m2); }
__device__ __forceinline__ Moments as_moments(const float4& v) { return Moments{v.x, v.y, v.z, v.w}; }

// Per-thread running sums against the thread's first value (see Moments).
struct Accum {
  float shift = 0.f, s = 0.f, q = 0.f;
  int count = 0;
  __device__ __forceinline__ void add(float x) {
    if (count == 0) shift = x;
    const float d = x - shift;
    s += d;
    q = fmaf(d, d, q);
    ++count;
  }
  __device__ __forceinline__ Moments moments() const { return moments_of(count, shift, s, q); }
};

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

// ---- statistics of one block's share of a channels_last tensor -----------------------------------

// grid.x = N × tiles × chunks. Thread t handles channel group (tile·tile_groups + t % tile_groups)
// of pixels chunk_begin + t / tile_groups, + rows, ... (rows = kThreads / tile_groups).
// tile_groups is a power of two ≤ 32, so the lanes of a warp that share a channel group are
// g, g + tile_groups, ...: they merge by shuffles, then the 8 warps through shared memory.
// The body is a device function so the single-launch kernel (instance_norm_single.cu) runs the same
// reduction per work item; it writes s_red and reads it back after a barrier, so a caller that
// runs it twice in one block puts a __syncthreads() between the calls.
template <typename T, int VEC>
__device__ __forceinline__ void stats_nhwc_block(const T* __restrict__ x, int64_t hw, int C, int groups,
                                                 int tile_groups, int tile, int64_t n, int chunk,
                                                 int chunks, int64_t chunk_len,
                                                 float4* __restrict__ partials) {
  constexpr int kLoads = VEC == 1 ? kStatsLoads / 2 : kStatsLoads;
  const int rows = kThreads / tile_groups;
  const int g = threadIdx.x % tile_groups;
  const int r = threadIdx.x / tile_groups;
  const int tile_c0 = tile * tile_groups * VEC;
  const int width = min(tile_groups, groups - tile * tile_groups) * VEC;   // channels in this tile
  const bool active = g * VEC < width;

  // The shifts stay packed as loaded (4 registers for 8 half/bf16 channels, not 8) and are widened
  // where used: that keeps the kernel within 64 registers, i.e. kStatsResident blocks per SM.
  Packed<T, VEC> shift_raw{};
  float sum[VEC], sq[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) sum[k] = sq[k] = 0.f;
  int count = 0;
  if (active) {
    const int64_t p0 = static_cast<int64_t>(chunk) * chunk_len;
    const int64_t p1 = min(p0 + chunk_len, hw);
    const T* col = x + n * hw * C + tile_c0 + g * VEC;
    for (int64_t pix0 = p0 + r; pix0 < p1; pix0 += static_cast<int64_t>(kLoads) * rows) {
      Packed<T, VEC> raw[kLoads];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        if (pix0 + u * rows < p1) raw[u] = load_packed<T, VEC>(col + (pix0 + u * rows) * C);
      }
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        if (pix0 + u * rows < p1) {
          if (count == 0) shift_raw = raw[u];
          float v[VEC], shift[VEC];
          unpack<T, VEC>(raw[u], v);
          unpack<T, VEC>(shift_raw, shift);
#pragma unroll
          for (int k = 0; k < VEC; ++k) {
            const float d = v[k] - shift[k];
            sum[k] += d;
            sq[k] = fmaf(d, d, sq[k]);
          }
          ++count;
        }
      }
    }
  }
  // [warp][channel in tile]; warp w's entry for group g comes from its lane g after the shuffles.
  __shared__ float4 s_red[kThreads / 32][kMaxTileGroups * kMaxVec];
  const int lane = threadIdx.x & 31;
  float shift[VEC];
  unpack<T, VEC>(shift_raw, shift);
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    Moments m = moments_of(count, shift[k], sum[k], sq[k]);
    for (int o = 16; o >= tile_groups; o >>= 1) m = merge_lane(m, o);   // uniform trip count
    if (lane < tile_groups && active) s_red[threadIdx.x >> 5][g * VEC + k] = as_float4(m);
  }
  __syncthreads();
  // A warp holds 32 / tile_groups rows, so with tile_groups = 32 ... 1 all 8 warps hold partials
  // of every channel of the tile.
  for (int i = threadIdx.x; i < width; i += kThreads) {
    Moments total = as_moments(s_red[0][i]);
    for (int w = 1; w < kThreads / 32; ++w) total = merge(total, as_moments(s_red[w][i]));
    partials[(n * C + tile_c0 + i) * chunks + chunk] = as_float4(total);
  }
}

// ---- per-plane coefficients ----------------------------------------------------------------------

// ---- pass 2: per-plane coefficients --------------------------------------------------------

// One block per plane: coef = (mean_hi, scale, offset, 0) with y = (x − mean_hi)·scale + offset.
// The partials are combined exactly as Chan's formula does for many sets at once, in fp64 and two
// sweeps: mean = Σ nᵢ·meanᵢ / n, then M2 = Σ M2ᵢ + nᵢ·(meanᵢ − mean)² (no per-merge division).
// Thread t takes partials t, t + block, ... and issues kLoads of them before adding the first, so a
// plane of ≤ block·kLoads partials costs one L2 round trip, its registers reused by the second
// sweep. The order is fixed: each thread adds its partials in index order, the lane sums are
// butterflies (their additions commute, so every lane holds the same bits) and the warp sums are
// added in warp order. The three-launch path runs it as finalize_kernel, 128 threads per plane.
constexpr int kFinalizeThreads = 128;
constexpr int kFinalizeLoads = 8;

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block, the same bits in every thread. `slots` holds one double per warp; the barrier
// at the end lets the caller reuse it.
template <int kBlock>
__device__ __forceinline__ double block_sum(double v, double* slots) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) slots[threadIdx.x >> 5] = v;
  __syncthreads();
  double total = slots[0];
#pragma unroll
  for (int w = 1; w < kBlock / 32; ++w) total += slots[w];
  __syncthreads();
  return total;
}

// shift + (mean − shift) of a partial in fp64: exact, no rounding at the mean's magnitude.
__device__ __forceinline__ double partial_mean(const float4& p) {
  return static_cast<double>(p.y) + static_cast<double>(p.z);
}

// Plane `plane`'s coefficients from its `chunks` partials, by a block of kBlock threads; every thread
// of the block must call it (two barriers inside, and one more at the end of each block_sum).
// COHERENT: the partials were written by other blocks of the same launch (the single-launch path),
// so they are loaded through L2 (ld.cg) rather than the read-only __ldg path, which is only coherent
// across kernel boundaries.
// kLoads partials per thread are loaded before the first is used (registers: 4 per load).
template <int kBlock, bool COHERENT, int kLoads = kFinalizeLoads>
__device__ __forceinline__ void finalize_plane(const float4* __restrict__ partials,
                                               const float* __restrict__ weight,
                                               const float* __restrict__ bias, float4* __restrict__ coef,
                                               int64_t C, int chunks, int64_t plane, double inv_count,
                                               double eps) {
  __shared__ double slots[kBlock / 32];
  const float4* mine = partials + plane * chunks;
  constexpr int kStride = kBlock * kLoads;
  // One sweep's partials, loaded kLoads at a time before the first is used. The first sweep
  // stays in registers for the M2 pass: a plane of ≤ kStride partials (all of the network's) is then
  // read once, one L2 round trip instead of two.
  const auto load = [&](int i0, float4 (&p)[kLoads]) {
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      if (i0 + u * kBlock < chunks) p[u] = COHERENT ? __ldcg(mine + i0 + u * kBlock) : __ldg(mine + i0 + u * kBlock);
    }
  };
  const auto add_weighted = [&](int i0, const float4 (&p)[kLoads], double& weighted) {
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      if (i0 + u * kBlock < chunks) weighted = fma(static_cast<double>(p[u].x), partial_mean(p[u]), weighted);
    }
  };
  const auto add_m2 = [&](int i0, const float4 (&p)[kLoads], double mean, double& m2) {
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      if (i0 + u * kBlock < chunks) {
        const double d = partial_mean(p[u]) - mean;
        m2 += fma(static_cast<double>(p[u].x) * d, d, static_cast<double>(p[u].w));
      }
    }
  };
  float4 first[kLoads];
  load(threadIdx.x, first);
  double weighted = 0.0;
  add_weighted(threadIdx.x, first, weighted);
  for (int i0 = threadIdx.x + kStride; i0 < chunks; i0 += kStride) {
    float4 p[kLoads];
    load(i0, p);
    add_weighted(i0, p, weighted);
  }
  const double mean = block_sum<kBlock>(weighted, slots) * inv_count;
  double m2 = 0.0;
  add_m2(threadIdx.x, first, mean, m2);
  for (int i0 = threadIdx.x + kStride; i0 < chunks; i0 += kStride) {
    float4 p[kLoads];
    load(i0, p);
    add_m2(i0, p, mean, m2);
  }
  m2 = block_sum<kBlock>(m2, slots);
  if (threadIdx.x == 0) {
    const double var = m2 * inv_count;
    const int64_t c = plane % C;
    const double scale = (weight ? static_cast<double>(weight[c]) : 1.0) / sqrt(var + eps);
    const float mean_hi = static_cast<float>(mean);
    const double offset = (bias ? static_cast<double>(bias[c]) : 0.0) - (mean - mean_hi) * scale;
    coef[plane] = make_float4(mean_hi, static_cast<float>(scale), static_cast<float>(offset), 0.f);
  }
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace
}  // namespace styleforge
