// One output tile of the fused 3×3 convolution with its InstanceNorms (conv3x3.cu) and of the
// residual chain's persistent kernel (conv3x3_chain.cu): the tile geometry (Cfg), the kernels'
// parameters, the shared-memory layout, the weight producer and conv_tile (prologue, wgmma main
// loop, epilogue). Pure CUDA, no torch; included by those two files only (anonymous namespace).
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

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../common/cache_hints.cuh"
#include "../norm_sums/norm_sums.cuh"
#include "../common/packed16.cuh"
#include "../common/pdl.cuh"
#include "../common/smem_optin.cuh"
#include "../common/sm90_ptx.cuh"
#include "conv3x3_tile_profile.cuh"
#include "../common/warp_sums.cuh"
#include "conv3x3.h"

namespace styleforge {
namespace {

constexpr int kTW = kConv3x3TileW;
constexpr int kConsumers = 256, kThreads = kConsumers + 32;   // (Cfg::kThreadsPerCta)
constexpr int kChainSumCopies = kNormSumCopies;   // copies of the sums (see Params::in_sums)
// The chain's shared memory past the tile's layout (TileSmem::end): its link's Params, then the
// tile's block input (Params::resident).
constexpr uint32_t kChainParamsBytes = 256;
constexpr int kMomentsThreads = 256;

constexpr uint32_t round_up_1k(uint32_t v) { return (v + 1023u) & ~1023u; }

template <int CIN, int COUT, int UP, int STRIDE = 1, int CIN_X = CIN>
struct Cfg {
  static constexpr int kTH = conv3x3_tile_h(COUT, STRIDE);    // output rows
  static constexpr int kMB = kTH / 8;                         // m64 blocks per warpgroup
  // Cin 32 (conv2, CIN_X < CIN): the weight's K is padded to the 64-channel block of the B layout,
  // but the halo holds only the real channels (64-byte pixels) and the main loop skips the zero k16
  // steps: half the MMAs and half the halo. Its tiles are 8 × 16 (36 KB of halo): 32 accumulators,
  // so two CTAs per SM (256 threads, no producer warp: 128 registers), one's halo loads and epilogue
  // under the other's MMAs. (At 16 × 16, 70 KB of halo and 64 accumulators, it ran one CTA per SM.)
  static constexpr bool kNarrow = CIN_X < CIN;
  static constexpr int kMinBlocks = kMB * COUT / 2 <= 32 ? 2 : 1;   // CTAs per SM
  // Phase split (the ×2 decoder layers): a nearest ×2 upsample then a 3×3 convolution is, for each
  // output phase (a, b) = (row, column) parity, a 2×2 convolution of the low-resolution input
  // (pack_weight sums the taps that land on the same input pixel; the reflection at the upsampled
  // border becomes replication): 16 taps of K = Cin per 4 output pixels instead of 36, 2.25× fewer
  // MMAs, and the halo holds low-resolution pixels. Each m64 block is one phase, two per warpgroup:
  // phases 2·wg, 2·wg + 1 of the same 8 × 8 low-resolution pixels, so a ring entry holds two taps,
  // one per warpgroup (kWGSplit; the weight's order: reference_conv3x3._ring_order). (The code also
  // takes four blocks per warpgroup, kWGSplit 1, the warpgroups splitting the rows.)
  static constexpr bool kPhase = conv3x3_phase_split(CIN, COUT, UP);
  static constexpr int kWGSplit = kPhase ? 4 / kMB : 1;       // distinct B matrices per ring entry
  static constexpr int kTaps = kPhase ? 16 / kWGSplit : 9;    // ring entries
  // Halo rows and columns: output tile + 2; phase split: the low-resolution tile + 2; stride 2:
  // 2·tile + 1 input rows/columns.
  static constexpr int kHaloH = kPhase ? kTH / 2 + 2 : (STRIDE == 2 ? 2 * kTH + 1 : kTH + 2);
  static constexpr int kHaloW = kPhase ? kTW / 2 + 2 : (STRIDE == 2 ? 2 * kTW + 1 : kTW + 2);
  static constexpr int kHaloPixels = kHaloH * kHaloW;
  static constexpr int kPixelBytes = CIN_X * 2;
  static constexpr int kChunks = CIN_X / 8;                   // 16-byte chunks per halo pixel
  static constexpr int kChunksX = CIN_X / 8;                  // ... per pixel of x
  static constexpr int kKSteps = CIN_X / 16;                  // k16 steps per tap (the real ones)
  // Pipeline steps per tap: each step's A fragments are kStepK k16 steps × kBlocksPerStep blocks = 4
  // ldmatrix.x4 (16 registers; two buffers), so the 64 accumulators and both buffers fit the 168
  // registers a thread gets (the block is 2.25 warpgroups; registers are allotted per warpgroup).
  // A phase-split tap feeds one block (its phase).
  static constexpr int kBlocksPerStep = kPhase ? 1 : kMB;
  // (Phase split at Cin 128, and two CTAs per SM: steps of 2 k16 steps, 8 A registers, because 16
  // spill there or make ptxas serialize the wgmmas.)
  // (conv2 in 8-row tiles: one block and two real k16 steps a tap, so one step of both.)
  static constexpr int kStepsPerTap = kPhase && (CIN == 128 || kMinBlocks == 2) ? kKSteps / 2
                                     : std::max(1, kKSteps * kBlocksPerStep / 4);
  static constexpr int kStepK = kKSteps / kStepsPerTap;
  static constexpr uint32_t kOutBytes = kTH * kTW * COUT * 2;
  // (64-byte pixels are stored in pairs per 128-byte row: see halo_offset.)
  static constexpr int kHaloUsed = kChunks == 4 ? (kHaloPixels + 1) / 2 * 128 : kHaloPixels * kPixelBytes;
  static constexpr uint32_t kHaloBytes = round_up_1k(kHaloUsed > static_cast<int>(kOutBytes) ? kHaloUsed : kOutBytes);
  static constexpr uint32_t kTapBytes = CIN * COUT * 2;
  static constexpr uint32_t kEntryBytes = kTapBytes * kWGSplit;
  static constexpr uint32_t kKbBytes = COUT * 128;            // one [Cout][64 k] block of a tap
  static constexpr int kStages = kEntryBytes >= 16384 ? 4 : 9;
  static constexpr uint32_t kBarOff = kStages * kEntryBytes + kHaloBytes;
  static constexpr uint32_t kRedOff = kBarOff + 2 * kStages * 8;   // fp32 [8 warps][Cout] + mean[Cout]
  // The input norm's affine when the prologue forms it from sums (Params::in_sums): scale [Cin], shift [Cin].
  static constexpr uint32_t kAffOff = kRedOff + (8 + 1) * COUT * 4;
  static constexpr uint32_t kEndOff = kAffOff + 2 * CIN_X * 4;   // the chain keeps its link's Params here
  // The whole weight fits the ring (conv2, deconv2): the grid is persistent, each CTA loads the
  // weight once and keeps it (ring entry u in stage u) for every tile it computes, instead of
  // every tile streaming it from L2 again (deconv2 at 512²: 1024 tiles × 64 KB). Its copies are
  // issued by consumer thread 0 before its first tile, so the block has no producer warp: 256
  // threads, not 288 (which are allotted registers as 384).
  static constexpr bool kResidentWeights = kTaps <= kStages;
  static constexpr int kThreadsPerCta = kResidentWeights ? kConsumers : kConsumers + 32;
  // Registers per thread (__maxnreg__): the register file over kMinBlocks CTAs, allotted per
  // warpgroup (a 288-thread CTA as 384 threads): 80 at 288 threads, 128 at 256. ptxas's own choice
  // for __launch_bounds__(288, 2) is 96, which fits one CTA, not two (ncu: "Block Limit Registers 1").
  static constexpr int kMaxRegs =
      kMinBlocks == 2 ? (65536 / (2 * ((kThreadsPerCta + 127) / 128 * 128))) / 8 * 8 : 168;
  static constexpr size_t kSmem = kEndOff + 1024;   // + slack to 1024-align
  static constexpr int kOutChunks = COUT / 8;
  static constexpr int kCout = COUT;
  static constexpr int kOutPixelBytes = COUT * 2;
  static_assert(kTH * kTW * kOutPixelBytes <= static_cast<int>(kHaloBytes), "the output stages in the halo");
  static_assert(!kPhase || kTaps * kWGSplit == 16, "phase split: 4 phases × 4 taps");
  static_assert(STRIDE == 1 || (STRIDE == 2 && UP == 1), "stride 2 without upsampling only");
  static_assert(kSmem <= 227 * 1024, "shared memory");
};

struct Params {
  const uint16_t* x;
  const uint16_t* residual;
  uint16_t* act;
  uint16_t* out;
  const unsigned char* weight;
  const float* scale;
  const float* shift;
  float2* partials;   // [N][tiles][Cout] (sum, M2), or null: no statistics (unless norm_state)
  // The in-kernel hand-off (norm_sums.h): the tile's moments go to this zeroed state's fp64 sums
  // and the grid's last CTA writes norm_out's (scale, shift); null: partials or no statistics.
  void* norm_state;
  NormHandoff norm_out;
  int H, W, Ho, Wo, tiles_x, tiles;
  bool relu;
  bool l2_evict_first;   // activations evict-first in L2 (cache_hints.cuh; the chain always)
  // The residual chain only. A tile inside the image keeps its activations in shared memory from one
  // link to the next (resident: the links after the first): the epilogue leaves the raw output in
  // the halo's interior and the prologue normalises it there, the block input (the residual two
  // links on) stays in shared memory after the layout, and only the 52 border pixels of the halo
  // come from global memory. So a link stores to global memory only what other tiles read
  // (chain_store_needed: the tile's edge rows and columns, and the rows and columns a reflection
  // reads) unless out_all / act_all: the chain's last output and last block input, which the
  // decoder reads. Tiles cut by the image's edge load and store everything, as a single convolution.
  bool resident, out_all, act_all;
  // The input norm from sums (the chain's links after the first, and any launch given an input
  // state): the prologue forms its affine from the producer's fp64 sums Σx, Σx² (in_sums, with
  // gamma, beta, eps and inv_count = 1 / the input's pixels) instead of reading scale/shift, so no
  // hand-off runs between the two kernels. Sums: kNormSumCopies copies (the producer's CTAs add to
  // copy blockIdx % copies: fewer atomics per address), each [2][N][Cin] fp64, Σx then Σx²,
  // sums_stride = N·Cin apart; copies 2·sums_stride apart. in_counter (not the chain, which clears
  // its sums itself): the input state's counter; every CTA counts once after its last read of the
  // sums and the last to count zeroes them (and the counter) at its end, for the next producer.
  const double* in_sums;
  unsigned* in_counter;
  const float* gamma;
  const float* beta;
  float eps;
  double inv_count;
  // The chain only: the epilogue's statistics added to out_sums (the same layout, Cout channels).
  double* out_sums;
  int sums_stride;
  int N;                // samples: tiles of the launch = N · tiles
  long long* profile;   // SF_TILE_PROFILE builds: this tile's record (tile_mark, conv3x3_tile_profile.cuh)
  int profile_iters;    // ... and a persistent CTA's records (one per tile it computes)
};

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

// One output tile (sample n, tile `tile`) by the 256 consumer threads: prologue, implicit GEMM over
// the ring entries at positions u0 .., epilogue with the tile's statistics. With p.in_sums: refresh
// forms sample n's input affine from the sums into sm.aff (a CTA's first tile, or a new sample),
// else the tile reads it there; last_read: this CTA reads the sums no more, so (p.in_counter set)
// the CTA counts itself right after (conv3x3_kernel: *ticket, or its producer warp).
template <typename T, int CIN, int COUT, int UP, int STRIDE, int CIN_X, bool kChain>
__device__ __forceinline__ void conv_tile(const Params& p, const TileSmem<Cfg<CIN, COUT, UP, STRIDE, CIN_X>>& sm,
                                          int n, int tile, int u0, bool refresh = true, bool last_read = true,
                                          unsigned* ticket = nullptr) {
  using namespace sm90;
  using C = Cfg<CIN, COUT, UP, STRIDE, CIN_X>;
  constexpr int kMB = C::kMB, kStepK = C::kStepK, kSPT = C::kStepsPerTap, kStages = C::kStages;
  constexpr int kTaps = C::kTaps, kSteps = kTaps * kSPT, kBPS = C::kBlocksPerStep;
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
  // The chain's kept block input: [kTH·kTW pixels][Cout·2 B], chunks XOR-swizzled by the pixel.
  unsigned char* act_s = sm.end + kChainParamsBytes;
  auto act_offset = [](int px, int q) { return px * (COUT * 2) + ((q ^ (px & 7)) << 4); };
  // The halo pixel over tile pixel px (row px / kTW, column px % kTW): where the chain keeps it.
  auto own_halo_pixel = [](int px) { return (px / kTW + 1) * C::kHaloW + px % kTW + 1; };
  // ---- prologue: a = act(x·scale + shift + residual) on the reflected (upsampled) halo tile --------
  // (The caller has waited for the kernels before it: x, scale, shift and residual come from them.)
  // Sizes and the tile origin are read from p again after the main loop, not held across it: the
  // chain's p is in shared memory, and registers held through the main loop would spill.
  {
    const int y0 = (tile / p.tiles_x) * C::kTH, x0 = (tile % p.tiles_x) * kTW;
    const int H = p.H, W = p.W, Ho = p.Ho, Wo = p.Wo;
    constexpr int kChunks = C::kChunks, kChunksX = C::kChunksX;
    const int q = tid % kChunks;   // fixed per thread: its 8 channels' affine stays in registers
    float sc[8], sh[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sc[e] = p.scale ? p.scale[n * CIN_X + q * 8 + e] : 1.f;
      sh[e] = p.shift ? p.shift[n * CIN_X + q * 8 + e] : 0.f;
    }
    // The input norm's affine from the producer's sums (Params::in_sums). kG adjacent threads share
    // channel tid / kG, each loading kPer of the copies; their sums meet through shuffles and the
    // group's first thread writes (scale, shift) to sm.aff. The loads are issued here and used only
    // after the first batch of halo loads is issued, so the two round trips overlap.
    constexpr int kG = kConsumers / CIN_X, kPer = kNormSumCopies / kG;
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
    auto read_affine = [&]() {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        sc[e] = sm.aff[q * 8 + e];
        sh[e] = sm.aff[CIN_X + q * 8 + e];
      }
    };
    if (from_sums && !refresh) read_affine();   // this sample's, formed on an earlier tile
    // The norm from the sums (norm_affine_from_sums). Every consumer thread calls this at the same
    // point (each runs the halo loop's first pass).
    auto affine_from_sums = [&]() {
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
    };
    const uint4* x4 = reinterpret_cast<const uint4*>(p.x);
    const uint4* r4 = reinterpret_cast<const uint4*>(p.residual);
    // a = act(v·scale + shift [+ residual]) on 8 channels, packed.
    auto activate = [&](const uint4& v, const uint4& rv, bool with_residual) -> uint4 {
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
    };
    constexpr int kRowsPerPass = kConsumers / kChunks;   // pixels per pass: 16 (Cin 128) or 32 (Cin 64)
    static_assert(kRowsPerPass <= C::kHaloPixels, "every consumer runs the halo loop's first pass");
    // All of a batch's loads are issued before the first is used. Twelve in flight per thread without
    // a residual (one round trip for the 128-channel halo), six (+ six residual) with one: more spill
    // at Cin 128 (the main loop's register budget).
    auto stage = [&](auto batch, auto with_residual, auto hint) {
      constexpr int kBatch = decltype(batch)::value;
      constexpr bool kRes = decltype(with_residual)::value;
      constexpr bool kHint = decltype(hint)::value;
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
    };
    // The chain's resident tiles (Params::resident): the border from global memory in one batch (its
    // 52 pixels over 16 pixel slots of 16 chunk threads), then the tile's own pixels from shared
    // memory (thread: column `slot` of every row, chunk q), normalised in place.
    auto stage_resident = [&]() {
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
    };
    if (kChain && p.resident && y0 + C::kTH <= Ho && x0 + kTW <= Wo) {
      if constexpr (kChain) stage_resident();
    } else {
      // (Two CTAs per SM: a batch only as large as the halo needs, in their 80 registers.)
      constexpr int kFew = (C::kHaloPixels + kRowsPerPass - 1) / kRowsPerPass;
      auto stage_x = [&](auto hint) {
        if (r4 != nullptr) {
          stage(std::integral_constant<int, 6>{}, std::true_type{}, hint);
        } else {
          stage(std::integral_constant<int, C::kMinBlocks == 2 && kFew < 12 ? kFew : 12>{}, std::false_type{}, hint);
        }
      };
      with_act_hint<kChain>(p.l2_evict_first, stage_x);
    }
  }
  consumers_sync();
  tile_mark(p, 1);
  if constexpr (kChain) {
    // The chain's first link keeps its tile's block input for the residual two links on (the later
    // ones in stage_resident). Copied from the halo here, not in `stage`: there, at 168 registers,
    // ptxas added ~50 spill reloads to the unrolled main loop.
    if (!p.resident && p.act) {
      const int q = tid % C::kChunks;
#pragma unroll 2
      for (int px = tid / C::kChunks; px < C::kTH * kTW; px += kConsumers / C::kChunks) {
        *reinterpret_cast<uint4*>(act_s + act_offset(px, q)) = *reinterpret_cast<const uint4*>(
            halo + halo_offset<C::kChunks, STRIDE>(own_halo_pixel(px), q));
      }
    }
  }

  // ---- main loop: kSteps steps of kStepK k16 steps × kMB wgmma m64n{Cout}k16 per warpgroup ----
  const int lane = tid & 31, warp = tid >> 5;
  const int row0 = (warp >> 2) * kMB * 4 + (warp & 3);   // output row of m64 block 0; block mb: + 4·mb
  // Phase split: warp (wg, w) holds low-resolution rows lrow0 and lrow0 + 1, 8 pixels each (m16 rows
  // 0–7 and 8–15), of each of its warpgroup's phases: block mb is phase phase0 + mb.
  const int lrow0 = (C::kWGSplit == 1 ? 8 * (warp >> 2) : 0) + 2 * (warp & 3);
  const int phase0 = C::kWGSplit == 1 ? 0 : kMB * (warp >> 2);
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

  float acc[kMB][COUT / 2];
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
    for (int i = 0; i < COUT / 2; ++i) acc[mb][i] = 0.f;
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
  tile_mark(p, 2);
  // The chain's producer refills the last entry's stage with the next convolution's taps.
  if (kChain && lane == 0) mbar_arrive(bar_empty + 8 * ((u0 + kTaps - 1) % kStages));

  // ---- epilogue: round, per-tile moments, stage and store -------------------------------------
  const int y0 = (tile / p.tiles_x) * C::kTH, x0 = (tile % p.tiles_x) * kTW;
  const int Ho = p.Ho, Wo = p.Wo;
  // Lane (g, t) of block mb holds pixels g and g + 8 of output row y0 + row0 + 4·mb, channels
  // 8i + 2t, 8i + 2t + 1 in acc[mb][4i .. 4i + 3]. Phase split: block mb = phase (a, b) = phase0 + mb
  // holds tile pixels (2·lrow0 + a, 2g + b) and (2·lrow0 + 2 + a, 2g + b).
  const int g = lane >> 2, t = lane & 3;
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
  bool v0[kMB], v1[kMB];
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb) {
    v0[mb] = y0 + px0[mb] / kTW < Ho && x0 + px0[mb] % kTW < Wo;
    v1[mb] = y0 + px1[mb] / kTW < Ho && x0 + px1[mb] % kTW < Wo;
  }
  const float count = static_cast<float>(min(C::kTH, Ho - y0) * min(kTW, Wo - x0));
  // A whole tile divides by count = kTH·kTW, a power of two: as a product with its exact reciprocal
  // (the same bits), without the IEEE division's slow-path call (fp32 and fp64) in the epilogue's
  // critical path; tiles cut by the edge divide.
  constexpr int kTilePixels = C::kTH * kTW;
  static_assert((kTilePixels & (kTilePixels - 1)) == 0, "a power of two");
  const bool whole = count == static_cast<float>(kTilePixels);
  // Round once, to the stored pairs (pk[mb][2i]: pixel g, channels 8i + 2t, + 1; pk[mb][2i + 1]:
  // pixel g + 8); the statistics see exactly those values.
  uint32_t pk[kMB][COUT / 4];
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
    for (int j = 0; j < COUT / 4; ++j) {
      pk[mb][j] = pack2<T>(acc[mb][2 * j], acc[mb][2 * j + 1]);
      unpack2<T>(pk[mb][j], acc[mb][2 * j], acc[mb][2 * j + 1]);
    }
  // Uniform: every consumer takes the same branch.
  const bool stats = kChain || p.partials != nullptr || p.norm_state != nullptr;
  float tile_sum = 0.f;
  // The per-warp channel sums: v[2i + j] is channel 8i + 2t + j, summed over the lane's pixels, then
  // over g; lane (g, t) writes its V/8 of them (see sum_over_g).
  constexpr int kV = 2 * C::kOutChunks;
  const int first = halving_first<kV>(g);
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
  // The halo is dead (every warp is past its last ldmatrix: the barrier above): stage the output
  // there as [pixel][Cout·2 B], chunks placed by out_slot; the chain stages it in the halo's
  // interior instead (halo layout), where its next link's prologue takes it (Params::resident).
  auto staged = [&](int px, int chunk) -> int {
    if constexpr (kChain) {
      return halo_offset<C::kChunks, STRIDE>(own_halo_pixel(px), chunk);
    } else {
      return px * C::kOutPixelBytes + (out_slot<C::kOutChunks>(chunk, px) << 4);
    }
  };
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
  // Thread tid stores chunk q of tile pixels px_first + j·kPxStep: one column, every kRowStep-th row,
  // so its conditions are per row and its address advances by kRowStep image rows (formed per store
  // with divisions and 64-bit products, one store took ~50 instructions).
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
  // The statistics after the output: the chain's atomic adds must not hold up the stores.
  if (stats && tid < COUT) {
    float m2 = 0.f;
#pragma unroll
    for (int w = 0; w < 8; ++w) m2 += red[w * COUT + tid];
    // Σx and Σx² over the image, from the tile's (sum, M2): Σx² = M2 + sum²/count exactly, and in fp64
    // Σx²/n − mean² keeps the precision that Chan's merge keeps in fp32 (norm_state_add's form, with
    // the whole tile's division as a product).
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
  tile_mark(p, 3);
  if constexpr (!kChain) tile_mark_global(p, kTileProfileGlobalEnd);
}
#endif  // STYLEFORGE_SM90A

}  // namespace
}  // namespace styleforge
