// The style network's head, 9×9 32 → 3 on IN5's input (IN5 applied on load), as an implicit GEMM
// on Hopper's warpgroup MMA (wgmma m64n40k16, A and B from shared memory), fp16/bf16 in, fp32
// accumulate, NHWC out in T or fp32. The semantics are conv9x9.cu's head_kernel (the reflection pad
// in the addressing; x' = round(relu(x·scale + shift)) with the norm from scale / shift or from its
// producer's sums; + bias); that kernel stays the path on other GPUs and on request
// (STYLEFORGE_HEAD_KERNEL=mma).
//
// Why a second kernel: head_kernel issues mma.sync m16n8k16 (half of wgmma's rate on Hopper) with
// N = 8 columns of which 6 are used, and stages a 24 × 40 tile per 16 × 32 outputs at two CTAs per
// SM, so its loads, its MMAs and its stores take turns. Here:
//  * M = 64 consecutive output pixels of one row (warp w: pixels 16w .. 16w + 15), K per input row
//    = (kx, c) = 9 × 32 (18 k16 steps: step s is kx = s / 2, channels 16·(s % 2) ..), and N = 40
//    columns holding every kernel row: column 8j + 2t + e is (ky = 2j + e, co = t), zero for t = 3
//    and for ky = 9. So input row R's product feeds output rows R − ky for all nine ky at once, and
//    in the accumulator layout (lane (g, t) holds columns 8j + 2t + e) a lane holds channel t of
//    its two pixels for every ky: output row r = Σ_ky (row r + ky's product)[ky] is a sum of the
//    lane's own registers, kept in a window of nine rows. No shuffles, no shared-memory reduction;
//    13 of 40 columns are zero (3 channels need 27; N = 32 would put kernel rows in other lanes).
//  * A comes from shared memory too (a descriptor per k16 step, no swizzle): the staged row is 4
//    planes of 16-byte pixel chunks, so the 64 pixels kx .. kx + 63 of a plane are K-major core
//    matrices at any kx. A row's 18 wgmmas issue at once. (With A from registers, ldmatrix groups of
//    3 steps between waits, the kernel took 32.7 µs at 512² against the mma.sync head's 27.6.)
//  * The input streams through a ring of kRing rows: each thread copies its chunks of row R + kRing
//    with cp.async once row R is done, and normalises its own chunks of row R + 1 in place (IN5's
//    affine and ReLU, rounded to T as the norm op writes them) while row R's wgmmas run. One CTA
//    barrier per input row.
//  * B ([40 n][64 k] blocks in 128-byte rows with the 128-byte swizzle, the 3×3 kernels' layout) is
//    built once per CTA from a cp.async copy of the raw weight that lands while the first rows do.
//  * Tiles of 64 × 16 outputs (24 input rows), a persistent grid of every CTA that fits (3 per SM).
// Pure CUDA (no torch) so CI compile-checks it; SF_SM90A = 0 (other targets) leaves the kernel body
// empty and conv9x9_head_sm90_supported false. Written from the PTX ISA's wgmma and cp.async
// sections.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "conv9x9_common.cuh"
#include "norm_state.cuh"
#include "pdl.cuh"
#include "sm90_ptx.cuh"
#include "smem_optin.cuh"
#include "../conv9x9_sm90.h"

namespace styleforge {
namespace {

constexpr int kThreads = 128;                 // one warpgroup
constexpr int kTW = 64;                       // output tile columns: the wgmma's M
constexpr int kTH = 16;                       // output tile rows
constexpr int kInRows = kTH + 8;              // input rows a tile reads
constexpr int kCols = kTW + 8;                // staged input columns
constexpr int kKSteps = 18;                   // k16 steps per input row: (kx, channel half)
constexpr int kRing = 6;                      // staged rows: r (read by the wgmmas), r + 1, r + 2 .. r + 5 landing
constexpr int kRowChunks = kCols * 4;         // 16-byte chunks per staged row
// A staged row: 4 planes (chunk q = channels 8q .. 8q + 7) of kCols 16-byte pixels, planes 74
// pixels apart: 74 ≡ 2 (mod 8) 16-byte units, so the 8 chunks of 2 pixels × 4 planes that 8
// consecutive threads copy and normalise fall in 8 distinct bank groups.
constexpr uint32_t kPlaneBytes = (kCols + 2) * 16;
constexpr uint32_t kRowBytes = 4 * kPlaneBytes;
constexpr uint32_t kBBlockBytes = 40 * 128;   // [40 n][64 k]: two kx of the 32 channels
constexpr uint32_t kBBytes = 5 * kBBlockBytes;
constexpr uint32_t kRingOff = kBBytes;
constexpr uint32_t kRawWOff = kRingOff + kRing * kRowBytes;   // the raw (3, 32, 9, 9) weight, once
constexpr uint32_t kAffOff = kRawWOff + kWeightChunks * 16;    // the prologue norm: scale [32], shift [32]
constexpr uint32_t kFlagOff = kAffOff + 64 * 4;
constexpr uint32_t kSmemUsed = kFlagOff + 16;
constexpr size_t kSmem = kSmemUsed + 1024;                     // + slack to 1024-align B
static_assert(kBBlockBytes % 1024 == 0, "B blocks start on swizzle-atom boundaries");
static_assert(kRowChunks > 2 * kThreads && kRowChunks <= 3 * kThreads, "three staged chunks a thread at most");
static_assert((kPlaneBytes / 16) % 8 == 2, "the planes' bank offset");

#if SF_SM90A
using namespace sm90;

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

template <typename T, typename Out>
__global__ void __launch_bounds__(kThreads, 3) head_sm90_kernel(const Params p) {
#if SF_SM90A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char* b_s = smem;
  unsigned char* ring = smem + kRingOff;
  float* aff_s = reinterpret_cast<float*>(smem + kAffOff);
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  constexpr bool kBF16 = std::is_same_v<T, __nv_bfloat16>;

  // The raw weight by cp.async (its own group, the oldest) and B zeroed (the zero columns and the
  // k ≥ 288 half of the last block stay zero); none of it reads what the kernel before writes.
  const uint32_t w_raw_u32 = smem_u32(smem + kRawWOff);
  for (int i = tid; i < kWeightChunks; i += kThreads) {
    cp_async16(w_raw_u32 + 16 * i, reinterpret_cast<const uint4*>(p.weight) + i);
  }
  cp_async_commit();
  for (int i = tid; i < static_cast<int>(kBBytes / 16); i += kThreads) {
    reinterpret_cast<uint4*>(b_s)[i] = make_uint4(0u, 0u, 0u, 0u);
  }
  const float bias = p.bias != nullptr && t < 3 ? p.bias[t] : 0.f;
  const bool normed = p.scale != nullptr || p.in_sums != nullptr;
  const uint32_t b_addr = smem_u32(b_s), ring_u32 = smem_u32(ring);

  // Staging: thread tid copies chunk q = tid % 4 of staged pixels tid / 4 + 32k (k < 3; the third
  // only for tid < 32: 288 chunks a row), at plane q, + 512·k bytes.
  const int q = tid & 3, px_first = tid >> 2;
  const int my_chunks = tid < kRowChunks - 2 * kThreads ? 3 : 2;
  const uint32_t my_off = q * kPlaneBytes + px_first * 16;
  // The last tile's sample: after it this CTA reads the sums no more (thread 0 counts the CTA).
  const int last_tile = blockIdx.x + (p.tiles - 1 - static_cast<int>(blockIdx.x)) / gridDim.x * gridDim.x;
  const int last_n = last_tile / (p.tiles_x * p.tiles_y);
  int aff_n = -1;
  unsigned ticket = 0;
  const int y_last = 2 * (p.Hin - 1), x_last = 2 * (p.Win - 1);
  // A of k16 step s = (kx, h): the 64 pixels kx .. kx + 63 of a staged row at planes 2h, 2h + 1, K-major
  // without swizzle: core matrices of 8 pixels × 16 bytes, 128 bytes apart along M, a plane apart
  // along K.
  const uint64_t a_desc0 = interleave_desc(ring_u32, kPlaneBytes, 128);
  const uint64_t b_desc0 = sw128_desc(b_addr, 16, 1024);
  grid_dependency_wait();   // x and its norm come from the kernels before this one

  for (int tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    int n, y0, x0;
    tile_origin(p, tile, kTH, kTW, n, y0, x0);
    // This thread's source columns (padded columns past the input read any real pixel: they feed
    // only outputs that are not stored) and the sample's base.
    const unsigned char* xn = static_cast<const unsigned char*>(p.x) + static_cast<int64_t>(n) * p.Hin * p.Win * 64;
    int col_off[3];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      const int col = x0 + px_first + 32 * k;
      col_off[k] = reflect((col < p.Wp ? col : p.pad) - p.pad, x_last) * 64 + q * 16;
    }
    auto issue_row = [&](int r) {
      if (r < kInRows) {
        const int y = y0 + r;
        const unsigned char* src = xn + static_cast<int64_t>(reflect((y < p.Hp ? y : p.pad) - p.pad, y_last)) * p.Win * 64;
        const uint32_t dst = ring_u32 + (r % kRing) * kRowBytes + my_off;
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          if (k < my_chunks) cp_async16(dst + 512 * k, src + col_off[k]);
        }
      }
      cp_async_commit();   // (an empty group past the last row keeps the count uniform)
    };
#pragma unroll
    for (int r = 0; r < kRing; ++r) issue_row(r);

    // The prologue norm of sample n (its loads' round trip overlaps the rows' copies).
    const bool refresh = p.in_sums != nullptr && n != aff_n;   // uniform
    if (refresh) {
      head_affine_from_sums<kThreads>(p, n, aff_s, tid);
      aff_n = n;
    }
    if (tile == static_cast<int>(blockIdx.x)) {
      // B from the raw weight: W[co][c][ky][kx] is row n = 8·(ky / 2) + 2·co + ky % 2, k = 32·(kx % 2)
      // + c of block kx / 2, its 16-byte chunk k / 8 at slot (k / 8) ^ (n % 8).
      cp_async_wait<kRing>();   // the weight's group, the oldest
      __syncthreads();          // every thread's chunks of it are in, B is zeroed
      const uint16_t* w_raw = reinterpret_cast<const uint16_t*>(smem + kRawWOff);
      for (int i = tid; i < kWeightChunks * 8; i += kThreads) {
        const int co = i / 2592, rem = i - 2592 * co, c = rem / 81, tap = rem - 81 * c;
        const int ky = tap / 9, kx = tap - 9 * ky;
        const int nr = 8 * (ky >> 1) + 2 * co + (ky & 1), kk = 32 * (kx & 1) + c;
        *reinterpret_cast<uint16_t*>(b_s + (kx >> 1) * kBBlockBytes + nr * 128 + (((kk >> 3) ^ (nr & 7)) << 4) +
                                     (kk & 7) * 2) = w_raw[i];
      }
      fence_proxy_async_smem();   // (the barrier below completes the ordering before the wgmmas)
    }
    __syncthreads();   // aff_s (and B) written
    if (refresh && n == last_n && tid == 0 && p.in_counter != nullptr) ticket = atomicAdd(p.in_counter, 1u);
    float nscale[8], nshift[8];   // channels 8q .. 8q + 7
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      nscale[e] = p.in_sums != nullptr ? aff_s[8 * q + e] : (p.scale != nullptr ? p.scale[n * 32 + 8 * q + e] : 1.f);
      nshift[e] = p.in_sums != nullptr ? aff_s[32 + 8 * q + e] : (p.shift != nullptr ? p.shift[n * 32 + 8 * q + e] : 0.f);
    }
    // Row r's chunks this thread copied, once landed: normalised in place (x' = round(relu(x·scale +
    // shift)), as the norm op writes it), then fenced for the wgmmas' (async proxy) reads.
    auto stage_row = [&](int r) {
      if (normed) {
        unsigned char* mine = ring + (r % kRing) * kRowBytes + my_off;
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          if (k < my_chunks) {
            uint4* c = reinterpret_cast<uint4*>(mine + 512 * k);
            const uint4 v = *c;
            uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int h = 0; h < 4; ++h) {
              float lo, hi;
              unpack2<T>(w[h], lo, hi);
              w[h] = relu_pack2<T>(affine(lo, nscale[2 * h], nshift[2 * h]),
                                   affine(hi, nscale[2 * h + 1], nshift[2 * h + 1]));
            }
            *c = make_uint4(w[0], w[1], w[2], w[3]);
          }
        }
      }
      fence_proxy_async_smem();
    };

    // This lane's outputs: pixels x0 + 16w + g and + 8, channel t (t = 3: none).
    const int px = x0 + 16 * warp + g;
    const bool px0_in = t < 3 && px < p.W, px1_in = t < 3 && px + 8 < p.W;
    Out* out_px = static_cast<Out*>(p.out) + ((static_cast<int64_t>(n) * p.H + y0) * p.W + px) * 3 + t;
    // The output window: win[k] holds output row rf − 8 + k (pixels g, g + 8) after input row rf is
    // folded in. Input row rf's column 8j + 2t + e is kernel row ky = 2j + e, i.e. output row rf − ky
    // = win[8 − ky]; win[0] is then complete and stored, and the window shifts by one row. Rows
    // outside the tile collect values that are never stored.
    float win[9][2];
#pragma unroll
    for (int k = 0; k < 9; ++k) win[k][0] = win[k][1] = 0.f;
    float acc[20];
    auto fold = [&](int rf) {
#pragma unroll
      for (int ky = 0; ky < 9; ++ky) {
        const int j = ky >> 1, e = ky & 1;
        win[8 - ky][0] += acc[4 * j + e];
        win[8 - ky][1] += acc[4 * j + 2 + e];
      }
      const int r = rf - 8;
      if (r >= 0 && y0 + r < p.H) {
        Out* dst = out_px + static_cast<int64_t>(r) * p.W * 3;
        if (px0_in) store_one<Out>(dst, win[0][0] + bias);
        if (px1_in) store_one<Out>(dst + 8 * 3, win[0][1] + bias);
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        win[k][0] = win[k + 1][0];
        win[k][1] = win[k + 1][1];
      }
      win[8][0] = win[8][1] = 0.f;
    };

    cp_async_wait<kRing - 1>();   // row 0
    stage_row(0);
    __syncthreads();
    // Input row r: its 18 wgmmas issued at once; row r + 1 staged while they run; the product folded
    // into the window once they are done (each row drains: with two accumulator sets and the fold of
    // row r under row r + 1's wgmmas ptxas serialises every wgmma of the loop, C7514, as it reads
    // accumulators of a pipeline left open across the back edge; the SM's other CTAs keep the tensor
    // cores busy through the drain); then row r + kRing is copied into row r's slot.
#pragma unroll 1
    for (int r = 0; r < kInRows; ++r) {
      const uint32_t slot16 = (r % kRing) * (kRowBytes / 16);
      wg_fence();
#pragma unroll
      for (int st = 0; st < kKSteps; ++st) {
        const int kx = st >> 1, h = st & 1;
        // (Start addresses are bits 0–13 of a descriptor, in 16-byte units: the ring and B end below
        // 256 KB.)
        wgmma_ss<kBF16>(acc, a_desc0 + slot16 + (2 * h * kPlaneBytes + kx * 16) / 16,
                        b_desc0 + ((kx >> 1) * kBBlockBytes + (st & 3) * 32) / 16, st == 0 ? 0 : 1);
      }
      wg_commit();
      if (r + 1 < kInRows) {
        cp_async_wait<kRing - 2>();   // row r + 1
        stage_row(r + 1);
      }
      wg_wait<0>();
      reg_fence(acc);
      fold(r);
      __syncthreads();   // row r + 1 is published; every warp's wgmmas of row r are done (its slot is free)
      issue_row(r + kRing);
      // The next kernel's CTAs may start once every CTA is in its last tile's second half.
      if (r == kInRows / 2 && tile + static_cast<int>(gridDim.x) >= p.tiles) allow_dependents_launch();
    }
  }
  if (p.in_counter != nullptr) {   // the prologue norm's sums: the CTA that counted last clears them
    norm_state_release(p.in_counter, p.N * 32, ticket, reinterpret_cast<unsigned*>(smem + kFlagOff), tid, kThreads,
                       [] { __syncthreads(); });
  }
#endif  // SF_SM90A
}

template <typename T, typename Out>
cudaError_t launch(const Conv9x9Args& a, cudaStream_t stream, int id) {
  const Params p = make_params(a, kTH, kTW);
  if (p.tiles == 0) return cudaSuccess;
  auto kernel = head_sm90_kernel<T, Out>;
  cudaError_t err = allow_smem(kernel, kSmem, id, true);
  int ctas = 0;
  if (err == cudaSuccess) err = resident_ctas(kernel, kThreads, kSmem, id, ctas);
  if (err != cudaSuccess) return err;
  err = launch_pdl(a.pdl, kernel, dim3(static_cast<unsigned>(std::min(p.tiles, ctas))), dim3(kThreads), kSmem,
                   stream, p);
  return err != cudaSuccess ? err : cudaPeekAtLastError();
}

}  // namespace

bool conv9x9_head_sm90_supported(const Conv9x9Args& a) {
  return a.cin == 32 && conv9x9_args_valid(a) && device_runs_sm90a(head_sm90_kernel<__nv_bfloat16, float>);
}

cudaError_t conv9x9_head_sm90_launch(const Conv9x9Args& a, cudaStream_t stream) {
  if (!conv9x9_head_sm90_supported(a)) return cudaErrorInvalidValue;
  // Kernel ids (allow_smem's and resident_ctas's cache slots).
  const bool bf16 = a.dtype == ConvDtype::kBFloat16;
  if (a.out_float32) return bf16 ? launch<__nv_bfloat16, float>(a, stream, 0) : launch<__half, float>(a, stream, 1);
  return bf16 ? launch<__nv_bfloat16, __nv_bfloat16>(a, stream, 2) : launch<__half, __half>(a, stream, 3);
}

}  // namespace styleforge
