// The 3×3 tile's main loop: an implicit GEMM with M = the tile's output pixels, N = Cout, K = 9 taps
// × Cin (×2 upsample, phase split: 4 taps × Cin per output phase on the low-resolution input, see
// Cfg::kPhase), as kSteps steps of kStepK k16 steps × kMB wgmma m64n{Cout}k16 per warpgroup. A comes
// from registers (ldmatrix.x4 of the shifted halo tile, two buffers: step s + 1's fragments load
// while step s's wgmmas run), B from the weight ring in shared memory. Pure CUDA, no torch; part of
// conv3x3_tile.cuh.
#pragma once

#include <cstdint>
#include <type_traits>

#include "sm90_ptx.cuh"
#include "conv3x3_tile_layout.cuh"

namespace styleforge {
namespace {

#if SF_SM90A
// Warp (warp of the 8 consumer warps, lane) geometry shared by the main loop and the epilogue.
template <class C>
struct TileWarp {
  int lane, warp;
  int row0;     // output row of m64 block 0; block mb: + 4·mb
  // Phase split: warp (wg, w) holds low-resolution rows lrow0 and lrow0 + 1, 8 pixels each (m16 rows
  // 0–7 and 8–15), of each of its warpgroup's phases: block mb is phase phase0 + mb.
  int lrow0, phase0;
  __device__ __forceinline__ explicit TileWarp(int tid)
      : lane(tid & 31), warp(tid >> 5), row0((warp >> 2) * C::kMB * 4 + (warp & 3)),
        lrow0((C::kWGSplit == 1 ? 8 * (warp >> 2) : 0) + 2 * (warp & 3)),
        phase0(C::kWGSplit == 1 ? 0 : C::kMB * (warp >> 2)) {}
};

// acc[mb][·] of each of the warp's kMB m64 blocks = the tile's convolution over the ring entries at
// ring positions u0 .. u0 + kTaps − 1 (u: an entry's position; stage u % kStages, phase u / kStages).
template <typename T, class C, bool kChain>
__device__ __forceinline__ void tile_mainloop(const TileSmem<C>& sm, int u0, const TileWarp<C>& w,
                                              float (&acc)[C::kMB][C::kCout / 2]) {
  using namespace sm90;
  constexpr int kMB = C::kMB, kStepK = C::kStepK, kSPT = C::kStepsPerTap, kStages = C::kStages;
  constexpr int kTaps = C::kTaps, kSteps = kTaps * kSPT, kBPS = C::kBlocksPerStep;
  constexpr int STRIDE = C::kStride;
  const uint32_t w_s = sm.w_s, halo_s = sm.halo_s, bar_full = sm.bar_full, bar_empty = sm.bar_empty;
  const int lane = w.lane, warp = w.warp, row0 = w.row0, lrow0 = w.lrow0, phase0 = w.phase0;
  // ldmatrix.x4: lanes 0–15 address pixels 0–15 at channels 0–7 of the k16 step (→ a0, a1),
  // lanes 16–31 the same pixels at channels 8–15 (→ a2, a3).
  const int lrow = lane & 15, lhalf = lane >> 4;
  auto load_a = [&](uint32_t (&a)[kStepK][kBPS][4], int step) {
    const int tap = step / kSPT;
#pragma unroll
    for (int mb = 0; mb < kBPS; ++mb) {
      int P;
      if constexpr (C::kPhase) {   // ring entry tap = 4·block + 2·dy + dx; phase = 2·a + b
        const int phase = phase0 + (tap >> 2), a = phase >> 1, b = phase & 1, dy = (tap >> 1) & 1, dx = tap & 1;
        P = (lrow0 + (lrow >> 3) + a + dy) * C::kHaloW + (lrow & 7) + b + dx;
      } else {
        const int ky = tap / 3, kx = tap - ky * 3;
        P = (STRIDE * (row0 + 4 * mb) + ky) * C::kHaloW + STRIDE * lrow + kx;
      }
#pragma unroll
      for (int kk = 0; kk < kStepK; ++kk) {
        const int chunk = 2 * ((step % kSPT) * kStepK + kk) + lhalf;
        ldmatrix_x4(a[kk][mb], halo_s + halo_offset<C::kChunks, STRIDE>(P, chunk));
      }
    }
  };
  constexpr bool kBF16 = std::is_same_v<T, __nv_bfloat16>;

#pragma unroll
  for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
    for (int i = 0; i < C::kCout / 2; ++i) acc[mb][i] = 0.f;
  reg_fence(acc);   // the zeros are written before the first wgmma, not between wgmmas
  uint32_t a0[kStepK][kBPS][4], a1[kStepK][kBPS][4];
  load_a(a0, 0);
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int tap = s / kSPT, u = u0 + tap, st = u % kStages;   // u: the entry's ring position
    uint32_t(&a)[kStepK][kBPS][4] = (s & 1) ? a1 : a0;
    uint32_t(&next)[kStepK][kBPS][4] = (s & 1) ? a0 : a1;
    if (s % kSPT == 0) mbar_wait(bar_full + 8 * st, (u / kStages) & 1);
    wg_fence();
    // This warpgroup's tap of the ring entry (phase split with two per entry: warpgroup wg's).
    const uint32_t wb = w_s + st * C::kEntryBytes + (C::kWGSplit == 1 ? 0 : (warp >> 2) * C::kTapBytes);
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
#endif  // SF_SM90A

}  // namespace
}  // namespace styleforge
