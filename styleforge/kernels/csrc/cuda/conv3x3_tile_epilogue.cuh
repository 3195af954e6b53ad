// The 3×3 tile's epilogue: the accumulators rounded once to the stored pairs, the tile's per-channel
// moments (sum, then M2 = Σ(v − mean)² about the tile's mean) from exactly those rounded values
// (what the next layer reads), the output staged in the dead halo and stored with 16-byte stores,
// then the statistics: per-tile (sum, M2) partials for the hand-off kernel, which merges tiles with
// Chan's formula, or fp64 sums Σx, Σx² added to a norm state (the chain: to its link's sums). So
// large means do not cancel the variance away. Pure CUDA, no torch; part of conv3x3_tile.cuh.
#pragma once

#include <cstdint>

#include "norm_state.cuh"
#include "packed16.cuh"
#include "warp_sums.cuh"
#include "conv3x3_tile_layout.cuh"
#include "conv3x3_tile_mainloop.cuh"

namespace styleforge {
namespace {

#if SF_SM90A
template <typename T, class C, bool kChain>
struct TileEpilogue {
  static constexpr int kMB = C::kMB, COUT = C::kCout, STRIDE = C::kStride;
  // A whole tile divides by count = kTH·kTW, a power of two: as a product with its exact reciprocal
  // (the same bits), without the IEEE division's slow-path call (fp32 and fp64) in the epilogue's
  // critical path; tiles cut by the edge divide.
  static constexpr int kTilePixels = C::kTH * kTW;
  static_assert((kTilePixels & (kTilePixels - 1)) == 0, "a power of two");
  // The per-warp channel sums: v[2i + j] is channel 8i + 2t + j, summed over the lane's pixels, then
  // over g; lane (g, t) writes its V/8 of them (see sum_over_g).
  static constexpr int kV = 2 * C::kOutChunks;

  const Params& p;
  const TileSmem<C>& sm;
  const int n, tile, tid, lane, warp;
  const int y0, x0, Ho, Wo;
  // Lane (g, t) of block mb holds pixels g and g + 8 of output row y0 + row0 + 4·mb, channels
  // 8i + 2t, 8i + 2t + 1 in acc[mb][4i .. 4i + 3]. Phase split: block mb = phase (a, b) = phase0 + mb
  // holds tile pixels (2·lrow0 + a, 2g + b) and (2·lrow0 + 2 + a, 2g + b).
  const int g, t;
  int px0[kMB], px1[kMB];   // tile pixel (row · 16 + column) of m16 rows g and g + 8
  bool v0[kMB], v1[kMB];    // ... inside the image
  const float count;
  const bool whole;
  // The rounded stored pairs (pk[mb][2i]: pixel g, channels 8i + 2t, + 1; pk[mb][2i + 1]: pixel g + 8).
  uint32_t pk[kMB][COUT / 4];
  const bool stats;   // uniform: every consumer takes the same branch
  float tile_sum = 0.f;
  const int first;

  __device__ __forceinline__ TileEpilogue(const Params& p_, const TileSmem<C>& sm_, int n_, int tile_, int tid_,
                                          const TileWarp<C>& w)
      : p(p_), sm(sm_), n(n_), tile(tile_), tid(tid_), lane(w.lane), warp(w.warp),
        y0((tile_ / p_.tiles_x) * C::kTH), x0((tile_ % p_.tiles_x) * kTW), Ho(p_.Ho), Wo(p_.Wo),
        g(w.lane >> 2), t(w.lane & 3), count(static_cast<float>(min(C::kTH, Ho - y0) * min(kTW, Wo - x0))),
        whole(count == static_cast<float>(kTilePixels)),
        stats(kChain || p_.partials != nullptr || p_.norm_state != nullptr), first(halving_first<kV>(g)) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) {
      if constexpr (C::kPhase) {
        px0[mb] = (2 * w.lrow0 + ((w.phase0 + mb) >> 1)) * kTW + 2 * g + ((w.phase0 + mb) & 1);
        px1[mb] = px0[mb] + 2 * kTW;
      } else {
        px0[mb] = (w.row0 + 4 * mb) * kTW + g;
        px1[mb] = px0[mb] + 8;
      }
    }
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) {
      v0[mb] = y0 + px0[mb] / kTW < Ho && x0 + px0[mb] % kTW < Wo;
      v1[mb] = y0 + px1[mb] / kTW < Ho && x0 + px1[mb] % kTW < Wo;
    }
  }

  // Round once, to the stored pairs; the statistics see exactly those values.
  __device__ __forceinline__ void round(float (&acc)[kMB][COUT / 2]) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int j = 0; j < COUT / 4; ++j) {
        pk[mb][j] = pack2<T>(acc[mb][2 * j], acc[mb][2 * j + 1]);
        unpack2<T>(pk[mb][j], acc[mb][2 * j], acc[mb][2 * j + 1]);
      }
  }

  // The tile's channel sums, its mean (mean_s), then Σ(v − mean)² left per warp in red; without
  // statistics only the barrier past every warp's last ldmatrix, before the halo is overwritten.
  __device__ __forceinline__ void moments(const float (&acc)[kMB][COUT / 2]) {
    float* red = sm.red;
    float* mean_s = sm.mean_s;
    if (stats) {
      {
        float v[kV];
#pragma unroll
        for (int i = 0; i < C::kOutChunks; ++i) {
          float s0 = 0.f, s1 = 0.f;
#pragma unroll
          for (int mb = 0; mb < kMB; ++mb) {
            s0 += (v0[mb] ? acc[mb][4 * i] : 0.f) + (v1[mb] ? acc[mb][4 * i + 2] : 0.f);
            s1 += (v0[mb] ? acc[mb][4 * i + 1] : 0.f) + (v1[mb] ? acc[mb][4 * i + 3] : 0.f);
          }
          v[2 * i] = s0;
          v[2 * i + 1] = s1;
        }
        sum_over_g(v, lane);
#pragma unroll
        for (int k = 0; k < kV / 8; ++k) red[warp * COUT + 8 * ((first + k) >> 1) + 2 * t + ((first + k) & 1)] = v[k];
      }
      consumers_sync();
      tile_mark(p, 4);
      if (tid < COUT) {
#pragma unroll
        for (int w = 0; w < 8; ++w) tile_sum += red[w * COUT + tid];
        mean_s[tid] = whole ? tile_sum * (1.f / kTilePixels) : tile_sum / count;
      }
      consumers_sync();
      tile_mark(p, 5);
      {
        float v[kV];
#pragma unroll
        for (int i = 0; i < C::kOutChunks; ++i) {
          const float2 m = *reinterpret_cast<const float2*>(mean_s + 8 * i + 2 * t);
          float s0 = 0.f, s1 = 0.f;
#pragma unroll
          for (int mb = 0; mb < kMB; ++mb) {
            const float d0 = v0[mb] ? acc[mb][4 * i] - m.x : 0.f, d2 = v1[mb] ? acc[mb][4 * i + 2] - m.x : 0.f;
            const float d1 = v0[mb] ? acc[mb][4 * i + 1] - m.y : 0.f, d3 = v1[mb] ? acc[mb][4 * i + 3] - m.y : 0.f;
            s0 += d0 * d0 + d2 * d2;
            s1 += d1 * d1 + d3 * d3;
          }
          v[2 * i] = s0;
          v[2 * i + 1] = s1;
        }
        sum_over_g(v, lane);
#pragma unroll
        for (int k = 0; k < kV / 8; ++k) red[warp * COUT + 8 * ((first + k) >> 1) + 2 * t + ((first + k) & 1)] = v[k];
      }
    } else {
      consumers_sync();   // every warp is past its last ldmatrix before the halo is overwritten
    }
  }

  // Byte offset in the halo of chunk `chunk` of staged output pixel px: [pixel][Cout·2 B], chunks
  // placed by out_slot; the chain stages in the halo's interior instead (halo layout), where its
  // next link's prologue takes it (Params::resident).
  __device__ __forceinline__ int staged(int px, int chunk) const {
    if constexpr (kChain) {
      return halo_offset<C::kChunks, STRIDE>(own_halo_pixel<C>(px), chunk);
    } else {
      return px * C::kOutPixelBytes + (out_slot<C::kOutChunks>(chunk, px) << 4);
    }
  }

  // The halo is dead (every warp is past its last ldmatrix: moments' barrier): the output staged there.
  __device__ __forceinline__ void stage_output() {
    unsigned char* halo = sm.halo;
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
      for (int i = 0; i < C::kOutChunks; ++i) {
        *reinterpret_cast<uint32_t*>(halo + staged(px0[mb], i) + 4 * t) = pk[mb][2 * i];
        *reinterpret_cast<uint32_t*>(halo + staged(px1[mb], i) + 4 * t) = pk[mb][2 * i + 1];
      }
    }
  }

  // The staged tile to global memory. The chain stores only what other tiles read, except its last
  // output and on tiles cut by the edge. Thread tid stores chunk q of tile pixels px_first + j·kPxStep:
  // one column, every kRowStep-th row, so its conditions are per row and its address advances by
  // kRowStep image rows (formed per store with divisions and 64-bit products, one store took ~50
  // instructions).
  __device__ __forceinline__ void store_output() {
    const unsigned char* halo = sm.halo;
    uint4* out4 = reinterpret_cast<uint4*>(p.out);
    const bool store_every = !kChain || p.out_all || y0 + C::kTH > Ho || x0 + kTW > Wo;
    constexpr int kPxStep = kConsumers / C::kOutChunks, kRowStep = kPxStep / kTW;
    static_assert(kPxStep % kTW == 0, "a pass of the store loop is whole tile rows");
    const int q_out = static_cast<int>(static_cast<unsigned>(tid) % C::kOutChunks);
    const int px_first = static_cast<int>(static_cast<unsigned>(tid) / C::kOutChunks % kPxStep);   // (< kPxStep: tid < 256)
    const int col = px_first % kTW, row_first = px_first / kTW, x_out = x0 + col;
    const bool col_all = store_every || col == 0 || col == kTW - 1 || x_out == 1 || x_out == Wo - 2;
    auto store_out = [&](auto hint) {
      uint4* dst = out4 + ((static_cast<int64_t>(n) * Ho + y0 + row_first) * Wo + x_out) * C::kOutChunks + q_out;
#pragma unroll
      for (int j = 0; j < C::kTH * kTW * C::kOutChunks / kConsumers; ++j) {
        const int r = row_first + j * kRowStep, y = y0 + r;
        if (y < Ho && x_out < Wo && (col_all || chain_store_needed<C::kTH>(r, col, y, x_out, Ho, Wo))) {
          store_act<decltype(hint)::value>(dst, *reinterpret_cast<const uint4*>(halo + staged(px_first + j * kPxStep, q_out)));
        }
        dst += static_cast<int64_t>(kRowStep) * Wo * C::kOutChunks;
      }
    };
    with_act_hint<kChain>(p.l2_evict_first, store_out);
  }

  // The statistics after the output: the chain's atomic adds must not hold up the stores.
  __device__ __forceinline__ void store_statistics() {
    const float* red = sm.red;
    if (stats && tid < COUT) {
      float m2 = 0.f;
#pragma unroll
      for (int w = 0; w < 8; ++w) m2 += red[w * COUT + tid];
      // Σx and Σx² over the image, from the tile's (sum, M2): Σx² = M2 + sum²/count exactly, and in
      // fp64 Σx²/n − mean² keeps the precision that Chan's merge keeps in fp32 (norm_state_add's
      // form, with the whole tile's division as a product).
      const double sum = tile_sum;
      const double sum_sq = static_cast<double>(m2) + (whole ? sum * sum * (1.0 / kTilePixels) : sum * sum / count);
      if constexpr (kChain) {
        red_add_global(p.out_sums + n * COUT + tid, sum);
        red_add_global(p.out_sums + p.sums_stride + n * COUT + tid, sum_sq);
      } else if (p.norm_state != nullptr) {
        norm_state_add_sums(p.norm_state, p.N * COUT, n, COUT, tid, sum, sum_sq);
      } else {
        p.partials[(static_cast<int64_t>(n) * p.tiles + tile) * COUT + tid] = make_float2(tile_sum, m2);
      }
    }
  }
};

// The epilogue of tile `tile` of sample n from the main loop's accumulators.
template <typename T, class C, bool kChain>
__device__ __forceinline__ void tile_epilogue(const Params& p, const TileSmem<C>& sm, int n, int tile, int tid,
                                              const TileWarp<C>& w, float (&acc)[C::kMB][C::kCout / 2]) {
  TileEpilogue<T, C, kChain> epi(p, sm, n, tile, tid, w);
  epi.round(acc);
  epi.moments(acc);
  epi.stage_output();
  consumers_sync();
  tile_mark(p, 6);
  epi.store_output();
  epi.store_statistics();
}
#endif  // SF_SM90A

}  // namespace
}  // namespace styleforge
