// The fused 3×3 tile's traits and parameters: Cfg (geometry, ring, shared-memory offsets and
// registers of one (Cin, Cout, ×up, stride) configuration, all compile-time) and Params (one
// launch's or one chain link's buffers and sizes). Pure CUDA, no torch; part of conv3x3_tile.cuh
// (the design is described there), not included on its own.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../norm_sums/norm_sums.cuh"
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
  static constexpr int kCin = CIN, kCinX = CIN_X, kUp = UP, kStride = STRIDE;
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
  // one per warpgroup (kWGSplit; the weight's order: reference/conv3x3.py: _ring_order). (The code also
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

}  // namespace
}  // namespace styleforge
