// The fused 3×3 tile's main loop: the implicit GEMM of one tile on wgmma, A (the halo's
// activations) from registers loaded by ldmatrix, B (the weight's taps) from the shared-memory ring
// that the producer fills. Pure CUDA, no torch; part of conv3x3_tile.cuh, not included on its own.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "../common/sm90_ptx.cuh"
#include "conv3x3_tile_smem.cuh"

namespace styleforge {
namespace {

#if STYLEFORGE_SM90A
// The A fragments of one pipeline step (a[kStepK][kBlocksPerStep][4]: ldmatrix.x4 registers) from
// the halo: lanes 0–15 address pixels 0–15 at channels 0–7 of the k16 step (→ a0, a1), lanes 16–31
// the same pixels at channels 8–15 (→ a2, a3).
template <class C>
struct LoadA {
  static constexpr int kStepK = C::kStepK, kSPT = C::kStepsPerTap, kBPS = C::kBlocksPerStep;
  const int& phase0;
  const int& lrow0;
  const int& lrow;
  const int& row0;
  const uint32_t& halo_s;
  const int& lhalf;
  __device__ void operator()(uint32_t (&a)[kStepK][kBPS][4], int step) const {
    const int tap = step / kSPT;
#pragma unroll
    for (int mb = 0; mb < kBPS; ++mb) {
      int P;
      if constexpr (C::kPhase) {   // ring entry tap = 4·block + 2·dy + dx; phase = 2·a + b
        const int phase = phase0 + (tap >> 2), a = phase >> 1, b = phase & 1, dy = (tap >> 1) & 1, dx = tap & 1;
        P = (lrow0 + (lrow >> 3) + a + dy) * C::kHaloW + (lrow & 7) + b + dx;
      } else {
        const int ky = tap / 3, kx = tap - ky * 3;
        P = (C::kStride * (row0 + 4 * mb) + ky) * C::kHaloW + C::kStride * lrow + kx;
      }
#pragma unroll
      for (int kk = 0; kk < kStepK; ++kk) {
        const int chunk = 2 * ((step % kSPT) * kStepK + kk) + lhalf;
        sm90::ldmatrix_x4(a[kk][mb], halo_s + halo_offset<C::kChunks, C::kStride>(P, chunk));
      }
    }
  }
};

// kSteps = kTaps · kStepsPerTap steps, each kStepK k16 steps × kMB wgmma m64n{Cout}k16 per
// warpgroup into acc[kMB][Cout/2] (zeroed here), over the ring entries at positions u0 ..
// u0 + kTaps − 1. The fragments of step s + 1 are loaded while step s's wgmmas run (the two
// buffers a0, a1); a tap's stage is released to the producer once its last step's wgmmas are done.
template <typename T, class C>
__device__ __forceinline__ void tile_main_loop(float (&acc)[C::kMB][C::kCout / 2],
                                               uint32_t (&a0)[C::kStepK][C::kBlocksPerStep][4],
                                               uint32_t (&a1)[C::kStepK][C::kBlocksPerStep][4], uint32_t w_s, uint32_t halo_s,
                                               uint32_t bar_full, uint32_t bar_empty, int u0, int lane,
                                               int row0, int lrow0, int phase0, int tid) {
  using namespace sm90;
  constexpr int kMB = C::kMB, kStepK = C::kStepK, kSPT = C::kStepsPerTap, kStages = C::kStages;
  constexpr int kTaps = C::kTaps, kSteps = kTaps * kSPT, kBPS = C::kBlocksPerStep, COUT = C::kCout;
  const int lrow = lane & 15, lhalf = lane >> 4;
  const LoadA<C> load_a{phase0, lrow0, lrow, row0, halo_s, lhalf};
  constexpr bool kBF16 = std::is_same_v<T, __nv_bfloat16>;

#pragma unroll
  for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
    for (int i = 0; i < COUT / 2; ++i) acc[mb][i] = 0.f;
  reg_fence(acc);   // the zeros are written before the first wgmma, not between wgmmas
  load_a(a0, 0);
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int tap = s / kSPT, u = u0 + tap, st = u % kStages;   // u: the entry's ring position
    uint32_t(&a)[kStepK][kBPS][4] = (s & 1) ? a1 : a0;
    uint32_t(&next)[kStepK][kBPS][4] = (s & 1) ? a0 : a1;
    if (s % kSPT == 0) mbar_wait(bar_full + 8 * st, (u / kStages) & 1);
    wg_fence();
    // This warpgroup's tap of the ring entry (phase split with two per entry: warpgroup wg's). (The
    // warpgroup from tid, not from warp: the form the single function compiled to.)
    const uint32_t wb = w_s + st * C::kEntryBytes + (C::kWGSplit == 1 ? 0 : ((tid >> 5) >> 2) * C::kTapBytes);
#pragma unroll
    for (int kk = 0; kk < kStepK; ++kk) {
      const int ks = (s % kSPT) * kStepK + kk;
      const uint64_t desc = sw128_desc(wb + (ks >> 2) * C::kKbBytes + (ks & 3) * 32, 16, 1024);
      if constexpr (C::kPhase) {
        wgmma_rs<kBF16>(acc[tap >> 2], a[kk][0], desc);   // the entry's block (its phase)
      } else {
#pragma unroll
        for (int mb = 0; mb < kMB; ++mb) wgmma_rs<kBF16>(acc[mb], a[kk][mb], desc);
      }
    }
    wg_commit();
    if (s > 0) {
      wg_wait<1>();   // step s − 1 is done: its A registers (and, ending a tap, its B stage) are free
      reg_fence(next);
      if (s % kSPT == 0 && lane == 0) mbar_arrive(bar_empty + 8 * ((u - 1) % kStages));
    }
    if (s + 1 < kSteps) load_a(next, s + 1);
  }
  wg_wait<0>();
  reg_fence(acc);
  reg_fence((kSteps - 1) & 1 ? a1 : a0);
}
#endif  // STYLEFORGE_SM90A

}  // namespace
}  // namespace styleforge
