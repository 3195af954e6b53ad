// Playground, not shipped: where conv1's wgmma kernel (csrc/conv9x9/conv9x9_sm90.cu) spends its time.
//   nvcc -std=c++17 -O3 -arch=sm_90a -I styleforge/kernels/csrc/conv9x9 -I styleforge/kernels/csrc/common \
//     dev/kernels/conv9x9/sm90_variants.cu -o v
//   ./v
// 1. The raw rate of wgmma m64nNk16 with A from registers: N = 32, 64, 128 at equal MACs per step
//    (4, 2, 1 accumulators), one commit + wait_group 1 per step, 1–3 warpgroup CTAs per SM.
// 2. conv1 (bf16, fp32 image, pad 4, no statistics) as the shipped kernel computes it, with parts
//    switched off (input staging, wgmmas, output stores) and other group sizes / tile heights, timed
//    at 512² and 4K (CUDA events, median of 20). Outputs are not checked: switched-off parts make
//    them wrong on purpose; the shipped configuration is tested in tests/kernels/test_conv9x9.py.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "conv9x9_common.cuh"
#include "sm90_ptx.cuh"

using namespace styleforge;
#if SF_SM90A
using namespace styleforge::sm90;
#endif

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

// ---- 1. wgmma rate ----------------------------------------------------------------------------
template <int N>
__global__ void __launch_bounds__(128) wgmma_rate(int steps, float* sink) {
#if SF_SM90A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  for (int i = threadIdx.x; i < N * 128 / 16; i += 128) reinterpret_cast<uint4*>(smem)[i] = make_uint4(0, 0, 0, 0);
  fence_proxy_async_smem();
  __syncthreads();
  constexpr int kAcc = 128 / N;
  float acc[kAcc][N / 2];
  for (int k = 0; k < kAcc; ++k)
    for (int i = 0; i < N / 2; ++i) acc[k][i] = 0.f;
  uint32_t a[4] = {threadIdx.x, threadIdx.x * 3u, threadIdx.x * 5u, threadIdx.x * 7u};
  const uint64_t desc = sw128_desc(smem_u32(smem), 16, 1024);
  for (int s = 0; s < steps; ++s) {
    wg_fence();
#pragma unroll
    for (int k = 0; k < kAcc; ++k) wgmma_rs<true>(acc[k], a, desc + (s & 1) * 2);
    wg_commit();
    wg_wait<1>();
  }
  wg_wait<0>();
  float v = 0.f;
  for (int k = 0; k < kAcc; ++k)
    for (int i = 0; i < N / 2; ++i) v += acc[k][i];
  if (v == 1.2345f) sink[0] = v;
#endif
}

template <int N>
void time_rate(int sms) {
  float* sink;
  CHECK(cudaMalloc(&sink, 4));
  const int smem = N * 128 + 1024;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int steps = 4096;
  for (int per_sm = 1; per_sm <= 3; ++per_sm) {
    wgmma_rate<N><<<sms * per_sm, 128, smem>>>(steps, sink);
    CHECK(cudaDeviceSynchronize());
    cudaEventRecord(e0);
    wgmma_rate<N><<<sms * per_sm, 128, smem>>>(steps, sink);
    cudaEventRecord(e1);
    CHECK(cudaEventSynchronize(e1));
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    const double flop = 2.0 * 64 * 128 * 16 * steps * sms * per_sm;
    std::printf("wgmma rs m64n%dk16 x%d per step, %d CTA/SM: %.1f TFLOP/s\n", N, 128 / N, per_sm, flop / ms / 1e9);
  }
  CHECK(cudaFree(sink));
}

// ---- 2. conv1 variants ------------------------------------------------------------------------
constexpr int kThreads = 128, kTW = 64, kCopy = 224, kLoad = 225, kRowWords = kCopy;
constexpr uint32_t kBBlockBytes = 32 * 128, kBBytes = 5 * kBBlockBytes;

struct P {
  const float* x;
  const uint16_t* weight;
  uint16_t* out;
  int Hin, Win, Hp, Wp, H, W, pad, strips, bands, tiles;
  unsigned long long* prof;   // null, or [CTA][32] phase end times (globaltimer, ns)
};

#if SF_SM90A
__device__ __forceinline__ void load_a(uint32_t (&a)[2][4], const uint32_t* row) {
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    const uint32_t* b = row + ks * 8;
    a[ks][0] = b[0];
    a[ks][1] = b[12];
    a[ks][2] = b[4];
    a[ks][3] = b[16];
  }
}
#endif

// The conv1 main loop's pattern without the convolution: per step 8 wgmmas m64n32k16 (k-steps 0, 1
// × 4 accumulators), with distinct B descriptors (the kernel's ky blocks) or one, and A constant or
// reloaded from shared memory every step (two register buffers, as the kernel's load_a).
template <bool kDistinctB, bool kReloadA>
__global__ void __launch_bounds__(128) pattern_rate(int steps, float* sink) {
#if SF_SM90A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  for (int i = threadIdx.x; i < 40960 / 16; i += 128) reinterpret_cast<uint4*>(smem)[i] = make_uint4(0, 0, 0, 0);
  fence_proxy_async_smem();
  __syncthreads();
  float acc[4][16];
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 16; ++i) acc[k][i] = 0.f;
  reg_fence(acc);
  const uint32_t* a_src = reinterpret_cast<const uint32_t*>(smem + 20480) + threadIdx.x % 32;
  uint32_t a0[2][4], a1[2][4];
  load_a(a0, a_src);
  load_a(a1, a_src + 64);
  uint64_t desc0 = sw128_desc(smem_u32(smem), 16, 1024);
  asm volatile("" : "+l"(desc0));
  for (int s = 0; s < steps; s += 2) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t(&a)[2][4] = h ? a1 : a0;
      uint32_t(&next)[2][4] = h ? a0 : a1;
      wg_fence();
#pragma unroll
      for (int ks = 0; ks < 2; ++ks)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int ky = (i + 2 * h) % 9;
          wgmma_rs<true>(acc[i], a[ks], desc0 + (kDistinctB ? (((ky >> 1) * 4096 + (ky & 1) * 64 + ks * 32) >> 4) : 0));
        }
      wg_commit();
      wg_wait<1>();
      reg_fence(next);
      if (kReloadA) load_a(next, a_src + ((s + h) & 7) * 128);
    }
  }
  wg_wait<0>();
  reg_fence(acc);
  float v = 0.f;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 16; ++i) v += acc[k][i];
  if (v == 1.2345f) sink[0] = v;
#endif
}

template <bool kDistinctB, bool kReloadA>
void time_pattern(int sms) {
  float* sink;
  CHECK(cudaMalloc(&sink, 4));
  auto kernel = pattern_rate<kDistinctB, kReloadA>;
  const int smem = 40960 + 1024;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int steps = 4096;
  for (int per_sm = 1; per_sm <= 3; ++per_sm) {
    kernel<<<sms * per_sm, 128, smem>>>(steps, sink);
    CHECK(cudaDeviceSynchronize());
    cudaEventRecord(e0);
    kernel<<<sms * per_sm, 128, smem>>>(steps, sink);
    cudaEventRecord(e1);
    CHECK(cudaEventSynchronize(e1));
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    const double flop = 2.0 * 64 * 32 * 16 * 8 * steps * sms * per_sm;
    std::printf("pattern 8 x m64n32k16 per step, distinct B %d, A reloaded %d, %d CTA/SM: %.1f TFLOP/s\n",
                kDistinctB, kReloadA, per_sm, flop / ms / 1e9);
  }
  CHECK(cudaFree(sink));
}

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// The quad (lanes 4g .. 4g + 3) transposes its 4 × 4 words: lane t's w[j] (channels 8j + 2t, + 1 of
// pixel g) becomes lane t's w[t'] = lane t''s old w[t] (channels 8t + 2t', + 1): 16 bytes per lane.
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4], int t) {
#pragma unroll
  for (int m = 1; m <= 2; m <<= 1) {
    const bool hi = (t & m) != 0;
    // positions whose bit m differs from t's are swapped with lane t ^ m's (j ^ m)
    uint32_t s0 = m == 1 ? (hi ? w[0] : w[1]) : (hi ? w[0] : w[2]);
    uint32_t s1 = m == 1 ? (hi ? w[2] : w[3]) : (hi ? w[1] : w[3]);
    s0 = __shfl_xor_sync(0xffffffffu, s0, m);
    s1 = __shfl_xor_sync(0xffffffffu, s1, m);
    if (m == 1) {
      if (hi) { w[0] = s0; w[2] = s1; } else { w[1] = s0; w[3] = s1; }
    } else {
      if (hi) { w[0] = s0; w[1] = s1; } else { w[2] = s0; w[3] = s1; }
    }
  }
}

// kStore: 0 none, 1 4-byte stores of channel pairs (shipped), 2 quad transpose + 16-byte stores.
// kWeights: 0 raw staged + built from shared memory (shipped), 1 built straight from global.
template <int kTH, int kG, int kMinBlocks, bool kStage, bool kMma, int kStore, int kWeights = 0>
__global__ void __launch_bounds__(kThreads, kMinBlocks) conv1_variant(const P p) {
#if SF_SM90A
  constexpr int kRows = kTH + 8, kGroupRows = kG + 8;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  uint16_t* in_s = reinterpret_cast<uint16_t*>(smem + kBBytes);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  auto mark = [&](int k) {
    if (p.prof != nullptr && tid == 0) p.prof[blockIdx.x * 32 + k] = now_ns();
  };
  mark(0);
  if constexpr (kWeights == 0) {
    stage_weight<kThreads>(p.weight, reinterpret_cast<uint4*>(in_s));
    __syncthreads();
  }
  const uint16_t* wsrc = kWeights == 0 ? in_s : p.weight;
  for (int q = tid; q < 5 * 32 * 8; q += kThreads) {
    const int blk = q >> 8, n = (q >> 3) & 31, c = q & 7;
    uint16_t v[8];
    for (int e = 0; e < 8; ++e) {
      const int kk = 8 * c + e, ky = 2 * blk + (kk >> 5), k = kk & 31;
      v[e] = k < 27 && ky < 9 ? wsrc[((n * 3 + k % 3) * 9 + ky) * 9 + k / 3] : uint16_t(0);
    }
    *reinterpret_cast<uint4*>(smem + blk * kBBlockBytes + n * 128 + ((c ^ (n & 7)) << 4)) =
        make_uint4(pack2(v[0], v[1]), pack2(v[2], v[3]), pack2(v[4], v[5]), pack2(v[6], v[7]));
  }
  __syncthreads();
  if constexpr (!kStage) {
    for (int i = tid; i < kRows * kCopy; i += kThreads) reinterpret_cast<uint32_t*>(in_s)[i] = 0x3f803f80u;
  }
  fence_proxy_async_smem();
  mark(1);
  const uint32_t b_addr = smem_u32(smem);
  const int e0 = (16 * warp + g) * 3 + 2 * t;
  const uint32_t* a_lane = reinterpret_cast<const uint32_t*>(in_s) + ((g & 1) ? kCopy / 2 + (e0 - 1) / 2 : e0 / 2);
  bool first = true;
  for (int tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const int rest = tile / p.strips, x0 = (tile - rest * p.strips) * kTW, y0 = rest * kTH;
    __syncthreads();
    if constexpr (kStage) {
      float raw[2][kRows];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int j = tid + h * kThreads;
        if (h == 0 || j < kLoad) {
          const int jp = j / 3, jc = j - 3 * jp, px = x0 + jp;
          const bool col_in = px < p.Wp;
          const float* xc = p.x + static_cast<int64_t>(jc) * p.Hin * p.Win +
                            reflect((col_in ? px : p.pad) - p.pad, 2 * (p.Win - 1));
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const int y = y0 + r;
            raw[h][r] = col_in && y < p.Hp ? __ldg(xc + static_cast<int64_t>(reflect(y - p.pad, 2 * (p.Hin - 1))) * p.Win) : 0.f;
          }
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int j = tid + h * kThreads;
        if (h == 0 || j < kLoad) {
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const uint16_t v = to_bits<__nv_bfloat16>(raw[h][r]);
            if (j < kCopy) in_s[(2 * r) * kCopy + j] = v;
            if (j > 0) in_s[(2 * r + 1) * kCopy + j - 1] = v;
          }
        }
      }
    }
    __syncthreads();
    if (first) mark(2);
    const int px = x0 + 16 * warp + g;
    const bool px0_in = px < p.W, px1_in = px + 8 < p.W;
    uint16_t* out_px = p.out + (static_cast<int64_t>(y0) * p.W + px) * 32 + (kStore == 2 ? 8 * t : 2 * t);
#pragma unroll 1
    for (int gi = 0; gi < kTH / kG; ++gi) {
      if (y0 + gi * kG >= p.H) break;
      float acc[kG][16];
      for (int i = 0; i < kG; ++i)
        for (int c = 0; c < 16; ++c) acc[i][c] = 0.f;
      reg_fence(acc);
      if constexpr (kMma) {
        const uint32_t* rows = a_lane + gi * kG * kRowWords;
        uint64_t desc0 = sw128_desc(b_addr, 16, 1024);
        asm volatile("" : "+l"(desc0));
        uint32_t a0[2][4], a1[2][4];
        load_a(a0, rows);
#pragma unroll
        for (int rr = 0; rr < kGroupRows; ++rr) {
          uint32_t(&a)[2][4] = (rr & 1) ? a1 : a0;
          uint32_t(&next)[2][4] = (rr & 1) ? a0 : a1;
          wg_fence();
#pragma unroll
          for (int ks = 0; ks < 2; ++ks)
#pragma unroll
            for (int i = 0; i < kG; ++i) {
              const int ky = rr - i;
              if (ky >= 0 && ky <= 8)
                wgmma_rs<true>(acc[i], a[ks], desc0 + (((ky >> 1) * kBBlockBytes + (ky & 1) * 64 + ks * 32) >> 4));
            }
          wg_commit();
          if (rr > 0) {
            wg_wait<1>();
            reg_fence(next);
          }
          if (rr + 1 < kGroupRows) load_a(next, rows + (rr + 1) * kRowWords);
        }
        wg_wait<0>();
        reg_fence(acc);
      }
      if (first && gi < 4) mark(3 + 2 * gi);
#pragma unroll
      for (int i = 0; i < kG; ++i) {
        const int y = y0 + gi * kG + i;
        if (y >= p.H) break;
        uint16_t* o = out_px + static_cast<int64_t>(gi * kG + i) * p.W * 32;
        uint32_t lo[4], hi[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          lo[j] = pack2(to_bits<__nv_bfloat16>(acc[i][4 * j]), to_bits<__nv_bfloat16>(acc[i][4 * j + 1]));
          hi[j] = pack2(to_bits<__nv_bfloat16>(acc[i][4 * j + 2]), to_bits<__nv_bfloat16>(acc[i][4 * j + 3]));
        }
        if constexpr (kStore == 1) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            if (px0_in) *reinterpret_cast<uint32_t*>(o + 8 * j) = lo[j];
            if (px1_in) *reinterpret_cast<uint32_t*>(o + 8 * 32 + 8 * j) = hi[j];
          }
        } else if constexpr (kStore == 2) {
          quad_transpose(lo, t);
          quad_transpose(hi, t);
          if (px0_in) *reinterpret_cast<uint4*>(o) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
          if (px1_in) *reinterpret_cast<uint4*>(o + 8 * 32) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
        } else {
          if (lo[0] == 0x12345678u && hi[3] == 0x9abcdef0u) *o = 1;
        }
      }
      if (first && gi < 4) mark(4 + 2 * gi);
    }
    first = false;
  }
  mark(11);
#endif
}

template <int kTH, int kG, int kMinBlocks, bool kStage, bool kMma, int kStore, int kWeights = 0>
void time_variant(const char* name, int sms, const float* x, const uint16_t* w, uint16_t* out, int H, int W,
                  bool profile = false) {
  auto kernel = conv1_variant<kTH, kG, kMinBlocks, kStage, kMma, kStore, kWeights>;
  const size_t smem = kBBytes + std::max<size_t>((kTH + 8) * 2 * kCopy * 2, 32 * 3 * 81 * 2) + 1024;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  P p{x, w, out, H, W, H + 8, W + 8, H, W, 4, (W + kTW - 1) / kTW, (H + kTH - 1) / kTH, 0, nullptr};
  p.tiles = p.strips * p.bands;
  const int grid = std::min(p.tiles, per_sm * sms);
  std::vector<float> t;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int r = 0; r < 23; ++r) {
    cudaEventRecord(e0);
    kernel<<<grid, kThreads, smem>>>(p);
    cudaEventRecord(e1);
    CHECK(cudaEventSynchronize(e1));
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 3) t.push_back(ms * 1000.f);
  }
  std::sort(t.begin(), t.end());
  const double flop = 2.0 * H * W * 32 * 288;
  std::printf("%-34s %5dx%-5d %d CTA/SM grid %5d: %8.1f us  %6.1f TFLOP/s (K=288)\n", name, H, W, per_sm, grid,
              t[t.size() / 2], flop / t[t.size() / 2] / 1e6);
  if (!profile) return;
  // Phase marks of every CTA's first tile (ns after the earliest CTA start): median and max.
  unsigned long long* prof;
  CHECK(cudaMalloc(&prof, size_t(grid) * 32 * 8));
  CHECK(cudaMemset(prof, 0, size_t(grid) * 32 * 8));
  p.prof = prof;
  kernel<<<grid, kThreads, smem>>>(p);
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned long long> h(size_t(grid) * 32);
  CHECK(cudaMemcpy(h.data(), prof, h.size() * 8, cudaMemcpyDeviceToHost));
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < grid; ++b) t0 = std::min(t0, h[b * 32]);
  const char* names[12] = {"start", "weights", "staged", "mma0", "epi0", "mma1", "epi1", "mma2", "epi2", "mma3", "epi3", "end"};
  std::printf("   phase ends (us after the first CTA start, median / max over CTAs):");
  for (int k = 0; k < 12; ++k) {
    std::vector<double> v;
    for (int b = 0; b < grid; ++b)
      if (h[b * 32 + k] != 0) v.push_back((h[b * 32 + k] - t0) * 1e-3);
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf(" %s %.2f/%.2f", names[k], v[v.size() / 2], v.back());
  }
  std::printf("\n");
  CHECK(cudaFree(prof));
}

__global__ void fill(float* x, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = static_cast<float>((i * 2654435761u >> 8) % 256);
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (auto f : {wgmma_rate<32>, wgmma_rate<64>, wgmma_rate<128>})
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 128 * 128 + 1024));
  time_rate<32>(sms);
  time_rate<64>(sms);
  time_rate<128>(sms);
  time_pattern<false, false>(sms);
  time_pattern<true, false>(sms);
  time_pattern<false, true>(sms);
  time_pattern<true, true>(sms);
  const int sizes[2][2] = {{512, 512}, {2160, 3840}};
  float* x;
  uint16_t *w, *out;
  CHECK(cudaMalloc(&x, size_t(3) * 2160 * 3840 * 4));
  CHECK(cudaMalloc(&w, 32 * 3 * 81 * 2));
  CHECK(cudaMemset(w, 0x3c, 32 * 3 * 81 * 2));
  CHECK(cudaMalloc(&out, size_t(2160) * 3840 * 64));
  fill<<<1024, 256>>>(x, size_t(3) * 2160 * 3840);
  for (auto& s : sizes) {
    const int H = s[0], W = s[1];
    std::vector<uint16_t> a(size_t(H) * W * 32), b(a.size());
    time_variant<16, 4, 3, true, true, 1>("TH16 G4 (shipped)", sms, x, w, out, H, W, true);
    CHECK(cudaMemcpy(a.data(), out, a.size() * 2, cudaMemcpyDeviceToHost));
    time_variant<16, 4, 3, true, true, 2>("TH16 G4 16-byte stores", sms, x, w, out, H, W, true);
    CHECK(cudaMemcpy(b.data(), out, b.size() * 2, cudaMemcpyDeviceToHost));
    std::printf("   16-byte stores write the shipped bytes: %s\n", a == b ? "yes" : "NO");
    time_variant<16, 4, 3, true, true, 2, 1>("TH16 G4 16B stores, B from global", sms, x, w, out, H, W, true);
    time_variant<16, 4, 3, true, true, 0>("TH16 G4 no stores", sms, x, w, out, H, W);
    time_variant<16, 4, 3, false, true, 2>("TH16 G4 no staging", sms, x, w, out, H, W);
    time_variant<16, 4, 3, true, false, 2>("TH16 G4 no wgmma", sms, x, w, out, H, W);
    time_variant<16, 4, 3, false, true, 0>("TH16 G4 wgmma only", sms, x, w, out, H, W, true);
    time_variant<8, 4, 3, true, true, 2>("TH8 G4 16B stores", sms, x, w, out, H, W, true);
    time_variant<32, 4, 3, true, true, 2>("TH32 G4 16B stores", sms, x, w, out, H, W);
    time_variant<16, 8, 2, true, true, 2>("TH16 G8 16B stores", sms, x, w, out, H, W);
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
