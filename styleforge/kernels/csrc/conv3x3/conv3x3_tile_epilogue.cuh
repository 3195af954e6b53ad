// The fused 3×3 tile's epilogue: the accumulators rounded to the stored type, the tile's
// per-channel moments (sum, then M2 about the tile mean) from those rounded values, the output
// staged in shared memory and stored in 16-byte chunks, then the moments handed on (partials, a
// norm state's fp64 sums, or the chain's sums). Pure CUDA, no torch; part of conv3x3_tile.cuh, not
// included on its own.
#pragma once

#include <cstdint>

#include "../common/packed16.cuh"
#include "../common/warp_sums.cuh"
#include "../norm_sums/norm_sums.cuh"
#include "conv3x3_tile_prologue.cuh"

namespace styleforge {
namespace {

#if STYLEFORGE_SM90A
// Round once, to the stored pairs (pk[mb][2i]: pixel g, channels 8i + 2t, + 1; pk[mb][2i + 1]:
// pixel g + 8), and acc back from them: the statistics see exactly the values the next layer reads.
template <typename T, class C>
__device__ __forceinline__ void round_outputs(float (&acc)[C::kMB][C::kCout / 2], uint32_t (&pk)[C::kMB][C::kCout / 4]) {
#pragma unroll
  for (int mb = 0; mb < C::kMB; ++mb)
#pragma unroll
    for (int j = 0; j < C::kCout / 4; ++j) {
      pk[mb][j] = pack2<T>(acc[mb][2 * j], acc[mb][2 * j + 1]);
      unpack2<T>(pk[mb][j], acc[mb][2 * j], acc[mb][2 * j + 1]);
    }
}

// Byte offset in the halo of 16-byte chunk `chunk` of staged output pixel px. The halo is dead once
// every warp is past its last ldmatrix: the output is staged there as [pixel][Cout·2 B], chunks
// placed by out_slot; the chain stages it in the halo's interior instead (halo layout), where its
// next link's prologue takes it (Params::resident).
template <class C, bool kChain>
struct StagedOffset {
  __device__ int operator()(int px, int chunk) const {
    if constexpr (kChain) {
      return halo_offset<C::kChunks, C::kStride>(OwnHaloPixel<C>{}(px), chunk);
    } else {
      return px * C::kOutPixelBytes + (out_slot<C::kOutChunks>(chunk, px) << 4);
    }
  }
};

// Thread tid stores chunk q_out of tile pixels px_first + j·kPxStep: one column (col, image column
// x_out), every kRowStep-th row, so its conditions are per row and its address advances by kRowStep
// image rows (formed per store with divisions and 64-bit products, one store took ~50
// instructions). The chain stores only what other tiles read (col_all: the whole column).
template <class C, bool kChain>
struct StoreOut {
  static constexpr int kPxStep = kConsumers / C::kOutChunks, kRowStep = kPxStep / kTW;
  static_assert(kPxStep % kTW == 0, "a pass of the store loop is whole tile rows");
  uint4* const& out4;
  const int& n;
  const int& Ho;
  const int& Wo;
  const int& y0;
  const int& row_first;
  const int& x_out;
  const int& px_first;
  const int& q_out;
  const int& col;
  const bool& col_all;
  unsigned char* const& halo;
  const StagedOffset<C, kChain>& staged;
  template <class Hint>
  __device__ void operator()(Hint hint) const {
    uint4* dst = out4 + ((static_cast<int64_t>(n) * Ho + y0 + row_first) * Wo + x_out) * C::kOutChunks + q_out;
#pragma unroll
    for (int j = 0; j < C::kTH * kTW * C::kOutChunks / kConsumers; ++j) {
      const int r = row_first + j * kRowStep, y = y0 + r;
      if (y < Ho && x_out < Wo && (col_all || chain_store_needed<C::kTH>(r, col, y, x_out, Ho, Wo))) {
        store_act<decltype(hint)::value>(dst, *reinterpret_cast<const uint4*>(halo + staged(px_first + j * kPxStep, q_out)));
      }
      dst += static_cast<int64_t>(kRowStep) * Wo * C::kOutChunks;
    }
  }
};

// The statistics after the output (the chain's atomic adds must not hold up the stores), thread
// tid < Cout: channel tid's M2 from red, then Σx and Σx² over the image from the tile's (sum, M2):
// Σx² = M2 + sum²/count exactly, and in fp64 Σx²/n − mean² keeps the precision that Chan's merge
// keeps in fp32 (norm_state_add's form, with the whole tile's division as a product).
template <class C, bool kChain>
__device__ __forceinline__ void hand_on_moments(const Params& p, const float* red, int n, int tile, int tid,
                                                float tile_sum, bool whole, float count) {
  constexpr int COUT = C::kCout, kTilePixels = C::kTH * kTW;
  float m2 = 0.f;
#pragma unroll
  for (int w = 0; w < 8; ++w) m2 += red[w * COUT + tid];
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

// The epilogue of tile `tile` of sample n: round, moments, stage, store, hand on the moments. The
// tile origin and sizes are read from p again here (see conv_tile's prologue). The moments' two
// passes stay in this function: as a function of their own, their index math (first, t, v0, v1)
// compiled differently in the kernels whose statistics are optional.
template <typename T, class C, bool kChain>
__device__ __forceinline__ void tile_epilogue(const Params& p, float (&acc)[C::kMB][C::kCout / 2],
                                              unsigned char* const& halo, float* const& red, float* const& mean_s,
                                              int n, int tile, int tid, int lane, int warp, int row0, int lrow0,
                                              int phase0) {
  constexpr int kMB = C::kMB, COUT = C::kCout;
  const int y0 = (tile / p.tiles_x) * C::kTH, x0 = (tile % p.tiles_x) * kTW;
  const int Ho = p.Ho, Wo = p.Wo;
  const int g = lane >> 2, t = lane & 3;
  // Lane (g, t) of block mb holds pixels g and g + 8 of output row y0 + row0 + 4·mb, channels
  // 8i + 2t, 8i + 2t + 1 in acc[mb][4i .. 4i + 3]. Phase split: block mb = phase (a, b) = phase0 + mb
  // holds tile pixels (2·lrow0 + a, 2g + b) and (2·lrow0 + 2 + a, 2g + b).
  int px0[kMB], px1[kMB];   // tile pixel (row · 16 + column) of m16 rows g and g + 8
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb) {
    if constexpr (C::kPhase) {
      px0[mb] = (2 * lrow0 + ((phase0 + mb) >> 1)) * kTW + 2 * g + ((phase0 + mb) & 1);
      px1[mb] = px0[mb] + 2 * kTW;
    } else {
      px0[mb] = (row0 + 4 * mb) * kTW + g;
      px1[mb] = px0[mb] + 8;
    }
  }
  bool v0[kMB], v1[kMB];   // inside the image
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb) {
    v0[mb] = y0 + px0[mb] / kTW < Ho && x0 + px0[mb] % kTW < Wo;
    v1[mb] = y0 + px1[mb] / kTW < Ho && x0 + px1[mb] % kTW < Wo;
  }
  const float count = static_cast<float>(min(C::kTH, Ho - y0) * min(kTW, Wo - x0));
  constexpr int kTilePixels = C::kTH * kTW;
  static_assert((kTilePixels & (kTilePixels - 1)) == 0, "a power of two");
  const bool whole = count == static_cast<float>(kTilePixels);
  uint32_t pk[kMB][COUT / 4];
  round_outputs<T, C>(acc, pk);
  // Uniform: every consumer takes the same branch.
  const bool stats = kChain || p.partials != nullptr || p.norm_state != nullptr;
  float tile_sum = 0.f;
  constexpr int kV = 2 * C::kOutChunks;
  const int first = halving_first<kV>(g);
  // The tile's moments of every channel, in two passes over the rounded acc (valid pixels only): the
  // per-warp channel sums into red[8 warps][Cout], their total tile_sum (thread c < Cout: channel c)
  // and the mean into mean_s[Cout]; then the per-warp Σ(v − mean)² into red, which hand_on_moments
  // sums after the output's stores. v[2i + j] is channel 8i + 2t + j, summed over the lane's pixels,
  // then over g; lane (g, t) writes its V/8 of them (`first`, see sum_over_g).
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
  const StagedOffset<C, kChain> staged{};
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
    for (int i = 0; i < C::kOutChunks; ++i) {
      *reinterpret_cast<uint32_t*>(halo + staged(px0[mb], i) + 4 * t) = pk[mb][2 * i];
      *reinterpret_cast<uint32_t*>(halo + staged(px1[mb], i) + 4 * t) = pk[mb][2 * i + 1];
    }
  }
  consumers_sync();
  tile_mark(p, 6);
  uint4* out4 = reinterpret_cast<uint4*>(p.out);
  // The chain stores only what other tiles read, except its last output and on tiles cut by the edge.
  const bool store_every = !kChain || p.out_all || y0 + C::kTH > Ho || x0 + kTW > Wo;
  constexpr int kPxStep = StoreOut<C, kChain>::kPxStep;
  const int q_out = static_cast<int>(static_cast<unsigned>(tid) % C::kOutChunks);
  const int px_first = static_cast<int>(static_cast<unsigned>(tid) / C::kOutChunks % kPxStep);   // (< kPxStep: tid < 256)
  const int col = px_first % kTW, row_first = px_first / kTW, x_out = x0 + col;
  const bool col_all = store_every || col == 0 || col == kTW - 1 || x_out == 1 || x_out == Wo - 2;
  const StoreOut<C, kChain> store_out{out4, n, Ho, Wo, y0, row_first, x_out, px_first, q_out, col, col_all, halo, staged};
  with_act_hint<kChain>(p.l2_evict_first, store_out);
  if (stats && tid < COUT) hand_on_moments<C, kChain>(p, red, n, tile, tid, tile_sum, whole, count);
}
#endif  // STYLEFORGE_SM90A

}  // namespace
}  // namespace styleforge
