// The style network's 3×3 convolutions with their InstanceNorms fused in, fp16/bf16 NHWC, fp32
// accumulate, on Hopper wgmma: (Cin, Cout, ×upsample, stride) = (128, 128, 1, 1) for the residual
// blocks, (128, 64, 2, 1), (64, 32, 2, 1) for the decoder and (32, 64, 1, 2), (64, 128, 1, 2) for
// the encoder's conv2 and conv3 (applying IN1 and IN2, gathering IN2 and IN3); reflection pad 1.
// Cin 32 runs as Cin 64 with the upper 32 channels zero in the halo and the weight (K padded to
// the 64-channel blocks of the B layout; conv2 is 2.4 of the network's 81 GFLOP).
//   prologue  the previous norm's apply (a = x·scale + shift, + residual, ReLU), the ×2 nearest
//             upsample and the reflection resolved in the address math, written once to shared
//             memory (and, if asked, the tile's interior to `act`, which becomes the next residual);
//   main loop an implicit GEMM: M = the tile's output pixels, N = Cout, K = 9 taps × Cin (×2 upsample:
//             4 taps × Cin per output phase on the low-resolution input, see Cfg::kPhase);
//   epilogue  the output, rounded, plus per-tile (sum, M2) of every channel for the next norm;
// then a second small kernel turns the tiles' moments into (scale, shift) per (sample, channel).
// So an InstanceNorm between two of these convolutions costs no pass over the activation. Both
// kernels are launched with programmatic dependent launch: a convolution's blocks start, set up
// and fetch their first weights while the hand-off before them still runs.
// Pure CUDA (no torch); bindings_conv3x3.cpp binds it; semantics: reference_conv3x3.py. Over 600
// lines because the convolution, the moments kernel and the hand-off share one tile geometry and
// one statistics layout, which separate files would each have to restate.
//
// Block: 288 threads = two consumer warpgroups + one producer warp; 64 fp32 accumulators per
// thread whatever Cout: the tile is 16 columns × 8·MB rows with MB = 128 / Cout m64 blocks per
// warpgroup (Cout 128: 8 × 16, 64: 16 × 16, 32: 32 × 16). In m64 block mb of warpgroup wg, warp w
// owns output row 4·(MB·wg + mb) + w: its 16 pixels are the m16 rows of the A fragment.
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
//    formula, so large means do not cancel the variance away.
// Why one tile per block and no persistence: at 512² (the frame that needs it) the 128 × 128
// layer has 128 tiles, one wave; at 1080p this takes 2× cuDNN's time (7.7 waves of one CTA per SM,
// the weights streamed again per tile) and the engine, which times both, keeps cuDNN there. Not
// covered: other channel counts, strides, GPUs other than sm_90a (the engine keeps cuDNN there).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "packed16.cuh"
#include "smem_optin.cuh"
#include "sm90_ptx.cuh"
#include "../conv3x3.h"

namespace styleforge {
namespace {

constexpr int kTW = kConv3x3TileW;
constexpr int kConsumers = 256, kThreads = kConsumers + 32;
constexpr int kMomentsThreads = 256;

constexpr uint32_t round_up_1k(uint32_t v) { return (v + 1023u) & ~1023u; }

template <int CIN, int COUT, int UP, int STRIDE = 1, int CIN_X = CIN>
struct Cfg {
  static constexpr int kMB = 128 / COUT;                      // m64 blocks per warpgroup
  static constexpr int kTH = conv3x3_tile_h(COUT);            // 8·kMB output rows
  // Phase split (the ×2 decoder layers): a nearest ×2 upsample then a 3×3 convolution is, for each
  // output phase (a, b) = (row, column) parity, a 2×2 convolution of the low-resolution input
  // (pack_weight sums the taps that land on the same input pixel; the reflection at the upsampled
  // border becomes replication): 16 taps of K = Cin per 4 output pixels instead of 36, 2.25× fewer
  // MMAs, and the halo holds low-resolution pixels. Each m64 block is one phase: Cout 32, four
  // blocks per warpgroup = the four phases of 16 × 8 low-resolution pixels (the warpgroups split the
  // rows); Cout 64, two per warpgroup = phases 2·wg, 2·wg + 1 of the same 8 × 8 pixels, so a ring
  // entry holds two taps, one per warpgroup (kWGSplit).
  static constexpr bool kPhase = conv3x3_phase_split(CIN, COUT, UP);
  static constexpr int kWGSplit = kPhase ? 4 / kMB : 1;       // distinct B matrices per ring entry
  static constexpr int kTaps = kPhase ? 16 / kWGSplit : 9;    // ring entries
  // Halo rows and columns: output tile + 2; phase split: the low-resolution tile + 2; stride 2:
  // 2·tile + 1 input rows/columns.
  static constexpr int kHaloH = kPhase ? kTH / 2 + 2 : (STRIDE == 2 ? 2 * kTH + 1 : kTH + 2);
  static constexpr int kHaloW = kPhase ? kTW / 2 + 2 : (STRIDE == 2 ? 2 * kTW + 1 : kTW + 2);
  static constexpr int kHaloPixels = kHaloH * kHaloW;
  static constexpr int kPixelBytes = CIN * 2;
  static constexpr int kChunks = CIN / 8;                     // 16-byte chunks per halo pixel
  static constexpr int kChunksX = CIN_X / 8;                  // ... per pixel of x (CIN_X ≤ CIN: the rest are 0)
  static constexpr int kKSteps = CIN / 16;                    // k16 steps per tap
  // Pipeline steps per tap: each step's A fragments are kStepK k16 steps × kBlocksPerStep blocks = 4
  // ldmatrix.x4 (16 registers; two buffers), so the 64 accumulators and both buffers fit the 168
  // registers a thread gets (the block is 2.25 warpgroups; registers are allotted per warpgroup).
  // A phase-split tap feeds one block (its phase).
  static constexpr int kBlocksPerStep = kPhase ? 1 : kMB;
  // (Phase split at Cin 128: steps of 2 k16 steps, 8 A registers, because 16 spill there.)
  static constexpr int kStepsPerTap = kPhase && CIN == 128 ? kKSteps / 2 : kKSteps * kBlocksPerStep / 4;
  static constexpr int kStepK = kKSteps / kStepsPerTap;
  static constexpr uint32_t kOutBytes = kTH * kTW * COUT * 2;
  static constexpr uint32_t kHaloBytes = round_up_1k(kHaloPixels * kPixelBytes > static_cast<int>(kOutBytes)
                                                         ? kHaloPixels * kPixelBytes : kOutBytes);
  static constexpr uint32_t kTapBytes = CIN * COUT * 2;
  static constexpr uint32_t kEntryBytes = kTapBytes * kWGSplit;
  static constexpr uint32_t kKbBytes = COUT * 128;            // one [Cout][64 k] block of a tap
  static constexpr int kStages = kEntryBytes >= 16384 ? 4 : 9;
  static constexpr uint32_t kBarOff = kStages * kEntryBytes + kHaloBytes;
  static constexpr uint32_t kRedOff = kBarOff + 2 * kStages * 8;   // fp32 [8 warps][Cout] + mean[Cout]
  static constexpr size_t kSmem = kRedOff + (8 + 1) * COUT * 4 + 1024;   // + slack to 1024-align
  static constexpr int kOutChunks = COUT / 8;
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
  float2* partials;   // [N][tiles][Cout] (sum, M2), or null: no statistics
  int H, W, Ho, Wo, tiles_x, tiles;
  bool relu;
};

// The XOR that places 16-byte chunk q of halo pixel P (chunk q ^ halo_swizzle(P)): a warp's
// ldmatrix reads 8 pixels of one chunk, consecutive (stride 1: P's low 3 bits) or every other one
// (stride 2: bits 1–3, so that even and odd runs both hit 8 distinct bank groups).
template <int STRIDE>
__device__ __forceinline__ int halo_swizzle(int P) {
  return STRIDE == 2 ? (P >> 1) & 7 : P & 7;
}

#if SF_SM90A   // helpers of the sm_90a kernel only
__device__ __forceinline__ int reflect_clamp(int i, int n) {
  i = i < 0 ? -i : (i >= n ? 2 * n - 2 - i : i);
  return min(max(i, 0), n - 1);   // only tiles past the edge reach further; their outputs are dropped
}
#endif

// Programmatic dependent launch (sm_90+; no-ops elsewhere). A kernel launched with programmatic
// stream serialization may start while the previous kernel in the stream still runs: it must
// wait (grid_dependency_wait) before it reads what that kernel writes, and it lets its own
// successor start early with allow_dependents_launch. Work before the wait may only touch inputs
// no earlier kernel writes (here: the packed weights) and shared memory.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_dependents_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Count of image pixels in tile `tile` (row-major over tiles_x, th × 16): edge tiles are clipped.
__device__ __forceinline__ float tile_pixels(int tile, int tiles_x, int th, int H, int W) {
  const int ty = tile / tiles_x, tx = tile - ty * tiles_x;
  return static_cast<float>(min(th, H - ty * th) * min(kTW, W - tx * kTW));
}

#if SF_SM90A
// One halving step of sum_over_g: the lanes `kMask` apart swap halves of v[0 .. 2·kWidth); the lane
// with that bit set keeps (and sums) the upper half, its partner the lower, into v[0 .. kWidth).
// The selects are bit masks: a `c ? v[i] : v[j]` becomes an indexed load from a local-memory copy.
template <int V, int kWidth, int kMask>
__device__ __forceinline__ void halve(float (&v)[V], int lane) {
  const uint32_t keep_hi = (lane & kMask) != 0 ? 0xffffffffu : 0u;
#pragma unroll
  for (int k = 0; k < kWidth; ++k) {
    const uint32_t lo = __float_as_uint(v[k]), hi = __float_as_uint(v[k + kWidth]);
    const float send = __uint_as_float((lo & keep_hi) | (hi & ~keep_hi));
    const float keep = __uint_as_float((hi & keep_hi) | (lo & ~keep_hi));
    v[k] = keep + __shfl_xor_sync(0xffffffffu, send, kMask);
  }
}
// Sums each of v[0 .. V) over the 8 lanes that share lane % 4 (the g index of an mma fragment) by
// recursive halving: V/2 + V/4 + V/8 shuffles instead of 3·V. Afterwards lane (g, t) holds in
// v[0 .. V/8) the sums of v[first .. first + V/8), first = halving_first<V>(g).
template <int V>
__device__ __forceinline__ void sum_over_g(float (&v)[V], int lane) {
  static_assert(V % 8 == 0, "three halvings");
  halve<V, V / 2, 16>(v, lane);
  halve<V, V / 4, 8>(v, lane);
  halve<V, V / 8, 4>(v, lane);
}
template <int V>
__device__ __forceinline__ int halving_first(int g) {
  return (V / 2) * ((g >> 2) & 1) + (V / 4) * ((g >> 1) & 1) + (V / 8) * (g & 1);
}

__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }

// Slot of 16-byte chunk i of staged output pixel px: conflict-free for the epilogue's 4-byte writes
// (8 pixels × 4 lanes) with 8+ chunks per pixel (XOR the pixel's low bits), and with 4 (Cout 32:
// 64-byte pixels, two per 128 bytes, so XOR bits 1–2).
template <int kOutChunks>
__device__ __forceinline__ int out_slot(int i, int px) {
  return kOutChunks >= 8 ? (i ^ (px & 7)) : (i ^ ((px >> 1) & 3));
}
#endif

template <typename T, int CIN, int COUT, int UP, int STRIDE = 1, int CIN_X = CIN>
__global__ void __launch_bounds__(kThreads, 1) conv3x3_kernel(const Params p) {
#if SF_SM90A
  using namespace sm90;
  using C = Cfg<CIN, COUT, UP, STRIDE, CIN_X>;
  constexpr int kMB = C::kMB, kStepK = C::kStepK, kSPT = C::kStepsPerTap, kStages = C::kStages;
  constexpr int kTaps = C::kTaps, kSteps = kTaps * kSPT, kBPS = C::kBlocksPerStep;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* smem = smem_raw + (base - raw);
  const uint32_t w_s = base;                             // [stage][Cin/64][Cout][128 B]
  const uint32_t halo_s = base + kStages * C::kEntryBytes;  // [pixel][Cin·2 B], chunks swizzled
  unsigned char* halo = smem + kStages * C::kEntryBytes;
  const uint32_t bar_full = base + C::kBarOff, bar_empty = bar_full + 8 * kStages;
  float* red = reinterpret_cast<float*>(smem + C::kRedOff);   // [8 warps][Cout]
  float* mean_s = red + 8 * COUT;

  const int tid = threadIdx.x;
  const int n = blockIdx.x / p.tiles, tile = blockIdx.x - n * p.tiles;
  const int y0 = (tile / p.tiles_x) * C::kTH, x0 = (tile % p.tiles_x) * kTW;
  const int H = p.H, W = p.W, Ho = p.Ho, Wo = p.Wo;

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(bar_full + 8 * s, 1);
      mbar_init(bar_empty + 8 * s, 8);   // one arrival per consumer warp
    }
    mbar_init_fence();
  }
  __syncthreads();
  allow_dependents_launch();   // the hand-off kernel may be scheduled; it waits for this grid to end

  if (tid >= kConsumers) {   // producer warp: the taps of B (constant weights: no dependency wait)
    if (tid == kConsumers) {
      for (int tap = 0; tap < kTaps; ++tap) {
        const int st = tap % kStages;
        if (tap >= kStages) mbar_wait(bar_empty + 8 * st, ((tap / kStages) - 1) & 1);
        mbar_expect_tx(bar_full + 8 * st, C::kEntryBytes);
        bulk_copy_g2s(w_s + st * C::kEntryBytes, p.weight + static_cast<size_t>(tap) * C::kEntryBytes, C::kEntryBytes,
                      bar_full + 8 * st);
      }
    }
    return;
  }

  // ---- prologue: a = act(x·scale + shift + residual) on the reflected (upsampled) halo tile --------
  grid_dependency_wait();   // x, scale, shift and residual come from the kernels before this one
  {
    constexpr int kChunks = C::kChunks, kChunksX = C::kChunksX;
    const int q = tid % kChunks;   // fixed per thread: its 8 channels' affine stays in registers
    const bool real = q < kChunksX;   // else a zero chunk of the padded K
    float sc[8], sh[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sc[e] = p.scale && real ? p.scale[n * CIN_X + q * 8 + e] : 1.f;
      sh[e] = p.shift && real ? p.shift[n * CIN_X + q * 8 + e] : 0.f;
    }
    const uint4* x4 = reinterpret_cast<const uint4*>(p.x);
    const uint4* r4 = reinterpret_cast<const uint4*>(p.residual);
    constexpr int kRowsPerPass = kConsumers / kChunks;   // pixels per pass: 16 (Cin 128) or 32 (Cin 64)
    // All of a batch's loads are issued before the first is used. Twelve in flight per thread without
    // a residual (one round trip for the 128-channel halo), six (+ six residual) with one: more spill
    // at Cin 128 (the main loop's register budget).
    auto stage = [&](auto batch, auto with_residual) {
      constexpr int kBatch = decltype(batch)::value;
      constexpr bool kRes = decltype(with_residual)::value;
#pragma unroll 1
      for (int first = tid / kChunks; first < C::kHaloPixels; first += kBatch * kRowsPerPass) {
        uint4 v[kBatch], rv[kRes ? kBatch : 1];
        int64_t off[kBatch];
        bool interior[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int P = first + j * kRowsPerPass;
          const int r = P / C::kHaloW, c = P - r * C::kHaloW;
          // Reflect in the (upsampled) output frame, then the nearest source pixel; phase split: the
          // low-resolution halo, whose reflection is replication.
          // Stride 2: input rows 2·y0 − 1 + r, reflected in the input frame.
          const int gy = C::kPhase ? min(max(y0 / 2 - 1 + r, 0), H - 1)
                                   : (STRIDE == 2 ? reflect_clamp(2 * y0 - 1 + r, H) : reflect_clamp(y0 - 1 + r, Ho) / UP);
          const int gx = C::kPhase ? min(max(x0 / 2 - 1 + c, 0), W - 1)
                                   : (STRIDE == 2 ? reflect_clamp(2 * x0 - 1 + c, W) : reflect_clamp(x0 - 1 + c, Wo) / UP);
          off[j] = ((static_cast<int64_t>(n) * H + gy) * W + gx) * kChunksX + q;
          interior[j] = UP == 1 && STRIDE == 1 && r >= 1 && r <= C::kTH && c >= 1 && c <= kTW && y0 + r - 1 < H &&
                        x0 + c - 1 < W;
          v[j] = make_uint4(0, 0, 0, 0);
          if constexpr (kRes) rv[j] = make_uint4(0, 0, 0, 0);
          if (P < C::kHaloPixels && real) {
            v[j] = __ldg(x4 + off[j]);
            if constexpr (kRes) rv[j] = __ldg(r4 + off[j]);
          }
        }
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int P = first + j * kRowsPerPass;
          if (P >= C::kHaloPixels) break;
          float f[8];
          unpack8<T>(v[j], f);
#pragma unroll
          for (int e = 0; e < 8; ++e) f[e] = fmaf(f[e], sc[e], sh[e]);
          if constexpr (kRes) {
            float g[8];
            unpack8<T>(rv[j], g);
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] += g[e];
          }
          if (p.relu) {
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] = fmaxf(f[e], 0.f);
          }
          const uint4 a = make_uint4(pack2<T>(f[0], f[1]), pack2<T>(f[2], f[3]), pack2<T>(f[4], f[5]),
                                     pack2<T>(f[6], f[7]));
          *reinterpret_cast<uint4*>(halo + P * C::kPixelBytes + ((q ^ halo_swizzle<STRIDE>(P)) << 4)) = a;
          if (p.act && interior[j]) reinterpret_cast<uint4*>(p.act)[off[j]] = a;
        }
      }
    };
    if (r4 != nullptr) {
      stage(std::integral_constant<int, 6>{}, std::true_type{});
    } else {
      stage(std::integral_constant<int, 12>{}, std::false_type{});
    }
  }
  consumers_sync();

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
      const uint32_t row = halo_s + P * C::kPixelBytes;
#pragma unroll
      for (int kk = 0; kk < kStepK; ++kk) {
        const int chunk = 2 * ((step % kSPT) * kStepK + kk) + lhalf;
        ldmatrix_x4(a[kk][mb], row + ((chunk ^ halo_swizzle<STRIDE>(P)) << 4));
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
    const int tap = s / kSPT, st = tap % kStages;
    uint32_t(&a)[kStepK][kBPS][4] = (s & 1) ? a1 : a0;
    uint32_t(&next)[kStepK][kBPS][4] = (s & 1) ? a0 : a1;
    if (s % kSPT == 0) mbar_wait(bar_full + 8 * st, (tap / kStages) & 1);
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
      if (s % kSPT == 0 && lane == 0) mbar_arrive(bar_empty + 8 * ((tap - 1) % kStages));
    }
    if (s + 1 < kSteps) load_a(next, s + 1);
  }
  wg_wait<0>();
  reg_fence(acc);
  reg_fence((kSteps - 1) & 1 ? a1 : a0);

  // ---- epilogue: round, per-tile moments, stage and store -------------------------------------
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
  const bool stats = p.partials != nullptr;   // uniform: every consumer takes the same branch
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
  if (tid < COUT) {
#pragma unroll
    for (int w = 0; w < 8; ++w) tile_sum += red[w * COUT + tid];
    mean_s[tid] = tile_sum / count;
  }
  consumers_sync();
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
  // there as [pixel][Cout·2 B], chunks placed by out_slot.
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
    for (int i = 0; i < C::kOutChunks; ++i) {
      *reinterpret_cast<uint32_t*>(halo + px0[mb] * C::kOutPixelBytes + (out_slot<C::kOutChunks>(i, px0[mb]) << 4) +
                                   4 * t) = pk[mb][2 * i];
      *reinterpret_cast<uint32_t*>(halo + px1[mb] * C::kOutPixelBytes + (out_slot<C::kOutChunks>(i, px1[mb]) << 4) +
                                   4 * t) = pk[mb][2 * i + 1];
    }
  }
  consumers_sync();
  if (stats && tid < COUT) {
    float m2 = 0.f;
#pragma unroll
    for (int w = 0; w < 8; ++w) m2 += red[w * COUT + tid];
    p.partials[(static_cast<int64_t>(n) * p.tiles + tile) * COUT + tid] = make_float2(tile_sum, m2);
  }
  uint4* out4 = reinterpret_cast<uint4*>(p.out);
#pragma unroll
  for (int j = 0; j < C::kTH * kTW * C::kOutChunks / kConsumers; ++j) {
    const int idx = tid + j * kConsumers, px = idx / C::kOutChunks, q = idx % C::kOutChunks;
    const int y = y0 + px / kTW, xx = x0 + px % kTW;
    if (y < Ho && xx < Wo) {
      out4[((static_cast<int64_t>(n) * Ho + y) * Wo + xx) * C::kOutChunks + q] = *reinterpret_cast<const uint4*>(
          halo + px * C::kOutPixelBytes + (out_slot<C::kOutChunks>(q, px) << 4));
    }
  }
#else
  __trap();   // built without sm_90a code: conv3x3_supported() keeps launches away
#endif
}

// Per-tile (sum, M2) of every channel of an NHWC C-channel tensor, C = 32, 64 or 128: the same
// tiles and layout as the Cout = C convolution's epilogue, which launch_handoff reads. Thread: one
// 16-byte chunk (8 channels) of 8 pixels, all loads in flight. The tile (16 × 8·128/C pixels) and
// the pixel lanes (256 / (C/8)) both grow with 128/C, so every C has 8 pixels per thread and an
// 8 KB red.
template <int C>
constexpr int kMomentsTH = conv3x3_tile_h(C);   // host constexpr: evaluated here, not in the kernel
template <typename T, int C>
__global__ void __launch_bounds__(kMomentsThreads) moments_kernel(const uint16_t* x, float2* partials, int H, int W,
                                                                    int tiles_x, int tiles) {
  constexpr int kMChunks = C / 8, kMLanes = kMomentsThreads / kMChunks, kMTH = kMomentsTH<C>;
  constexpr int kPer = kMTH * kTW / kMLanes;   // 8 pixels each
  static_assert((kMChunks & (kMChunks - 1)) == 0 && kPer * kMLanes == kMTH * kTW, "moments: C = 32, 64 or 128");
  __shared__ float red[kMLanes][C];   // [pixel lane][channel]
  __shared__ float mean_s[C];
  const int n = blockIdx.x / tiles, tile = blockIdx.x - n * tiles;
  const int y0 = (tile / tiles_x) * kMTH, x0 = (tile % tiles_x) * kTW;
  const int q = threadIdx.x & (kMChunks - 1), lane_px = threadIdx.x / kMChunks;
  float v[kPer][8];
  bool valid[kPer];
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int px = lane_px + j * kMLanes;
    const int y = y0 + px / kTW, xx = x0 + px % kTW;
    valid[j] = y < H && xx < W;
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (valid[j]) raw = __ldg(x4 + ((static_cast<int64_t>(n) * H + y) * W + xx) * kMChunks + q);
    unpack8<T>(raw, v[j]);
  }
  const float count = static_cast<float>(min(kMTH, H - y0) * min(kTW, W - x0));
  float s[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int j = 0; j < kPer; ++j)
#pragma unroll
    for (int e = 0; e < 8; ++e) s[e] += v[j][e];   // invalid pixels are zeros
#pragma unroll
  for (int e = 0; e < 8; ++e) red[lane_px][q * 8 + e] = s[e];
  __syncthreads();
  float tile_sum = 0.f;
  if (threadIdx.x < C) {
    // Unroll 4, not the compiler's choice: with v still live, unrolling C = 32's 64 lanes by 8 or
    // more spills on sm_80 (its ptxas holds this kernel to 80 registers).
#pragma unroll 4
    for (int l = 0; l < kMLanes; ++l) tile_sum += red[l][threadIdx.x];
    mean_s[threadIdx.x] = tile_sum / count;
  }
  __syncthreads();
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float m = mean_s[q * 8 + e];
    float acc = 0.f;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const float d = valid[j] ? v[j][e] - m : 0.f;
      acc = fmaf(d, d, acc);
    }
    s[e] = acc;
  }
  __syncthreads();   // every thread has read mean_s and finished reading red
#pragma unroll
  for (int e = 0; e < 8; ++e) red[lane_px][q * 8 + e] = s[e];
  __syncthreads();
  if (threadIdx.x < C) {
    float m2 = 0.f;
    for (int l = 0; l < kMLanes; ++l) m2 += red[l][threadIdx.x];
    partials[(static_cast<int64_t>(n) * tiles + tile) * C + threadIdx.x] = make_float2(tile_sum, m2);
  }
}

// Chan et al.'s merge of (count, mean, M2) summaries.
__device__ __forceinline__ void merge(float& na, float& ma, float& m2a, float nb, float mb, float m2b) {
  const float n = na + nb;
  if (n == 0.f) return;
  const float d = mb - ma, f = nb / n;
  ma = fmaf(d, f, ma);
  m2a += m2b + d * d * na * f;
  na = n;
}

// One warp per (sample, channel): each lane loads up to 8 tiles at once (one L2 round trip per 256
// tiles, not one per tile), merges them, then the warp merges its lanes.
struct HandoffGeometry {
  int N, C, H, W, th, tiles_x, tiles;
};
__global__ void __launch_bounds__(256) handoff_kernel(const float2* partials, HandoffGeometry geo, NormHandoff h) {
  constexpr int kLoads = 8;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  grid_dependency_wait();      // the partials come from the kernel before this one
  allow_dependents_launch();   // the next convolution may start loading its weights
  if (warp >= geo.N * geo.C) return;
  const int n = warp / geo.C, c = warp - n * geo.C;
  const float2* part = partials + static_cast<int64_t>(n) * geo.tiles * geo.C + c;
  float cnt = 0.f, mean = 0.f, m2 = 0.f;
  for (int t0 = lane; t0 < geo.tiles; t0 += 32 * kLoads) {
    float2 s[kLoads];
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int t = t0 + 32 * j;
      s[j] = t < geo.tiles ? part[static_cast<int64_t>(t) * geo.C] : make_float2(0.f, 0.f);
    }
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int t = t0 + 32 * j;
      if (t < geo.tiles) {
        const float tc = tile_pixels(t, geo.tiles_x, geo.th, geo.H, geo.W);
        merge(cnt, mean, m2, tc, s[j].x / tc, s[j].y);
      }
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float cb = __shfl_xor_sync(0xffffffffu, cnt, o), mb = __shfl_xor_sync(0xffffffffu, mean, o),
                m2b = __shfl_xor_sync(0xffffffffu, m2, o);
    merge(cnt, mean, m2, cb, mb, m2b);
  }
  if (lane == 0) {
    const float var = fmaxf(m2 / cnt, 0.f);
    const float s = (h.weight ? h.weight[c] : 1.f) * rsqrtf(var + h.eps);
    h.scale[n * geo.C + c] = s;
    h.shift[n * geo.C + c] = (h.bias ? h.bias[c] : 0.f) - mean * s;
  }
}

// Launch with programmatic stream serialization (see grid_dependency_wait) where `pdl` is set:
// on Hopper, for the conv3x3 chain.
template <typename Kernel, typename... Args>
cudaError_t launch_pdl(bool pdl, Kernel kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

cudaError_t launch_handoff(const float2* partials, int64_t N, int64_t Ho, int64_t Wo, int cout, const NormHandoff& h,
                           bool pdl, cudaStream_t stream) {
  HandoffGeometry geo;
  geo.N = static_cast<int>(N);
  geo.C = cout;
  geo.H = static_cast<int>(Ho);
  geo.W = static_cast<int>(Wo);
  geo.th = conv3x3_tile_h(cout);
  geo.tiles_x = static_cast<int>((Wo + kTW - 1) / kTW);
  geo.tiles = static_cast<int>(conv3x3_tiles(Ho, Wo, cout));
  const int64_t threads = N * cout * 32;
  const cudaError_t err =
      launch_pdl(pdl, handoff_kernel, dim3(static_cast<unsigned>((threads + 255) / 256)), dim3(256), 0, stream,
                 partials, geo, h);
  return err != cudaSuccess ? err : cudaPeekAtLastError();
}

// Whether this build has sm_90a code for the device (compute capability 9.0 and a binary for it,
// not a JIT of older PTX). Cached per device.
bool device_runs_sm90a() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> state[kMaxDevices];   // 0 unknown, 1 yes, −1 no
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return false;
  int s = state[dev].load(std::memory_order_relaxed);
  if (s == 0) {
    int major = 0, minor = 0;
    cudaFuncAttributes attr{};
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
                    major == 9 && minor == 0 &&
                    cudaFuncGetAttributes(&attr, conv3x3_kernel<__nv_bfloat16, 128, 128, 1>) == cudaSuccess &&
                    attr.binaryVersion == 90;
    s = ok ? 1 : -1;
    state[dev].store(s, std::memory_order_relaxed);
  }
  return s > 0;
}

// min_out: the smallest output side the reflection allows (2: the pad is in the output frame; 1 for
// stride 2, whose pad is in the input frame, checked by the caller).
bool valid_sizes(int64_t N, int64_t Ho, int64_t Wo, int cout, int64_t min_out = 2) {
  return N >= 0 && Ho >= min_out && Wo >= min_out && Ho < (1 << 20) && Wo < (1 << 20) &&
         N * conv3x3_tiles(Ho, Wo, cout) < 0x7fffffff;
}

template <typename T, int CIN, int COUT, int UP, int STRIDE = 1, int CIN_X = CIN>
cudaError_t launch_conv(const Conv3x3Args& a, float2* partials, cudaStream_t stream, int id) {
  using C = Cfg<CIN, COUT, UP, STRIDE, CIN_X>;
  Params p;
  p.x = static_cast<const uint16_t*>(a.x);
  p.residual = static_cast<const uint16_t*>(a.residual);
  p.act = static_cast<uint16_t*>(a.act);
  p.out = static_cast<uint16_t*>(a.out);
  p.weight = static_cast<const unsigned char*>(a.weight);
  p.scale = a.scale;
  p.shift = a.shift;
  p.partials = partials;
  p.H = static_cast<int>(a.H);
  p.W = static_cast<int>(a.W);
  p.Ho = static_cast<int>(conv3x3_out_size(a.H, UP, STRIDE));
  p.Wo = static_cast<int>(conv3x3_out_size(a.W, UP, STRIDE));
  p.tiles_x = (p.Wo + kTW - 1) / kTW;
  p.tiles = static_cast<int>(conv3x3_tiles(p.Ho, p.Wo, COUT));
  p.relu = a.relu;
  cudaError_t err = allow_smem(conv3x3_kernel<T, CIN, COUT, UP, STRIDE, CIN_X>, C::kSmem, id);
  if (err != cudaSuccess) return err;
  err = launch_pdl(true, conv3x3_kernel<T, CIN, COUT, UP, STRIDE, CIN_X>, dim3(static_cast<unsigned>(a.N * p.tiles)), dim3(kThreads),
                   C::kSmem, stream, p);
  return err != cudaSuccess ? err : cudaPeekAtLastError();
}

template <typename T>
cudaError_t dispatch(const Conv3x3Args& a, float2* partials, cudaStream_t stream, int id0) {
  if (a.stride == 2 && a.cin == 32) return launch_conv<T, 64, 64, 1, 2, 32>(a, partials, stream, id0 + 4);
  if (a.stride == 2) return launch_conv<T, 64, 128, 1, 2>(a, partials, stream, id0 + 3);
  if (a.cin == 128 && a.cout == 128) return launch_conv<T, 128, 128, 1>(a, partials, stream, id0);
  if (a.cin == 128) return launch_conv<T, 128, 64, 2>(a, partials, stream, id0 + 1);
  return launch_conv<T, 64, 32, 2>(a, partials, stream, id0 + 2);
}

}  // namespace

bool conv3x3_config_supported(int cin, int cout, int upsample, int stride) {
  if (stride == 2) return upsample == 1 && ((cin == 64 && cout == 128) || (cin == 32 && cout == 64));
  return stride == 1 && ((cin == 128 && cout == 128 && upsample == 1) || (cin == 128 && cout == 64 && upsample == 2) ||
                         (cin == 64 && cout == 32 && upsample == 2));
}

int64_t conv3x3_tiles(int64_t Ho, int64_t Wo, int cout) {
  const int th = conv3x3_tile_h(cout);
  return ((Ho + th - 1) / th) * ((Wo + kTW - 1) / kTW);
}

size_t conv3x3_workspace_bytes(int64_t N, int64_t Ho, int64_t Wo, int cout) {
  return static_cast<size_t>(N * conv3x3_tiles(Ho, Wo, cout)) * cout * sizeof(float2);
}

bool conv3x3_supported() { return device_runs_sm90a(); }

cudaError_t conv3x3_launch(const Conv3x3Args& a, void* workspace, cudaStream_t stream) {
  const int64_t ho = conv3x3_out_size(a.H, a.upsample, a.stride), wo = conv3x3_out_size(a.W, a.upsample, a.stride);
  const bool sizes_ok = a.stride == 2 ? a.H >= 2 && a.W >= 2 && valid_sizes(a.N, ho, wo, a.cout, 1)
                                      : valid_sizes(a.N, ho, wo, a.cout);
  if (!conv3x3_config_supported(a.cin, a.cout, a.upsample, a.stride) || !sizes_ok ||
      (a.scale == nullptr) != (a.shift == nullptr) || (a.act != nullptr && a.upsample != 1) || !conv3x3_supported()) {
    return cudaErrorInvalidValue;
  }
  if (a.N == 0) return cudaSuccess;
  // No hand-off asked for (norm.scale null): no statistics at all.
  float2* partials = a.norm.scale != nullptr ? static_cast<float2*>(workspace) : nullptr;
  const cudaError_t err = a.dtype == ConvDtype::kBFloat16 ? dispatch<__nv_bfloat16>(a, partials, stream, 0)
                                                          : dispatch<__half>(a, partials, stream, 5);
  if (err != cudaSuccess || partials == nullptr) return err;
  return launch_handoff(partials, a.N, ho, wo, a.cout, a.norm, true, stream);
}

cudaError_t moments_launch(const MomentsArgs& a, void* workspace, cudaStream_t stream) {
  const int c = a.channels;
  if (!moments_channels_supported(c) || !valid_sizes(a.N, a.H, a.W, c)) return cudaErrorInvalidValue;
  if (a.N == 0) return cudaSuccess;
  float2* partials = static_cast<float2*>(workspace);
  const int tiles_x = static_cast<int>((a.W + kTW - 1) / kTW), tiles = static_cast<int>(conv3x3_tiles(a.H, a.W, c));
  const unsigned blocks = static_cast<unsigned>(a.N * tiles);
  const uint16_t* x = static_cast<const uint16_t*>(a.x);
  const int H = static_cast<int>(a.H), W = static_cast<int>(a.W);
  // One instantiation per (dtype, C): the tile height and the lane split are compile-time.
  using Kernel = void (*)(const uint16_t*, float2*, int, int, int, int);
  const bool bf16 = a.dtype == ConvDtype::kBFloat16;
  const Kernel kernel = c == 128 ? (bf16 ? moments_kernel<__nv_bfloat16, 128> : moments_kernel<__half, 128>)
                        : c == 64 ? (bf16 ? moments_kernel<__nv_bfloat16, 64> : moments_kernel<__half, 64>)
                                  : (bf16 ? moments_kernel<__nv_bfloat16, 32> : moments_kernel<__half, 32>);
  kernel<<<blocks, kMomentsThreads, 0, stream>>>(x, partials, H, W, tiles_x, tiles);
  const cudaError_t err = cudaPeekAtLastError();
  if (err != cudaSuccess) return err;
  return launch_handoff(partials, a.N, a.H, a.W, c, a.norm, device_runs_sm90a(), stream);
}

}  // namespace styleforge
