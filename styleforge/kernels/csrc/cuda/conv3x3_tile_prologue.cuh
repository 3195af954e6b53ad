// The 3×3 tile's prologue: a = act(x·scale + shift [+ residual]) on the reflected (upsampled) halo
// tile, written once to shared memory in the halo layout (conv3x3_tile_layout.cuh) and, if asked,
// the tile's interior to `act`, which becomes the next residual. The input norm's affine is either
// read (scale, shift) or formed from the producer's fp64 sums (Params::in_sums) while the first halo
// loads are in flight. The chain's resident tiles load only the halo's border and normalise their
// kept output in place. Pure CUDA, no torch; part of conv3x3_tile.cuh.
#pragma once

#include <cstdint>
#include <type_traits>

#include "norm_state.cuh"
#include "packed16.cuh"
#include "conv3x3_tile_layout.cuh"

namespace styleforge {
namespace {

#if SF_SM90A
// One tile's prologue by the 256 consumer threads (thread tid). The caller has waited for the kernels
// before it: x, scale, shift, residual and the input sums come from them. Sizes and the tile origin
// are read from p here and again after the main loop, not held across it: the chain's p is in shared
// memory, and registers held through the main loop would spill.
template <typename T, class C, bool kChain>
struct TilePrologue {
  static constexpr int CIN_X = C::kCinX, kChunks = C::kChunks, kChunksX = C::kChunksX;
  static constexpr int STRIDE = C::kStride, UP = C::kUp;
  // The affine from sums: kG adjacent threads share channel tid / kG, each loading kPer of the copies.
  static constexpr int kG = kConsumers / CIN_X, kPer = kNormSumCopies / kG;
  static_assert(kG * CIN_X == kConsumers && kPer * kG == kNormSumCopies && kG <= 32, "sums layout");
  static constexpr int kRowsPerPass = kConsumers / kChunks;   // pixels per pass: 16 (Cin 128) or 32 (Cin 64)
  static_assert(kRowsPerPass <= C::kHaloPixels, "every consumer runs the halo loop's first pass");

  const Params& p;
  const TileSmem<C>& sm;
  const int n, tid;
  const bool last_read;
  unsigned* const ticket;
  const int y0, x0, H, W, Ho, Wo;
  const int q;   // fixed per thread: its 8 channels' affine stays in registers
  float sc[8], sh[8];
  const bool from_sums;   // uniform
  bool pending;           // the sums' loads are issued, the affine not yet formed
  double part[2 * kPer];
  float gm = 1.f, bt = 0.f;
  const int sum_c, sum_grp;
  const uint4* const x4;
  const uint4* const r4;

  // Reads the affine (scale, shift) or issues the sums' loads; with refresh false, this sample's
  // affine formed on an earlier tile is in sm.aff.
  __device__ __forceinline__ TilePrologue(const Params& p_, const TileSmem<C>& sm_, int n_, int tile, int tid_,
                                          bool refresh, bool last_read_, unsigned* ticket_)
      : p(p_), sm(sm_), n(n_), tid(tid_), last_read(last_read_), ticket(ticket_),
        y0((tile / p_.tiles_x) * C::kTH), x0((tile % p_.tiles_x) * kTW), H(p_.H), W(p_.W), Ho(p_.Ho), Wo(p_.Wo),
        q(tid_ % kChunks), from_sums(p_.in_sums != nullptr), pending(from_sums && refresh),
        sum_c(tid_ / kG), sum_grp(tid_ % kG), x4(reinterpret_cast<const uint4*>(p_.x)),
        r4(reinterpret_cast<const uint4*>(p_.residual)) {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sc[e] = p.scale ? p.scale[n * CIN_X + q * 8 + e] : 1.f;
      sh[e] = p.shift ? p.shift[n * CIN_X + q * 8 + e] : 0.f;
    }
    // The loads are issued here and used only after the first batch of halo loads is issued, so the
    // two round trips overlap.
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
    if (from_sums && !refresh) read_affine();
  }

  __device__ __forceinline__ void read_affine() {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sc[e] = sm.aff[q * 8 + e];
      sh[e] = sm.aff[CIN_X + q * 8 + e];
    }
  }

  // The norm from the sums (norm_affine_from_sums): the kG threads' sums meet through shuffles and
  // the group's first thread writes (scale, shift) to sm.aff. Every consumer thread calls this at the
  // same point (each runs the halo loop's first pass).
  __device__ __forceinline__ void affine_from_sums() {
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
      norm_affine_from_sums(sum1, sum2, p.inv_count, gm, bt, p.eps, sm.aff[sum_c], sm.aff[CIN_X + sum_c]);
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
  __device__ __forceinline__ void affine_if_pending() {
    if (pending) {
      affine_from_sums();
      pending = false;
    }
  }

  // a = act(v·scale + shift [+ residual]) on 8 channels, packed.
  __device__ __forceinline__ uint4 activate(const uint4& v, const uint4& rv, bool with_residual) const {
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

  // The whole halo from global memory, kBatch pixels a thread per pass: all of a batch's loads are
  // issued before the first is used. Twelve in flight per thread without a residual (one round trip
  // for the 128-channel halo), six (+ six residual) with one: more spill at Cin 128 (the main
  // loop's register budget).
  template <int kBatch, bool kRes, bool kHint>
  __device__ __forceinline__ void stage() {
    unsigned char* halo = sm.halo;
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
      affine_if_pending();
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

  // The chain's resident tiles (Params::resident): the border from global memory in one batch (its
  // 52 pixels over 16 pixel slots of 16 chunk threads), then the tile's own pixels from shared
  // memory (thread: column `slot` of every row, chunk q), normalised in place.
  __device__ __forceinline__ void stage_resident() {
    constexpr int kBorder = 2 * C::kHaloW + 2 * C::kTH;       // halo rows 0, kTH + 1; columns 0, kTW + 1
    constexpr int kSlots = kConsumers / kChunks;
    constexpr int kBatch = (kBorder + kSlots - 1) / kSlots;
    static_assert(!kChain || (kSlots == kTW && UP == 1 && STRIDE == 1), "a pass of slots is one tile row");
    unsigned char* halo = sm.halo;
    unsigned char* act_s = sm.end + kChainParamsBytes;
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
    affine_if_pending();
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (pb[j] >= 0) {
        *reinterpret_cast<uint4*>(halo + halo_offset<kChunks, STRIDE>(pb[j], q)) = activate(v[j], rv[j], res);
      }
    }
    tile_mark(p, 8);
    // All kTH rows unrolled, their shared-memory loads in flight together. The kept block input's
    // stores: column `slot` of every row, one row (W pixels) apart. The column's part of
    // chain_store_needed once, written out: through the function with the row compile-time, ptxas
    // kept per-row work.
    const bool col_stored = p.act_all || slot == 0 || slot == kTW - 1 || x0 + slot == 1 || x0 + slot == W - 2;
    uint4* act_g = p.act ? reinterpret_cast<uint4*>(p.act) + ((static_cast<int64_t>(n) * H + y0) * W + x0 + slot) * kChunksX + q
                         : nullptr;
#pragma unroll
    for (int j = 0; j < C::kTH; ++j) {
      const int px = j * kTW + slot;   // its halo pixel: own_halo_pixel(px), written out (ptxas's code)
      uint4* h = reinterpret_cast<uint4*>(halo + halo_offset<kChunks, STRIDE>((j + 1) * C::kHaloW + slot + 1, q));
      uint4* a_s = reinterpret_cast<uint4*>(act_s + act_offset<C::kCout>(px, q));
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

  template <int kFew, bool kHint>
  __device__ __forceinline__ void stage_x() {
    if (r4 != nullptr) {
      stage<6, true, kHint>();
    } else {
      stage<C::kMinBlocks == 2 && kFew < 12 ? kFew : 12, false, kHint>();
    }
  }

  // The halo, staged; then every consumer is past its writes (one CTA barrier).
  __device__ __forceinline__ void run() {
    if (kChain && p.resident && y0 + C::kTH <= Ho && x0 + kTW <= Wo) {
      if constexpr (kChain) stage_resident();
    } else {
      // (Two CTAs per SM: a batch only as large as the halo needs, in their 80 registers.)
      constexpr int kFew = (C::kHaloPixels + kRowsPerPass - 1) / kRowsPerPass;
      // (with_act_hint's choice, written out: a lambda over this object kept it in memory longer)
      if constexpr (kChain) {
        stage_x<kFew, true>();
      } else if (p.l2_evict_first) {
        stage_x<kFew, true>();
      } else {
        stage_x<kFew, false>();
      }
    }
  }
};

// The prologue of tile `tile` of sample n (TilePrologue), its CTA barrier, and the chain's first
// link's copy of the tile's block input (the residual two links on; the later links keep it in
// stage_resident). That copy is made from the halo here, not while staging: there, at 168
// registers, ptxas added spill reloads to the unrolled main loop.
template <typename T, class C, bool kChain>
__device__ __forceinline__ void tile_prologue(const Params& p, const TileSmem<C>& sm, int n, int tile, int tid,
                                              bool refresh, bool last_read, unsigned* ticket) {
  {
    TilePrologue<T, C, kChain> pro(p, sm, n, tile, tid, refresh, last_read, ticket);
    pro.run();
  }
  consumers_sync();
  tile_mark(p, 1);
  if constexpr (kChain) {
    if (!p.resident && p.act) {
      unsigned char* act_s = sm.end + kChainParamsBytes;
      const int q = tid % C::kChunks;
#pragma unroll 2
      for (int px = tid / C::kChunks; px < C::kTH * kTW; px += kConsumers / C::kChunks) {
        *reinterpret_cast<uint4*>(act_s + act_offset<C::kCout>(px, q)) = *reinterpret_cast<const uint4*>(
            sm.halo + halo_offset<C::kChunks, C::kStride>(own_halo_pixel<C>(px), q));
      }
    }
  }
}
#endif  // SF_SM90A

}  // namespace
}  // namespace styleforge
