// One output tile of the fused 3×3 convolution with its InstanceNorms (conv3x3.cu) and of the
// residual chain's persistent kernel (conv3x3_chain.cu): conv_tile, the prologue, the wgmma main
// loop and the epilogue run in order by the 256 consumer threads. The parts, each in its header:
//   conv3x3_tile_config.cuh    Cfg (the tile's traits: geometry, ring, shared-memory offsets,
//                              registers) and Params;
//   conv3x3_tile_layout.cuh    the halo's swizzle, TileSmem, the weight producer, the barriers and
//                              the activations' hinted loads and stores;
//   conv3x3_tile_prologue.cuh  the previous norm's apply on the halo tile, into shared memory;
//   conv3x3_tile_mainloop.cuh  the implicit GEMM on wgmma;
//   conv3x3_tile_epilogue.cuh  rounding, the tile's moments, the output's stores, the statistics.
// Pure CUDA, no torch; included by those two files only (anonymous namespace).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "pdl.cuh"
#include "smem_optin.cuh"
#include "conv3x3_tile_config.cuh"
#include "conv3x3_tile_layout.cuh"
#include "conv3x3_tile_prologue.cuh"
#include "conv3x3_tile_mainloop.cuh"
#include "conv3x3_tile_epilogue.cuh"

namespace styleforge {
namespace {

#if SF_SM90A
// One output tile (sample n, tile `tile`) by the 256 consumer threads: prologue, implicit GEMM over
// the ring entries at positions u0 .., epilogue with the tile's statistics. With p.in_sums: refresh
// forms sample n's input affine from the sums into sm.aff (a CTA's first tile, or a new sample),
// else the tile reads it there; last_read: this CTA reads the sums no more, so (p.in_counter set)
// the CTA counts itself right after (conv3x3_kernel: *ticket, or its producer warp).
template <typename T, int CIN, int COUT, int UP, int STRIDE, int CIN_X, bool kChain>
__device__ __forceinline__ void conv_tile(const Params& p, const TileSmem<Cfg<CIN, COUT, UP, STRIDE, CIN_X>>& sm,
                                          int n, int tile, int u0, bool refresh = true, bool last_read = true,
                                          unsigned* ticket = nullptr) {
  using C = Cfg<CIN, COUT, UP, STRIDE, CIN_X>;
  // A persistent grid's loop over tiles (Cfg::kResidentWeights) reads threadIdx.x afresh per tile
  // (volatile): the compiler would otherwise hoist every thread-constant address out of the loop
  // and keep them all live through the main loop (at 128 registers: spills inside it). The chain's
  // loop over links has the registers to keep them.
  int tid = threadIdx.x;
  if constexpr (C::kResidentWeights) asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  if constexpr (!kChain) {   // (the chain marks its links' starts itself, and global times once: registers)
    tile_mark(p, 0);
    tile_mark_global(p, kTileProfileGlobalStart);
  }
  tile_prologue<T, C, kChain>(p, sm, n, tile, tid, refresh, last_read, ticket);

  const TileWarp<C> w(tid);
  float acc[C::kMB][COUT / 2];
  tile_mainloop<T, C, kChain>(sm, u0, w, acc);
  tile_mark(p, 2);
  // The chain's producer refills the last entry's stage with the next convolution's taps.
  if (kChain && w.lane == 0) sm90::mbar_arrive(sm.bar_empty + 8 * ((u0 + C::kTaps - 1) % C::kStages));

  tile_epilogue<T, C, kChain>(p, sm, n, tile, tid, w, acc);
  tile_mark(p, 3);
  if constexpr (!kChain) tile_mark_global(p, kTileProfileGlobalEnd);
}
#endif  // SF_SM90A

}  // namespace
}  // namespace styleforge
