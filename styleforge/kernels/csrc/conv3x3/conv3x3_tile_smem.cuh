// The fused 3×3 tile's memory: the halo's swizzle, the reflections, the shared-memory layout
// (TileSmem) and its barriers, the weight producer, the activations' (hinted) loads and stores,
// and the profile marks. Pure CUDA, no torch; part of conv3x3_tile.cuh, not included on its own.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../common/cache_hints.cuh"
#include "../common/sm90_ptx.cuh"
#include "conv3x3_tile_config.cuh"
#include "conv3x3_tile_profile.cuh"

namespace styleforge {
namespace {

// Dev builds (-DSF_TILE_PROFILE=1, conv3x3_tile_profile.cuh) time the tile's phases: clock64 at mark k, and
// the global timer (comparable across SMs and kernels) at the tile's start and end.
__device__ __forceinline__ void tile_mark(const Params& p, int k) {
#if SF_TILE_PROFILE
  if (p.profile != nullptr && threadIdx.x == 0) p.profile[k] = clock64();
#endif
}
__device__ __forceinline__ void tile_mark_global(const Params& p, int k) {
#if SF_TILE_PROFILE
  if (p.profile != nullptr && threadIdx.x == 0) {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
    p.profile[k] = t;
  }
#endif
}

// The XOR that places 16-byte chunk q of halo pixel P (chunk q ^ halo_swizzle(P)): a warp's
// ldmatrix reads 8 pixels of one chunk, consecutive (stride 1: P's low 3 bits) or every other one
// (stride 2: bits 1–3, so that even and odd runs both hit 8 distinct bank groups).
template <int STRIDE>
__device__ __forceinline__ int halo_swizzle(int P) {
  return STRIDE == 2 ? (P >> 1) & 7 : P & 7;
}

// Byte offset of 16-byte chunk q of halo pixel P. 128-byte pixels and wider: chunk q ^ halo_swizzle(P)
// of the pixel's own rows. 64-byte pixels (Cin 32): two pixels per 128-byte row, the pixel's parity
// picking the half and the row index XOR-ing the 8 chunk slots, so that the 8 pixels of one
// ldmatrix (a stride-2 run: one parity, consecutive rows) hit 8 distinct bank groups.
template <int kChunks, int STRIDE>
__device__ __forceinline__ int halo_offset(int P, int q) {
  if constexpr (kChunks == 4) {
    return (P >> 1) * 128 + (((q | ((P & 1) << 2)) ^ ((P >> 1) & 7)) << 4);
  } else {
    return P * kChunks * 16 + ((q ^ halo_swizzle<STRIDE>(P)) << 4);
  }
}

#if STYLEFORGE_SM90A   // helpers of the sm_90a kernel only
// The chain's source row (column) for halo position i of an n-pixel image: the reflection where an
// output inside the image reads it (−1 → 1, n → n − 2), and n − 2 for the positions past n that feed
// only dropped outputs, so that every pixel a halo reads is one that chain_store_needed stores.
__device__ __forceinline__ int chain_source(int i, int n) { return i < 0 ? 1 : (i >= n ? n - 2 : i); }

// Whether a link's output (or block input) pixel (y, x) is read from global memory by a tile's
// halo: an edge row or column of its TH × 16 tile (the neighbours' border) or a row or column that
// a reflection reads (1, n − 2). r, c: the pixel's row and column in its tile (y mod TH, x mod 16),
// which the callers know without a division (ptxas's signed remainders cost 4 instructions each).
template <int TH>
__device__ __forceinline__ bool chain_store_needed(int r, int c, int y, int x, int H, int W) {
  return r == 0 || r == TH - 1 || y == 1 || y == H - 2 || c == 0 || c == kConv3x3TileW - 1 || x == 1 || x == W - 2;
}

__device__ __forceinline__ int reflect_clamp(int i, int n) {
  i = i < 0 ? -i : (i >= n ? 2 * n - 2 - i : i);
  return min(max(i, 0), n - 1);   // only tiles past the edge reach further; their outputs are dropped
}
#endif

// Count of image pixels in tile `tile` (row-major over tiles_x, th × 16): edge tiles are clipped.
__device__ __forceinline__ float tile_pixels(int tile, int tiles_x, int th, int H, int W) {
  const int ty = tile / tiles_x, tx = tile - ty * tiles_x;
  return static_cast<float>(min(th, H - ty * th) * min(kTW, W - tx * kTW));
}

#if STYLEFORGE_SM90A
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }
// Barrier 2 (consumers + the producer warp): the consumers arrive, without waiting, once their reads
// of the input sums are done; the producer warp waits there, then counts the CTA (Params::in_counter).
constexpr int kSumsReadBarrierThreads = kConsumers + 32;
__device__ __forceinline__ void sums_read_arrive() {
  asm volatile("bar.arrive 2, %0;\n" ::"n"(kSumsReadBarrierThreads) : "memory");
}
__device__ __forceinline__ void sums_read_wait() {
  asm volatile("bar.sync 2, %0;\n" ::"n"(kSumsReadBarrierThreads) : "memory");
}

// Slot of 16-byte chunk i of staged output pixel px: conflict-free for the epilogue's 4-byte writes
// (8 pixels × 4 lanes) with 8+ chunks per pixel (XOR the pixel's low bits), and with 4 (Cout 32:
// 64-byte pixels, two per 128 bytes, so XOR bits 1–2).
template <int kOutChunks>
__device__ __forceinline__ int out_slot(int i, int px) {
  return kOutChunks >= 8 ? (i ^ (px & 7)) : (i ^ ((px >> 1) & 3));
}
#endif

#if STYLEFORGE_SM90A
// One CTA's shared memory, both kernels: the weight ring [stage][Cin/64][Cout][128 B], the halo tile
// [pixel][Cin·2 B] (chunks swizzled; later the staged output), the ring's full/empty mbarriers and
// the statistics scratch red [8 warps][Cout] + mean_s [Cout].
template <class C>
struct TileSmem {
  uint32_t w_s, halo_s, bar_full, bar_empty;
  unsigned char* halo;
  float* red;
  float* mean_s;
  float* aff;           // the input norm's affine from sums: scale [Cin], shift [Cin]
  unsigned char* end;   // past the layout (the chain's extra bytes)
  __device__ __forceinline__ explicit TileSmem(unsigned char* smem_raw) {
    const uint32_t raw = sm90::smem_u32(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;
    unsigned char* smem = smem_raw + (base - raw);
    w_s = base;
    halo_s = base + C::kStages * C::kEntryBytes;
    halo = smem + C::kStages * C::kEntryBytes;
    bar_full = base + C::kBarOff;
    bar_empty = bar_full + 8 * C::kStages;
    red = reinterpret_cast<float*>(smem + C::kRedOff);
    mean_s = red + 8 * C::kCout;
    aff = reinterpret_cast<float*>(smem + C::kAffOff);
    end = smem + C::kEndOff;
  }
  __device__ __forceinline__ void init_barriers() const {
    for (int s = 0; s < C::kStages; ++s) {
      sm90::mbar_init(bar_full + 8 * s, 1);
      sm90::mbar_init(bar_empty + 8 * s, 8);   // one arrival per consumer warp
    }
    sm90::mbar_init_fence();
  }
};

// The producer warp's lane 0: one convolution's kTaps ring entries of B, at ring positions u0 ..
// u0 + kTaps − 1 (the chain continues the ring from one convolution to the next). The weights are
// constant: no dependency wait.
template <class C>
__device__ __forceinline__ void produce_taps(const TileSmem<C>& sm, const unsigned char* weight, int u0) {
  for (int tap = 0; tap < C::kTaps; ++tap) {
    const int u = u0 + tap, st = u % C::kStages;
    if (u >= C::kStages) sm90::mbar_wait(sm.bar_empty + 8 * st, ((u / C::kStages) - 1) & 1);
    sm90::mbar_expect_tx(sm.bar_full + 8 * st, C::kEntryBytes);
    sm90::bulk_copy_g2s(sm.w_s + st * C::kEntryBytes, weight + static_cast<size_t>(tap) * C::kEntryBytes,
                        C::kEntryBytes, sm.bar_full + 8 * st);
  }
}

// Loads of activations: through L1 (read-only path) in a single convolution; at L2 (ld.global.cg) in
// the chain, whose inputs other CTAs of the same grid wrote (the read-only path may keep stale lines).
// kHint: evict-first in L2 (cache_hints.cuh: where the launch's activations fit L2, so that the code
// and the weights stay there; Params::l2_evict_first picks the instantiation, the chain always).
template <bool kChain, bool kHint>
__device__ __forceinline__ uint4 load_act(const uint4* p) {
  if constexpr (kHint) {
    return kChain ? ldcg_evict_first(p, evict_first_policy()) : ldg_evict_first(p, evict_first_policy());
  } else {
    return kChain ? __ldcg(p) : __ldg(p);
  }
}
// f(std::true_type{}) where the launch hints its activations (the chain always), else
// f(std::false_type{}): the plain form is instantiated only where it can run.
template <bool kChain, class F>
__device__ __forceinline__ void with_act_hint(bool evict_first, F&& f) {
  if constexpr (kChain) {
    f(std::true_type{});
  } else if (evict_first) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}
template <bool kHint>
__device__ __forceinline__ void store_act(uint4* p, const uint4& v) {
  if constexpr (kHint) {
    st_evict_first(p, v, evict_first_policy());
  } else {
    *p = v;
  }
}
#endif  // STYLEFORGE_SM90A

}  // namespace
}  // namespace styleforge
