// InstanceNorm in ONE cooperative launch (channels_last, 16-byte vectors): the statistics, the
// per-plane finalize and the apply of instance_norm.cu's three launches, separated by grid-wide
// barriers instead of kernel boundaries.
//
// Why: at the network's 512² and smaller shapes (4–17 MB activations) the three-launch path costs
// several times what the bytes take; most of the rest is three kernel ramp-ups/drains and the
// finalize launch (docs/kernels/instance_norm.md). A grid barrier costs about a microsecond, and a
// cooperative launch records into a CUDA graph.
//
// Phases (every block runs all three; the grid is at most what is co-resident, so the barriers
// cannot deadlock: cudaLaunchCooperativeKernel refuses a larger grid):
//   1. statistics: work items (image, channel tile, pixel chunk) go round-robin over the blocks;
//      each runs stats_nhwc_block, the very reduction of the three-launch path, and writes one
//      partial per channel. grid.sync().
//   2. finalize: planes go round-robin over the blocks; finalize_plane (fp64 Chan, fixed order)
//      writes (mean_hi, scale, offset) per plane. The partials were written by other blocks of
//      this launch, so they are read through L2 (ld.cg), never the non-coherent __ldg path.
//      grid.sync().
//   3. apply: the coefficients (≤ kSingleMaxPlanes planes) are staged in shared memory; output
//      16-byte vectors are spread over all threads in a grid-stride loop (consecutive threads,
//      consecutive channel groups and then pixels: coalesced writes), each mapped to its source
//      pixel by reflection then ÷upsample, x re-read (from L2 for the tensors this path takes).
//      A thread keeps its channels' coefficients in registers while its (image, channel group)
//      stays the same, which it does for N = 1 when the grid stride is a multiple of the groups.
// Same formula as the three-launch path: y = (x − mean_hi)·scale + offset [+ residual] [ReLU];
// the statistics differ from it only through the chunking (the number of partials per plane).
// Pure CUDA (runtime + cooperative groups, no torch); instance_norm.cu decides when to use it.
#include <cooperative_groups.h>

#include "instance_norm.h"
#include "instance_norm_device.cuh"
#include "instance_norm_single.h"

namespace styleforge {
namespace {

namespace cg = cooperative_groups;

constexpr int kSingleBlocksPerSm = 2;   // (4 per SM: a slower grid barrier)
constexpr int kSingleUnroll = 4;        // output vectors in flight per thread in the apply phase
// Partials per thread per finalize sweep: the planner makes ≤ grid (≤ 2 per 256-thread block) per
// plane, so 2 cover a plane in one sweep without holding registers for 8.
constexpr int kSingleFinalizeLoads = 2;

// Dev instrumentation, off in the package: with STYLEFORGE_SINGLE_PHASE_TIMES defined (only
// dev/kernels/instance_norm/phase_times.py builds so), thread 0 of each of the first kPhaseBlocks
// blocks records %globaltimer and clock64 at every phase boundary.
#ifdef STYLEFORGE_SINGLE_PHASE_TIMES
constexpr int kPhaseBlocks = 1024, kPhaseMarks = 7;
__device__ unsigned long long g_phase_times[2][kPhaseBlocks][kPhaseMarks];
__device__ __forceinline__ void phase_mark(int i) {
  if (threadIdx.x == 0 && blockIdx.x < kPhaseBlocks) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    g_phase_times[0][blockIdx.x][i] = t;
    g_phase_times[1][blockIdx.x][i] = static_cast<unsigned long long>(clock64());
  }
}
#else
__device__ __forceinline__ void phase_mark(int) {}
#endif

struct SingleParams {
  const void* x;
  void* out;
  const void* res;
  int64_t rs_n, rs_h, rs_w;   // residual strides in elements (channel stride 1)
  const float* weight;
  const float* bias;
  float4* partials;           // [plane][chunk]
  float4* coef;               // [plane]
  int N, C, H, W, Ho, Wo, pad, up_shift;
  bool relu;
  int groups, tile_groups, tiles, chunks, items, vectors;
  int64_t chunk_len;
  double inv_count, eps;
};

// One grid-stride step of the apply phase: the kSingleUnroll output vectors base, base + stride, ...
// all loaded before the first is stored. (Issuing the first step's loads before the barriers, to hide
// them behind the finalize, was slower: docs/kernels/instance_norm.md.)
template <typename T, bool HAS_RES>
struct ApplyStep {
  static constexpr int VEC = 16 / sizeof(T);
  Packed<T, VEC> raw[kSingleUnroll];
  Packed<T, VEC> raw_res[HAS_RES ? kSingleUnroll : 1];
  int plane0[kSingleUnroll];   // n·C + first channel of the vector
  int pixel[kSingleUnroll];    // output pixel (n·Ho + oh)·Wo + ow

  __device__ __forceinline__ void load(const SingleParams& p, int base, int stride) {
    const T* x = static_cast<const T*>(p.x);
    const T* res = static_cast<const T*>(p.res);
    const int hu = p.H << p.up_shift, wu = p.W << p.up_shift;
#pragma unroll
    for (int u = 0; u < kSingleUnroll; ++u) {
      const int idx = base + u * stride;
      if (idx < p.vectors) {
        const int g = idx % p.groups;
        const int pix = idx / p.groups;
        const int ow = pix % p.Wo;
        const int rows = pix / p.Wo;
        const int oh = rows % p.Ho;
        const int n = rows / p.Ho;
        const int ih = source_index(oh, p.pad, hu, p.up_shift);
        const int iw = source_index(ow, p.pad, wu, p.up_shift);
        const int c0 = g * VEC;
        raw[u] = load_packed<T, VEC>(x + ((static_cast<int64_t>(n) * p.H + ih) * p.W + iw) * p.C + c0);
        if constexpr (HAS_RES) {
          raw_res[u] = load_packed<T, VEC>(res + n * p.rs_n + ih * p.rs_h + iw * p.rs_w + c0);
        }
        plane0[u] = n * p.C + c0;
        pixel[u] = pix;
      }
    }
  }

  // coef: the staged (mean_hi, scale, offset) per plane; the thread's current channels' values are
  // cached in mean/scale/offset under cached_plane0.
  __device__ __forceinline__ void store(const SingleParams& p, int base, int stride, const float4* coef,
                                        int& cached_plane0, float (&mean)[VEC], float (&scale)[VEC],
                                        float (&offset)[VEC]) const {
    T* out = static_cast<T*>(p.out);
#pragma unroll
    for (int u = 0; u < kSingleUnroll; ++u) {
      if (base + u * stride < p.vectors) {
        if (plane0[u] != cached_plane0) {
          cached_plane0 = plane0[u];
#pragma unroll
          for (int k = 0; k < VEC; ++k) {
            const float4 q = coef[cached_plane0 + k];
            mean[k] = q.x;
            scale[k] = q.y;
            offset[k] = q.z;
          }
        }
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
        store_vec<T, VEC>(out + static_cast<int64_t>(pixel[u]) * p.C + plane0[u] % p.C, v);
      }
    }
  }
};

template <typename T, bool HAS_RES>
__global__ void __launch_bounds__(kThreads, kSingleBlocksPerSm) single_nhwc_kernel(SingleParams p) {
  constexpr int VEC = 16 / sizeof(T);
  cg::grid_group grid = cg::this_grid();
  const T* x = static_cast<const T*>(p.x);
  const int64_t hw = static_cast<int64_t>(p.H) * p.W;
  phase_mark(0);

  // 1. statistics
  for (int item = blockIdx.x; item < p.items; item += gridDim.x) {
    const int rest = item / p.chunks;
    stats_nhwc_block<T, VEC>(x, hw, p.C, p.groups, p.tile_groups, rest % p.tiles, rest / p.tiles,
                             item % p.chunks, p.chunks, p.chunk_len, p.partials);
    __syncthreads();   // stats_nhwc_block's shared buffer is reused by the next item
  }
  phase_mark(1);
  grid.sync();
  phase_mark(2);

  // 2. finalize
  const int planes = p.N * p.C;
  for (int plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    finalize_plane<kThreads, true, kSingleFinalizeLoads>(p.partials, p.weight, p.bias, p.coef, p.C, p.chunks, plane,
                                   p.inv_count, p.eps);
  }
  phase_mark(3);
  grid.sync();
  phase_mark(4);

  // 3. apply
  __shared__ float4 s_coef[kSingleMaxPlanes];
  for (int i = threadIdx.x; i < planes; i += kThreads) s_coef[i] = __ldcg(p.coef + i);
  __syncthreads();
  phase_mark(5);
  const int stride = gridDim.x * kThreads;
  int cached_plane0 = -1;
  float mean[VEC], scale[VEC], offset[VEC];
  for (int base = blockIdx.x * kThreads + threadIdx.x; base < p.vectors; base += kSingleUnroll * stride) {
    ApplyStep<T, HAS_RES> step;
    step.load(p, base, stride);
    step.store(p, base, stride, s_coef, cached_plane0, mean, scale, offset);
  }
  phase_mark(6);
}

template <typename T, bool HAS_RES>
int blocks_per_sm_for() {
  // The kernel's resource use is fixed at build time, so one query per instantiation suffices.
  static const int blocks = [] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, single_nhwc_kernel<T, HAS_RES>, kThreads, 0) !=
        cudaSuccess) {
      (void)cudaGetLastError();   // leave no sticky error behind; the path is then not taken
      n = 0;
    }
    return n;
  }();
  return blocks;
}

int blocks_per_sm(ScalarKind dtype, bool has_res) {
  switch (dtype) {
    case ScalarKind::kFloat32: return has_res ? blocks_per_sm_for<float, true>() : blocks_per_sm_for<float, false>();
    case ScalarKind::kFloat16: return has_res ? blocks_per_sm_for<__half, true>() : blocks_per_sm_for<__half, false>();
    case ScalarKind::kBFloat16:
      return has_res ? blocks_per_sm_for<__nv_bfloat16, true>() : blocks_per_sm_for<__nv_bfloat16, false>();
  }
  return 0;
}

struct SinglePlan {
  bool ok = false;
  int grid = 0, groups = 0, tile_groups = 1, tiles = 1, chunks = 1, items = 0, vectors = 0;
  int64_t chunk_len = 0;
  size_t partials_offset = 0, bytes = 0;
};

SinglePlan plan_single(const InstanceNormArgs& a) {
  SinglePlan plan;
  const int elem = a.dtype == ScalarKind::kFloat32 ? 4 : 2;
  const int vec = 16 / elem;
  if (!a.channels_last || a.C % vec != 0 || !aligned16(a.x) || !aligned16(a.out)) return plan;
  if (a.residual != nullptr &&
      !(a.res_stride[1] == 1 && aligned16(a.residual) && a.res_stride[0] % vec == 0 &&
        a.res_stride[2] % vec == 0 && a.res_stride[3] % vec == 0)) {
    return plan;
  }
  const int64_t planes = a.N * a.C;
  if (planes > kSingleMaxPlanes) return plan;
  const int64_t hw = a.H * a.W;
  const int64_t ho = a.H * a.upsample + 2 * a.pad, wo = a.W * a.upsample + 2 * a.pad;
  const int64_t groups = a.C / vec;
  const int64_t vectors = a.N * ho * wo * groups;
  // int32 indexing in the apply phase, with room for base + kSingleUnroll · stride.
  if (vectors > INT_MAX / 2 || a.N * hw * a.C > INT_MAX / 2) return plan;
  const int per_sm = std::min(blocks_per_sm(a.dtype, a.residual != nullptr), kSingleBlocksPerSm);
  if (per_sm < 1) return plan;

  plan.grid = per_sm * std::max(a.num_sms, 1);
  plan.groups = static_cast<int>(groups);
  while (plan.tile_groups < std::min<int64_t>(groups, kMaxTileGroups)) plan.tile_groups *= 2;
  plan.tiles = static_cast<int>(ceil_div(groups, plan.tile_groups));
  plan.vectors = static_cast<int>(vectors);
  plan.partials_offset = static_cast<size_t>(planes) * sizeof(float4);

  // As the three-launch planner: about one item per block, each thread ≥ one full unrolled load.
  const int64_t rows_per_sweep = kThreads / plan.tile_groups;
  const int64_t want = std::min<int64_t>(ceil_div(plan.grid, a.N * plan.tiles), kMaxChunks);
  const int64_t most = std::max<int64_t>(1, hw / (rows_per_sweep * kStatsLoads));
  const int64_t chunks = std::max<int64_t>(1, std::min(want, most));
  plan.chunk_len = ceil_div(hw, chunks);
  plan.chunks = static_cast<int>(ceil_div(hw, plan.chunk_len));
  const int64_t items = a.N * plan.tiles * plan.chunks;
  if (items > INT_MAX) return plan;
  plan.items = static_cast<int>(items);
  plan.bytes = plan.partials_offset + static_cast<size_t>(planes) * plan.chunks * sizeof(float4);
  plan.ok = true;
  return plan;
}

template <typename T, bool HAS_RES>
cudaError_t launch_single(const InstanceNormArgs& a, const SinglePlan& plan, char* ws, cudaStream_t stream) {
  SingleParams p{};
  p.x = a.x;
  p.out = a.out;
  p.res = a.residual;
  p.rs_n = a.res_stride[0];
  p.rs_h = a.res_stride[2];
  p.rs_w = a.res_stride[3];
  p.weight = a.weight;
  p.bias = a.bias;
  p.coef = reinterpret_cast<float4*>(ws);
  p.partials = reinterpret_cast<float4*>(ws + plan.partials_offset);
  p.N = static_cast<int>(a.N);
  p.C = static_cast<int>(a.C);
  p.H = static_cast<int>(a.H);
  p.W = static_cast<int>(a.W);
  p.Ho = static_cast<int>(a.H * a.upsample + 2 * a.pad);
  p.Wo = static_cast<int>(a.W * a.upsample + 2 * a.pad);
  p.pad = a.pad;
  p.up_shift = a.upsample == 2 ? 1 : 0;
  p.relu = a.relu;
  p.groups = plan.groups;
  p.tile_groups = plan.tile_groups;
  p.tiles = plan.tiles;
  p.chunks = plan.chunks;
  p.items = plan.items;
  p.vectors = plan.vectors;
  p.chunk_len = plan.chunk_len;
  p.inv_count = 1.0 / static_cast<double>(a.H * a.W);
  p.eps = a.eps;
  void* args[] = {&p};
  const void* kernel = reinterpret_cast<const void*>(single_nhwc_kernel<T, HAS_RES>);
  return cudaLaunchCooperativeKernel(kernel, dim3(plan.grid), dim3(kThreads), args, 0, stream);
}

template <typename T>
cudaError_t launch_single_typed(const InstanceNormArgs& a, const SinglePlan& plan, char* ws, cudaStream_t stream) {
  return a.residual != nullptr ? launch_single<T, true>(a, plan, ws, stream)
                               : launch_single<T, false>(a, plan, ws, stream);
}

}  // namespace

#ifdef STYLEFORGE_SINGLE_PHASE_TIMES
cudaError_t instance_norm_single_phase_times(unsigned long long* host) {
  return cudaMemcpyFromSymbol(host, g_phase_times, sizeof(g_phase_times));
}
#endif

size_t instance_norm_single_workspace_bytes(const InstanceNormArgs& a) {
  const SinglePlan plan = plan_single(a);
  return plan.ok ? plan.bytes : 0;
}

cudaError_t instance_norm_single_launch(const InstanceNormArgs& a, void* workspace, cudaStream_t stream) {
  const SinglePlan plan = plan_single(a);
  if (!plan.ok) return cudaErrorInvalidValue;
  char* ws = static_cast<char*>(workspace);
  switch (a.dtype) {
    case ScalarKind::kFloat32: return launch_single_typed<float>(a, plan, ws, stream);
    case ScalarKind::kFloat16: return launch_single_typed<__half>(a, plan, ws, stream);
    case ScalarKind::kBFloat16: return launch_single_typed<__nv_bfloat16>(a, plan, ws, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace styleforge
