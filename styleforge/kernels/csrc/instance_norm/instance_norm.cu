// Fused InstanceNorm family: statistics, affine, residual, ReLU, ×2 nearest upsample and
// reflection pad in two passes over x (statistics, then one write of the padded output).
//
// Pure CUDA (runtime, fp16 and bf16 headers only, no torch) so CI can compile-check it with
// nvcc on a machine without a GPU; instance_norm_binding.cpp turns tensors into InstanceNormArgs. The
// semantics are those of styleforge/kernels/reference/instance_norm.py.
//
// Design:
//   1. stats:    every (n, c) plane is split over several blocks, since N·C can be 32 on a
//                GPU of 132 SMs. Each thread sums x − shift and (x − shift)² in fp32 with its
//                own first value as the shift, turns them into moments (n, mean, M2), and the
//                moments are merged with Chan et al.'s pairwise formula: across lanes by
//                shuffles, across warps in shared memory. Each block writes one (n, shift,
//                mean − shift, M2) per channel to a partials array: no atomics, no memset, and
//                the result is bitwise deterministic. A large mean (the network works in 0–255)
//                costs no precision: see Moments.
//                NCHW: a block reduces a contiguous chunk of one plane with 16-byte loads
//                (scalar head/tail for misaligned starts). channels_last: a block takes a
//                range of pixels × a tile of up to 32 channel groups, one group of 16 bytes
//                (8 half/bf16 or 4 fp32 channels) per thread when C allows, else one channel.
//   2. finalize: one block per plane merges the partials (Chan, fp64), all loaded at once, and stores
//                (mean_hi, scale, offset) so that y = (x − mean_hi)·scale + offset, where
//                mean_hi is the mean rounded to fp32 and offset absorbs the rounding: x − mean_hi
//                is exact near the mean, so a large mean costs no precision.
//   3. apply:    iterates over OUTPUT pixels (coalesced writes); each output row/column maps
//                to its source by reflection then ÷upsample; the residual is read through
//                its own strides. channels_last writes 16 bytes per thread.
// L2: the statistics pass streams x from its start to its end, so when it finishes the L2
// cache holds the END of x; the apply pass therefore walks output rows from last to first and
// finds its first ~L2-size of input there instead of in DRAM. Tensors that fit in L2 are read
// from DRAM once; larger ones cost one read, one write and (size − L2) of re-read.
// Mid-sized channels_last tensors (6–24 MB) take the same three steps in ONE cooperative
// launch instead (instance_norm_single.cu): there, launches rather than bytes set the time. The
// device code both paths share is in instance_norm_device.cuh.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "instance_norm.h"
#include "instance_norm_device.cuh"
#ifndef STYLEFORGE_EMULATOR
#include "instance_norm_single.h"
#endif

namespace styleforge {
namespace {

// ---- pass 1: statistics ------------------------------------------------------------------

// grid.x = planes × chunks; block (plane, chunk) reduces elements [chunk·len, +len) of a plane.
// Each thread issues kStatsLoads 16-byte loads before it uses the first.
template <typename T>
__global__ void __launch_bounds__(kThreads, STYLEFORGE_STATS_MIN_BLOCKS)
stats_nchw_kernel(const T* __restrict__ x, int64_t hw, int chunks, int64_t chunk_len,
                  float4* __restrict__ partials) {
  constexpr int VEC = 16 / sizeof(T);
  const int64_t plane = blockIdx.x / chunks;
  const int chunk = static_cast<int>(blockIdx.x % chunks);
  const int64_t begin = static_cast<int64_t>(chunk) * chunk_len;
  const int64_t count = min(chunk_len, hw - begin);
  const T* p = x + plane * hw + begin;
  // Elements before the first 16-byte boundary (planes of odd size start misaligned).
  const int misaligned = static_cast<int>((reinterpret_cast<uintptr_t>(p) & 15) / sizeof(T));
  const int64_t head = min(static_cast<int64_t>((VEC - misaligned) % VEC), count);
  const int64_t vectors = (count - head) / VEC;
  const int64_t tail = head + vectors * VEC;

  Accum acc;
  if (threadIdx.x < head) acc.add(Elem<T>::load(p + threadIdx.x));
  const T* body = p + head;
  for (int64_t i0 = threadIdx.x; i0 < vectors; i0 += kStatsLoads * kThreads) {
    Packed<T, VEC> raw[kStatsLoads];
#pragma unroll
    for (int u = 0; u < kStatsLoads; ++u) {
      if (i0 + u * kThreads < vectors) raw[u] = load_packed<T, VEC>(body + (i0 + u * kThreads) * VEC);
    }
#pragma unroll
    for (int u = 0; u < kStatsLoads; ++u) {
      if (i0 + u * kThreads < vectors) {
        float v[VEC];
        unpack<T, VEC>(raw[u], v);
        if (acc.count == 0) acc.shift = v[0];
        float s = 0.f, q = 0.f;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const float d = v[k] - acc.shift;
          s += d;
          q = fmaf(d, d, q);
        }
        acc.s += s;
        acc.q += q;
        acc.count += VEC;
      }
    }
  }
  if (tail + threadIdx.x < count) acc.add(Elem<T>::load(p + tail + threadIdx.x));

  Moments m = acc.moments();
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = merge_lane(m, o);
  __shared__ float4 warp_m[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_m[threadIdx.x >> 5] = as_float4(m);
  __syncthreads();
  if (threadIdx.x == 0) {
    Moments total = as_moments(warp_m[0]);
    for (int w = 1; w < kThreads / 32; ++w) total = merge(total, as_moments(warp_m[w]));
    partials[plane * chunks + chunk] = as_float4(total);
  }
}

template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads, STYLEFORGE_STATS_MIN_BLOCKS)
stats_nhwc_kernel(const T* __restrict__ x, int64_t hw, int C, int groups, int tile_groups, int tiles,
                  int chunks, int64_t chunk_len, float4* __restrict__ partials) {
  const int chunk = static_cast<int>(blockIdx.x % chunks);
  const int64_t rest = blockIdx.x / chunks;
  stats_nhwc_block<T, VEC>(x, hw, C, groups, tile_groups, static_cast<int>(rest % tiles), rest / tiles,
                           chunk, chunks, chunk_len, partials);
}

// ---- pass 2: per-plane coefficients --------------------------------------------------------

// grid.x = planes (≤ INT_MAX, host checks).
__global__ void __launch_bounds__(kFinalizeThreads)
finalize_kernel(const float4* __restrict__ partials, const float* __restrict__ weight,
                const float* __restrict__ bias, float4* __restrict__ coef, int64_t C, int chunks,
                double inv_count, double eps) {
  finalize_plane<kFinalizeThreads, false>(partials, weight, bias, coef, C, chunks, blockIdx.x, inv_count, eps);
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
  constexpr int U = HAS_RES ? kUnroll : 2 * kUnroll;
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
    for (int ow0 = col_begin + r; ow0 < col1; ow0 += U * rows_per_sweep) {
      Packed<T, VEC> raw[U];
      Packed<T, VEC> raw_res[HAS_RES ? U : 1];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int ow = ow0 + u * rows_per_sweep;
        if (ow < col1) {
          const int iw = source_index(ow, p.pad, wu, p.up_shift);
          raw[u] = load_packed<T, VEC>(xrow + static_cast<int64_t>(iw) * p.C);
          if constexpr (HAS_RES) raw_res[u] = load_packed<T, VEC>(rrow + iw * p.rs_w);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int ow = ow0 + u * rows_per_sweep;
        if (ow < col1) {
          float v[VEC];
          unpack<T, VEC>(raw[u], v);
          float rv[VEC];
          if constexpr (HAS_RES) unpack<T, VEC>(raw_res[u], rv);
#pragma unroll
          for (int k = 0; k < VEC; ++k) {
            float y = fmaf(v[k] - mean[k], scale[k], offset[k]);
            if constexpr (HAS_RES) y += rv[k];
            v[k] = p.relu ? relu_nan(y) : y;
          }
          store_vec<T, VEC>(orow + static_cast<int64_t>(ow) * p.C, v);
        }
      }
    }
  }
}

// ---- host: planning and launch -------------------------------------------------------------


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
  size_t coef_offset = 0, partials_offset = 0, bytes = 0;
};

// Blocks per streaming pass. Statistics: kStatsResident blocks fit per SM (≤ 64 registers, 32 KB
// of shared memory each), so 4 per SM is one full wave of blocks that each stream ≥ kStatsLoads
// vectors per thread; a smaller tensor gets fewer, each with one full unrolled iteration, since
// splitting further would not put more bytes in flight. Apply has no per-block reduction and walks
// rows with a grid stride; 8 per SM keeps the tail wave short without tiny blocks.
constexpr int kStatsBlocksPerSm = kStatsResident;
constexpr int kApplyBlocksPerSm = 8;
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
    // and hold ≥ kStatsLoads vectors per thread.
    const int64_t min_len = static_cast<int64_t>(kThreads) * vec * kStatsLoads;
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
    // A power of two, for the shuffle reduction; lanes past the last group idle (C = 3, 33, ...).
    plan.stats_tile_groups = 1;
    while (plan.stats_tile_groups < std::min<int64_t>(stats_groups, kMaxTileGroups)) plan.stats_tile_groups *= 2;
    plan.stats_tiles = static_cast<int>(ceil_div(stats_groups, plan.stats_tile_groups));
    const int64_t rows_per_sweep = kThreads / plan.stats_tile_groups;
    const int64_t want = std::min<int64_t>(ceil_div(stats_target, a.N * plan.stats_tiles), kMaxChunks);
    const int64_t most = std::max<int64_t>(1, hw / (rows_per_sweep * kStatsLoads));
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
  plan.bytes = plan.partials_offset + static_cast<size_t>(plan.planes) * plan.chunks * sizeof(float4);
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
  float4* partials = reinterpret_cast<float4*>(ws + plan.partials_offset);
  const T* x = static_cast<const T*>(a.x);
  const int64_t hw = a.H * a.W;
  constexpr int kVec = 16 / sizeof(T);

  if (!a.channels_last) {
    const int64_t blocks = plan.planes * plan.chunks;
    if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
    stats_nchw_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        x, hw, plan.chunks, plan.chunk_len, partials);
  } else {
    const int64_t blocks = a.N * plan.stats_tiles * plan.chunks;
    if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
    const int groups = static_cast<int>(a.C / plan.stats_vec);
    if (plan.stats_vec == kVec) {
      stats_nhwc_kernel<T, kVec><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          x, hw, static_cast<int>(a.C), groups, plan.stats_tile_groups, plan.stats_tiles, plan.chunks,
          plan.chunk_len, partials);
    } else {
      stats_nhwc_kernel<T, 1><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          x, hw, static_cast<int>(a.C), groups, plan.stats_tile_groups, plan.stats_tiles, plan.chunks,
          plan.chunk_len, partials);
    }
  }
  cudaError_t err = cudaPeekAtLastError();
  if (err != cudaSuccess) return err;

  if (plan.planes > INT_MAX) return cudaErrorInvalidConfiguration;
  finalize_kernel<<<static_cast<unsigned>(plan.planes), kFinalizeThreads, 0, stream>>>(
      partials, a.weight, a.bias, coef, a.C, plan.chunks, 1.0 / static_cast<double>(hw), a.eps);
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

// The single cooperative launch (instance_norm_single.cu) where it is chosen: its workspace bytes,
// else 0 (three launches). kAuto takes it for x of kSingleAutoMinBytes to kSingleAutoMaxBytes, where
// it measured faster (docs/kernels/instance_norm.md); at 4.2 MB the two tie and the 256² frame was
// slower with it; above 24 MB the three launches keep more bytes in flight. The emulator runs
// blocks one after another, so it has no grid barrier and always takes the three launches.
constexpr int64_t kSingleAutoMinBytes = int64_t{6} << 20;
constexpr int64_t kSingleAutoMaxBytes = int64_t{24} << 20;

size_t single_launch_bytes(const InstanceNormArgs& a) {
#ifdef STYLEFORGE_EMULATOR
  (void)a;
  return 0;
#else
  if (a.path == InstanceNormArgs::Path::kSplit) return 0;
  const int64_t x_bytes = a.N * a.C * a.H * a.W * elem_size(a.dtype);
  if (a.path == InstanceNormArgs::Path::kAuto && (x_bytes < kSingleAutoMinBytes || x_bytes > kSingleAutoMaxBytes)) {
    return 0;
  }
  return instance_norm_single_workspace_bytes(a);
#endif
}

}  // namespace

size_t instance_norm_workspace_bytes(const InstanceNormArgs& args) {
  const InstanceNormArgs a = normalised(args);
  if (!args_valid(a) || a.N * a.C == 0) return 0;
  if (const size_t single = single_launch_bytes(a)) return single;
  return make_plan(a, elem_size(a.dtype)).bytes;
}

cudaError_t instance_norm_launch(const InstanceNormArgs& args, void* workspace, cudaStream_t stream) {
  const InstanceNormArgs a = normalised(args);
  if (!args_valid(a)) return cudaErrorInvalidValue;
  if (a.N * a.C == 0) return cudaSuccess;
  if (workspace == nullptr || !aligned16(workspace)) return cudaErrorInvalidValue;
#ifndef STYLEFORGE_EMULATOR
  if (single_launch_bytes(a) > 0) return instance_norm_single_launch(a, workspace, stream);
#endif
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
