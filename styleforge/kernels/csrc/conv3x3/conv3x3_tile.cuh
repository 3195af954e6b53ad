// One output tile of the fused 3×3 convolution with its InstanceNorms (conv3x3.cu) and of the
// residual chain's persistent kernel (conv3x3_chain.cu): conv_tile runs the tile's three phases in
// order on the 256 consumer threads. Its parts, each in its header:
//   conv3x3_tile_config.cuh    Cfg (the tile's compile-time traits: geometry, ring, shared-memory
//                              offsets, registers) and Params (a launch's buffers and sizes);
//   conv3x3_tile_smem.cuh      the halo's swizzle, the reflections, TileSmem (the shared-memory
//                              layout), the weight producer, the activations' loads and stores;
//   conv3x3_tile_prologue.cuh  the input norm's affine and the halo staged in shared memory;
//   conv3x3_tile_mainloop.cuh  the implicit GEMM on wgmma;
//   conv3x3_tile_epilogue.cuh  rounding, the tile's moments, the output's stores, the statistics.
// Pure CUDA, no torch; included by those two files only (anonymous namespace). The parts are
// inlined functions and functors over the caller's locals, so that the machine code is that of one
// function (dev/kernels/sass_diff.sh checks a change keeps it).
//
// Block: 288 threads = two consumer warpgroups + one producer warp (the chain: a producer
// warpgroup); the tile is 16 columns × 8·MB rows with MB m64 blocks per warpgroup (Cout 128 and
// stride 2: MB 1, 8 × 16; Cout 64 and 32: MB 2, 16 × 16), so MB·Cout/2 fp32 accumulators per thread:
// 64, or 32 at Cout 32 and in conv2, whose CTAs then fit two per SM (Cfg::kMaxRegs). In m64 block mb of
// warpgroup wg, warp w owns output row 4·(MB·wg + mb) + w: its 16 pixels are the m16 rows of the A
// fragment.
//  * A (activations) comes from registers: the prologue stores the (rows + 2) × 18-pixel halo tile
//    in shared memory, Cin·2 bytes per pixel with the 16-byte chunks XOR-swizzled by the pixel's
//    low 3 bits, so the ldmatrix.x4 of 16 consecutive pixels (one tap, 16 channels) is
//    conflict-free. A tap (ky, kx) is the same tile shifted: no im2col, each input pixel is loaded
//    from global memory once per tile, not nine times. The main loop runs in steps of 4 A fragments
//    (2–4 per tap); the fragments of step s + 1 are loaded while step s's wgmmas run (two buffers).
//  * B (weights) comes from shared memory: one tap (Cin·Cout·2 bytes) at a time, in a 4-stage
//    ring (all 9 taps when they are 4 KB) filled by the producer warp with bulk copies (full/empty
//    mbarriers). The packed weight is already the shared-memory image: per tap Cin/64 blocks of
//    [Cout rows][64 k] in 128-byte rows with the 128-byte swizzle, i.e. K-major B with descriptor
//    SBO = 1024 (8 rows), start + 32 bytes per k16 step.
//  * Statistics: from the rounded outputs (what the next layer reads), per tile the channel sum,
//    then the tile mean, then M2 = Σ(v − mean)²; the hand-off kernel merges tiles with Chan's
//    formula, so large means do not cancel the variance away (the chain adds them as fp64 sums).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../common/pdl.cuh"
#include "../common/smem_optin.cuh"
#include "conv3x3_tile_config.cuh"
#include "conv3x3_tile_smem.cuh"
#include "conv3x3_tile_prologue.cuh"
#include "conv3x3_tile_mainloop.cuh"
#include "conv3x3_tile_epilogue.cuh"

namespace styleforge {
namespace {

#if STYLEFORGE_SM90A
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
  constexpr int kMB = C::kMB, kStages = C::kStages, kTaps = C::kTaps;
  const uint32_t w_s = sm.w_s, halo_s = sm.halo_s, bar_full = sm.bar_full, bar_empty = sm.bar_empty;
  unsigned char* halo = sm.halo;
  float* red = sm.red;
  float* mean_s = sm.mean_s;
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
  // The chain's kept block input (Params::resident), past the layout and the link's Params.
  unsigned char* act_s = sm.end + kChainParamsBytes;
  const ActOffset<C> act_offset{};
  // ---- prologue: a = act(x·scale + shift + residual) on the reflected (upsampled) halo tile --------
  // (The caller has waited for the kernels before it: x, scale, shift and residual come from them.)
  // Sizes and the tile origin are read from p again after the main loop, not held across it: the
  // chain's p is in shared memory, and registers held through the main loop would spill.
  {
    const int y0 = (tile / p.tiles_x) * C::kTH, x0 = (tile % p.tiles_x) * kTW;
    const int H = p.H, W = p.W, Ho = p.Ho, Wo = p.Wo;
    constexpr int kChunks = C::kChunks;
    const int q = tid % kChunks;   // fixed per thread: its 8 channels' affine stays in registers
    float sc[8], sh[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sc[e] = p.scale ? p.scale[n * CIN_X + q * 8 + e] : 1.f;
      sh[e] = p.shift ? p.shift[n * CIN_X + q * 8 + e] : 0.f;
    }
    // The input norm's affine from the producer's sums (Params::in_sums): thread group sum_grp's kPer
    // copies of channel sum_c. The loads are issued here and used only after the first batch of halo
    // loads is issued (AffineFromSums), so the two round trips overlap.
    constexpr int kG = AffineFromSums<C, kChain>::kG, kPer = AffineFromSums<C, kChain>::kPer;
    static_assert(kG * CIN_X == kConsumers && kPer * kG == kNormSumCopies && kG <= 32, "sums layout");
    const bool from_sums = p.in_sums != nullptr;   // uniform
    bool pending = from_sums && refresh;
    double part[2 * kPer];
    float gm = 1.f, bt = 0.f;
    const int sum_c = tid / kG, sum_grp = tid % kG;
    if (pending) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const double* copy = p.in_sums + 2 * (sum_grp * kPer + k) * p.sums_stride + n * CIN_X + sum_c;
        part[2 * k] = __ldcg(copy);
        part[2 * k + 1] = __ldcg(copy + p.sums_stride);
      }
      if (sum_grp == 0) {
        if (p.gamma) gm = __ldg(p.gamma + sum_c);
        if (p.beta) bt = __ldg(p.beta + sum_c);
      }
    }
    const ReadAffine<C> read_affine{sc, sh, sm, q};
    if (from_sums && !refresh) read_affine();   // this sample's, formed on an earlier tile
    const AffineFromSums<C, kChain> affine_from_sums{p, sm, part, gm, bt, sum_c, sum_grp, tid, last_read, ticket, read_affine};
    const uint4* x4 = reinterpret_cast<const uint4*>(p.x);
    const uint4* r4 = reinterpret_cast<const uint4*>(p.residual);
    const Activate<T> activate{sc, sh, p};
    const StageHalo<T, C, kChain> stage{p, halo, x4, r4, tid, n, q, y0, x0, H, W, Ho, Wo, pending, affine_from_sums, activate};
    const StageResident<T, C, kChain> stage_resident{tid,     r4, n, H, y0, W, x0, q, x4, pending, affine_from_sums,
                                                     halo,    activate, p, act_s, act_offset};
    if (kChain && p.resident && y0 + C::kTH <= Ho && x0 + kTW <= Wo) {
      if constexpr (kChain) stage_resident();
    } else {
      const StageHaloBatched<T, C, kChain> stage_x{r4, stage};
      with_act_hint<kChain>(p.l2_evict_first, stage_x);
    }
  }
  consumers_sync();
  tile_mark(p, 1);
  if constexpr (kChain) keep_block_input<C>(p, halo, act_s, act_offset, tid);

  // Where a warp's fragments sit: warp w of warpgroup wg = warp / 4 owns, in m64 block mb, output
  // row row0 + 4·mb. Phase split: low-resolution rows lrow0 and lrow0 + 1, 8 pixels each (m16 rows
  // 0–7 and 8–15), of each of its warpgroup's phases: block mb is phase phase0 + mb.
  const int lane = tid & 31, warp = tid >> 5;
  const int row0 = (warp >> 2) * kMB * 4 + (warp & 3);
  const int lrow0 = (C::kWGSplit == 1 ? 8 * (warp >> 2) : 0) + 2 * (warp & 3);
  const int phase0 = C::kWGSplit == 1 ? 0 : kMB * (warp >> 2);
  // The accumulators and the main loop's two buffers of A fragments. (Declared here, in this order:
  // the order of these arrays decides ptxas's register assignment; see dev/kernels/sass_diff.sh.)
  float acc[kMB][COUT / 2];
  uint32_t a0[C::kStepK][C::kBlocksPerStep][4], a1[C::kStepK][C::kBlocksPerStep][4];
  tile_main_loop<T, C>(acc, a0, a1, w_s, halo_s, bar_full, bar_empty, u0, lane, row0, lrow0, phase0,
                       tid);
  tile_mark(p, 2);
  // The chain's producer refills the last entry's stage with the next convolution's taps.
  if (kChain && lane == 0) sm90::mbar_arrive(bar_empty + 8 * ((u0 + kTaps - 1) % kStages));

  tile_epilogue<T, C, kChain>(p, acc, halo, red, mean_s, n, tile, tid, lane, warp, row0, lrow0, phase0);
  tile_mark(p, 3);
  if constexpr (!kChain) tile_mark_global(p, kTileProfileGlobalEnd);
}
#endif  // STYLEFORGE_SM90A

}  // namespace
}  // namespace styleforge
