// The fused 3×3 tile's prologue pieces: a = act(x·scale + shift [+ residual]) on the tile's
// reflected (upsampled) halo, written once to shared memory in the swizzled layout that the main
// loop's ldmatrix reads (StageHalo); the chain's resident tiles, border from global memory and
// interior normalised in place (StageResident); the input norm's affine from the producer's fp64
// sums (AffineFromSums). Pure CUDA, no torch; part of conv3x3_tile.cuh, not included on its own.
// They are functors over references to conv_tile's prologue locals (the lambdas they were), which
// conv_tile declares and wires up: the compiler inlines them as it did the lambdas, and the locals
// keep their place in conv_tile, so the machine code is the single function's (moving those locals
// into a function of their own renumbers ptxas's input and changes the SASS).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../common/packed16.cuh"
#include "../norm_sums/norm_sums.cuh"
#include "conv3x3_tile_smem.cuh"

namespace styleforge {
namespace {

#if STYLEFORGE_SM90A
// Offset of 16-byte chunk q of pixel px in the chain's kept block input: [kTH·kTW pixels][Cout·2 B],
// chunks XOR-swizzled by the pixel.
template <class C>
struct ActOffset {
  __device__ int operator()(int px, int q) const { return px * (C::kCout * 2) + ((q ^ (px & 7)) << 4); }
};
// The halo pixel over tile pixel px (row px / kTW, column px % kTW): where the chain keeps it.
template <class C>
struct OwnHaloPixel {
  __device__ int operator()(int px) const { return (px / kTW + 1) * C::kHaloW + px % kTW + 1; }
};

// This sample's input affine, formed on an earlier tile, from sm.aff into the thread's 8 channels
// (chunk q): scale sc[8], shift sh[8].
template <class C>
struct ReadAffine {
  float (&sc)[8];
  float (&sh)[8];
  const TileSmem<C>& sm;
  const int& q;
  __device__ void operator()() const {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sc[e] = sm.aff[q * 8 + e];
      sh[e] = sm.aff[C::kCinX + q * 8 + e];
    }
  }
};

// The input norm's affine from the producer's sums (Params::in_sums, norm_affine_from_sums). kG
// adjacent threads share channel sum_c, each holding kPer of the copies (part: Σx, Σx² per copy);
// their sums meet through shuffles and the group's first thread writes (scale, shift) to sm.aff.
// Every consumer thread calls this at the same point (each runs the halo loop's first pass).
template <class C, bool kChain>
struct AffineFromSums {
  static constexpr int kG = kConsumers / C::kCinX, kPer = kNormSumCopies / kG;
  const Params& p;
  const TileSmem<C>& sm;
  double (&part)[2 * kPer];
  const float& gm;
  const float& bt;
  const int& sum_c;
  const int& sum_grp;
  const int& tid;
  const bool& last_read;
  unsigned* const& ticket;
  const ReadAffine<C>& read_affine;
  __device__ void operator()() const {
    double sum1 = 0.0, sum2 = 0.0;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      sum1 += part[2 * k];
      sum2 += part[2 * k + 1];
    }
#pragma unroll
    for (int o = 1; o < kG; o <<= 1) {
      sum1 += __shfl_xor_sync(0xffffffffu, sum1, o);
      sum2 += __shfl_xor_sync(0xffffffffu, sum2, o);
    }
    if (sum_grp == 0) {
      norm_affine_from_sums(sum1, sum2, p.inv_count, gm, bt, p.eps, sm.aff[sum_c], sm.aff[C::kCinX + sum_c]);
    }
    consumers_sync();
    // Every consumer's loads of the sums have returned (their values are in sm.aff): the CTA counts
    // (thread 0 takes a ticket, checked at the kernel's end), or, with a producer warp, hands that
    // to it.
    if (!kChain && last_read && p.in_counter != nullptr) {
      if constexpr (C::kResidentWeights) {
        if (tid == 0) *ticket = atomicAdd(p.in_counter, 1u);
      } else {
        sums_read_arrive();
      }
    }
    tile_mark(p, 7);
    read_affine();
  }
};

// a = act(v·scale + shift [+ residual]) on 8 channels, packed.
template <typename T>
struct Activate {
  float (&sc)[8];
  float (&sh)[8];
  const Params& p;
  __device__ uint4 operator()(const uint4& v, const uint4& rv, bool with_residual) const {
    float f[8];
    unpack8<T>(v, f);
#pragma unroll
    for (int e = 0; e < 8; ++e) f[e] = fmaf(f[e], sc[e], sh[e]);
    if (with_residual) {
      float g[8];
      unpack8<T>(rv, g);
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] += g[e];
    }
    if (p.relu) {
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] = fmaxf(f[e], 0.f);
    }
    return make_uint4(pack2<T>(f[0], f[1]), pack2<T>(f[2], f[3]), pack2<T>(f[4], f[5]), pack2<T>(f[6], f[7]));
  }
};

// The whole halo from global memory (x, and the residual r4 when set): thread tid loads chunk q of
// pixels tid / kChunks + k·kRowsPerPass, activates them, stores them to the halo and (p.act) the
// tile's interior to act, the next residual. All of a batch's loads are issued before the first is
// used. Twelve in flight per thread without a residual (one round trip for the 128-channel halo),
// six (+ six residual) with one: more spill at Cin 128 (the main loop's register budget).
template <typename T, class C, bool kChain>
struct StageHalo {
  static constexpr int kChunks = C::kChunks, kChunksX = C::kChunksX;
  static constexpr int kRowsPerPass = kConsumers / kChunks;   // pixels per pass: 16 (Cin 128) or 32 (Cin 64)
  static_assert(kRowsPerPass <= C::kHaloPixels, "every consumer runs the halo loop's first pass");
  const Params& p;
  unsigned char* const& halo;
  const uint4* const& x4;
  const uint4* const& r4;
  const int& tid;
  const int& n;
  const int& q;
  const int& y0;
  const int& x0;
  const int& H;
  const int& W;
  const int& Ho;
  const int& Wo;
  bool& pending;   // the affine from sums is still to form (after the first batch's loads)
  const AffineFromSums<C, kChain>& affine_from_sums;
  const Activate<T>& activate;
  template <class Batch, class WithResidual, class Hint>
  __device__ void operator()(Batch, WithResidual, Hint) const {
    constexpr int kBatch = Batch::value;
    constexpr bool kRes = WithResidual::value;
    constexpr bool kHint = Hint::value;
    constexpr int UP = C::kUp, STRIDE = C::kStride;
#pragma unroll 1
    for (int first = tid / kChunks; first < C::kHaloPixels; first += kBatch * kRowsPerPass) {
      uint4 v[kBatch], rv[kRes ? kBatch : 1];
      int64_t off[kBatch];
      bool interior[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int P = first + j * kRowsPerPass;
        const int r = static_cast<int>(static_cast<unsigned>(P) / C::kHaloW), c = P - r * C::kHaloW;   // (P ≥ 0)
        // Reflect in the (upsampled) output frame, then the nearest source pixel; phase split: the
        // low-resolution halo, whose reflection is replication.
        // Stride 2: input rows 2·y0 − 1 + r, reflected in the input frame.
        const int gy = kChain ? chain_source(y0 - 1 + r, H)
                       : C::kPhase ? min(max(y0 / 2 - 1 + r, 0), H - 1)
                                   : (STRIDE == 2 ? reflect_clamp(2 * y0 - 1 + r, H) : reflect_clamp(y0 - 1 + r, Ho) / UP);
        const int gx = kChain ? chain_source(x0 - 1 + c, W)
                       : C::kPhase ? min(max(x0 / 2 - 1 + c, 0), W - 1)
                                   : (STRIDE == 2 ? reflect_clamp(2 * x0 - 1 + c, W) : reflect_clamp(x0 - 1 + c, Wo) / UP);
        off[j] = ((static_cast<int64_t>(n) * H + gy) * W + gx) * kChunksX + q;
        interior[j] = UP == 1 && STRIDE == 1 && r >= 1 && r <= C::kTH && c >= 1 && c <= kTW && y0 + r - 1 < H &&
                      x0 + c - 1 < W;
        v[j] = make_uint4(0, 0, 0, 0);
        if constexpr (kRes) rv[j] = make_uint4(0, 0, 0, 0);
        if (P < C::kHaloPixels) {
          v[j] = load_act<kChain, kHint>(x4 + off[j]);
          if constexpr (kRes) rv[j] = load_act<kChain, kHint>(r4 + off[j]);
        }
      }
      if (pending) {
        affine_from_sums();
        pending = false;
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int P = first + j * kRowsPerPass;
        if (P >= C::kHaloPixels) break;
        const uint4 a = activate(v[j], kRes ? rv[kRes ? j : 0] : v[j], kRes);
        *reinterpret_cast<uint4*>(halo + halo_offset<kChunks, STRIDE>(P, q)) = a;
        if (p.act && interior[j]) store_act<kHint>(reinterpret_cast<uint4*>(p.act) + off[j], a);
      }
    }
  }
};

// StageHalo with its batch: six pixels (+ six of the residual) with a residual, else twelve, or
// (two CTAs per SM) only as many as the halo needs, in their 80 registers. Called with the
// launch's L2 hint (with_act_hint).
template <typename T, class C, bool kChain>
struct StageHaloBatched {
  static constexpr int kRowsPerPass = StageHalo<T, C, kChain>::kRowsPerPass;
  static constexpr int kFew = (C::kHaloPixels + kRowsPerPass - 1) / kRowsPerPass;
  const uint4* const& r4;
  const StageHalo<T, C, kChain>& stage;
  template <class Hint>
  __device__ void operator()(Hint hint) const {
    if (r4 != nullptr) {
      stage(std::integral_constant<int, 6>{}, std::true_type{}, hint);
    } else {
      stage(std::integral_constant<int, C::kMinBlocks == 2 && kFew < 12 ? kFew : 12>{}, std::false_type{}, hint);
    }
  }
};

// The chain's resident tiles (Params::resident): the border from global memory in one batch (its
// 52 pixels over 16 pixel slots of 16 chunk threads), then the tile's own pixels from shared
// memory (thread: column `slot` of every row, chunk q), normalised in place, and the block input
// kept in act_s (and stored where other tiles read it).
template <typename T, class C, bool kChain>
struct StageResident {
  static constexpr int kChunks = C::kChunks, kChunksX = C::kChunksX;
  const int& tid;
  const uint4* const& r4;
  const int& n;
  const int& H;
  const int& y0;
  const int& W;
  const int& x0;
  const int& q;
  const uint4* const& x4;
  bool& pending;
  const AffineFromSums<C, kChain>& affine_from_sums;
  unsigned char* const& halo;
  const Activate<T>& activate;
  const Params& p;
  unsigned char* const& act_s;
  const ActOffset<C>& act_offset;
  __device__ void operator()() const {
    constexpr int UP = C::kUp, STRIDE = C::kStride;
    constexpr int kBorder = 2 * C::kHaloW + 2 * C::kTH;       // halo rows 0, kTH + 1; columns 0, kTW + 1
    constexpr int kSlots = kConsumers / kChunks;
    constexpr int kBatch = (kBorder + kSlots - 1) / kSlots;
    static_assert(!kChain || (kSlots == kTW && UP == 1 && STRIDE == 1), "a pass of slots is one tile row");
    const int slot = tid / kChunks;
    const bool res = r4 != nullptr;
    uint4 v[kBatch], rv[kBatch];
    int pb[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int b = slot + j * kSlots;
      pb[j] = -1;
      v[j] = rv[j] = make_uint4(0, 0, 0, 0);
      if (b < kBorder) {
        int r, c;
        if (b < 2 * C::kHaloW) {
          r = b < C::kHaloW ? 0 : C::kTH + 1;
          c = b < C::kHaloW ? b : b - C::kHaloW;
        } else {
          r = 1 + ((b - 2 * C::kHaloW) >> 1);
          c = (b & 1) ? C::kHaloW - 1 : 0;   // 2·kHaloW is even: b's parity is k's
        }
        pb[j] = r * C::kHaloW + c;
        const int64_t off =
            ((static_cast<int64_t>(n) * H + chain_source(y0 - 1 + r, H)) * W + chain_source(x0 - 1 + c, W)) * kChunksX + q;
        v[j] = load_act<true, true>(x4 + off);
        if (res) rv[j] = load_act<true, true>(r4 + off);
      }
    }
    if (pending) {
      affine_from_sums();
      pending = false;
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (pb[j] >= 0) {
        *reinterpret_cast<uint4*>(halo + halo_offset<kChunks, STRIDE>(pb[j], q)) = activate(v[j], rv[j], res);
      }
    }
    tile_mark(p, 8);
    // (All kTH rows unrolled: their shared-memory loads in flight together.)
    // The kept block input's stores: column `slot` of every row, one row (W pixels) apart. The
    // column's part of chain_store_needed once, written out: through the function with the row
    // compile-time, ptxas kept per-row work (+64 instructions in the chain; so in store_out too).
    const bool col_stored = p.act_all || slot == 0 || slot == kTW - 1 || x0 + slot == 1 || x0 + slot == W - 2;
    uint4* act_g = p.act ? reinterpret_cast<uint4*>(p.act) + ((static_cast<int64_t>(n) * H + y0) * W + x0 + slot) * kChunksX + q
                         : nullptr;
#pragma unroll
    for (int j = 0; j < C::kTH; ++j) {
      const int px = j * kTW + slot;   // its halo pixel: own_halo_pixel(px), written out (ptxas's code)
      uint4* h = reinterpret_cast<uint4*>(halo + halo_offset<kChunks, STRIDE>((j + 1) * C::kHaloW + slot + 1, q));
      uint4* a_s = reinterpret_cast<uint4*>(act_s + act_offset(px, q));
      const uint4 a = activate(*h, res ? *a_s : make_uint4(0, 0, 0, 0), res);
      *h = a;
      if (p.act) {
        *a_s = a;
        if (col_stored || j == 0 || j == C::kTH - 1 || y0 + j == 1 || y0 + j == H - 2) {
          store_act<true>(act_g + static_cast<int64_t>(j) * W * kChunksX, a);
        }
      }
    }
    tile_mark(p, 9);
  }
};

// The chain's first link keeps its tile's block input for the residual two links on (the later
// ones in StageResident). Copied from the halo here, after the prologue, not in StageHalo: there,
// at 168 registers, ptxas added ~50 spill reloads to the unrolled main loop.
template <class C>
__device__ __forceinline__ void keep_block_input(const Params& p, unsigned char* const& halo, unsigned char* const& act_s,
                                                 const ActOffset<C>& act_offset, const int& tid) {
  const OwnHaloPixel<C> own_halo_pixel{};
  if (!p.resident && p.act) {
    const int q = tid % C::kChunks;
#pragma unroll 2
    for (int px = tid / C::kChunks; px < C::kTH * kTW; px += kConsumers / C::kChunks) {
      *reinterpret_cast<uint4*>(act_s + act_offset(px, q)) = *reinterpret_cast<const uint4*>(
          halo + halo_offset<C::kChunks, C::kStride>(own_halo_pixel(px), q));
    }
  }
}
#endif  // STYLEFORGE_SM90A

}  // namespace
}  // namespace styleforge
