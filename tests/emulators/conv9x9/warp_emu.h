// A CPU stand-in for the CUDA execution model, enough to run csrc/cuda/conv9x9.cu unchanged
// (after emulate.py rewrites its launches and its dynamic shared memory declaration): blocks run
// one after another, the threads of a block run concurrently on std::threads, __syncthreads is a
// std::barrier, and the two warp-collective instructions the kernels use are modelled from the
// PTX ISA, independently of the kernel's own index math:
//   mma.sync.m16n8k16.row.col (f32 += bf16/f16 · bf16/f16): the 32 lanes' A, B and C registers
//     are gathered, the element of A[m][k], B[k][n], C[m][n] is found in (lane, register, half)
//     by the "Matrix Fragments for mma.m16n8k16 with floating point type" tables, and every
//     lane's D is computed in double from the full 16×16 · 16×8 product;
//   ldmatrix.sync.m8n8.x4.b16: lanes 8i..8i+7 supply the row addresses of matrix i, and lane l
//     receives in register i the 32-bit word at column pair l%4 of row l/4 of matrix i;
//   shfl.sync.bfly (full mask): lane l receives lane l ^ m's value.
// cvt.rn.relu.{bf16x2,f16x2}.f32 is modelled as round-to-nearest-even, then negative results
// become +0 and NaN the canonical NaN (0x7fff). The in-kernel InstanceNorm hand-off's device
// functions (atomicAdd on fp64 and u32, __threadfence, __ldcg, rsqrtf) map to std::atomic_ref and
// plain loads: blocks run one after another, so the last block to count is the last to run.
// Shared-memory addresses given to ldmatrix must be 16-byte aligned and inside the block's
// buffer (aborts otherwise); with -fsanitize=address every other overrun shows too. It does not
// model the memory system, bank conflicts, races between blocks, or timing. A test tool only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define STYLEFORGE_CONV_WARP_EMULATION 1

// The round-to-nearest arithmetic intrinsics (device-only in the CUDA headers); x86-64 without
// -mfma never contracts these into an FMA.
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// The hand-off's atomics: the threads of a block run concurrently.
inline double atomicAdd(double* p, double v) { return std::atomic_ref<double>(*p).fetch_add(v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline double __ldcg(const double* p) { return *p; }

namespace emu {

constexpr int kWarp = 32;
enum Op { kLdmatrix = 1, kMmaBf16 = 2, kMmaF16 = 3, kShfl = 4 };

inline float bits_to_float(uint16_t h, bool bf16) {
  if (bf16) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  double v = exp == 0 ? std::ldexp(man, -24) : exp == 31 ? (man ? NAN : INFINITY)
                                                          : std::ldexp(1024 + man, exp - 25);
  return static_cast<float>(sign ? -v : v);
}

struct WarpState;
struct Complete {
  WarpState* w;
  void operator()() noexcept;
};

struct WarpState {
  int op[kWarp] = {};
  uint32_t a[kWarp][4] = {};
  uint32_t b[kWarp][2] = {};
  float c[kWarp][4] = {};
  const unsigned char* addr[kWarp] = {};
  uint32_t shfl_in[kWarp] = {};
  int shfl_mask[kWarp] = {};
  uint32_t out[kWarp][4] = {};
  float d[kWarp][4] = {};
  const unsigned char* smem_lo = nullptr;
  const unsigned char* smem_hi = nullptr;
  std::unique_ptr<std::barrier<Complete>> bar;
};

inline uint16_t half_of(uint32_t reg, int h) { return static_cast<uint16_t>(h ? reg >> 16 : reg & 0xffffu); }

inline void Complete::operator()() noexcept {
  const int op = w->op[0];
  for (int l = 1; l < kWarp; ++l) {
    if (w->op[l] != op) {
      std::fprintf(stderr, "emulator: lanes of one warp issued different collectives\n");
      std::abort();
    }
  }
  if (op == kShfl) {
    for (int l = 0; l < kWarp; ++l) w->out[l][0] = w->shfl_in[l ^ (w->shfl_mask[l] & (kWarp - 1))];
    return;
  }
  if (op == kLdmatrix) {
    for (int l = 0; l < kWarp; ++l) {
      const unsigned char* p = w->addr[l];
      if (reinterpret_cast<uintptr_t>(p) % 16 != 0 || p < w->smem_lo || p + 16 > w->smem_hi) {
        std::fprintf(stderr, "emulator: ldmatrix row address %p misaligned or outside shared memory\n",
                     static_cast<const void*>(p));
        std::abort();
      }
    }
    for (int l = 0; l < kWarp; ++l)
      for (int i = 0; i < 4; ++i) std::memcpy(&w->out[l][i], w->addr[8 * i + l / 4] + (l % 4) * 4, 4);
    return;
  }
  const bool bf16 = op == kMmaBf16;
  // PTX tables: A[m][k] in lane (m%8)·4 + (k%8)/2, register (m≥8) + 2·(k≥8), half k%2;
  // B[k][n] in lane 4n + (k%8)/2, register (k≥8), half k%2; C[m][n] in lane (m%8)·4 + n/2,
  // element 2·(m≥8) + n%2.
  auto A = [&](int m, int k) {
    return bits_to_float(half_of(w->a[(m % 8) * 4 + (k % 8) / 2][(m >= 8) + 2 * (k >= 8)], k % 2), bf16);
  };
  auto B = [&](int k, int n) { return bits_to_float(half_of(w->b[4 * n + (k % 8) / 2][k >= 8], k % 2), bf16); };
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      const int lane = (m % 8) * 4 + n / 2, e = 2 * (m >= 8) + n % 2;
      double s = w->c[lane][e];
      for (int k = 0; k < 16; ++k) s += static_cast<double>(A(m, k)) * B(k, n);
      w->d[lane][e] = static_cast<float>(s);
    }
  }
}

struct ThreadCtx {
  uint3 tid{0, 0, 0}, bid{0, 0, 0};
  dim3 bdim, gdim;
  std::barrier<>* block_bar = nullptr;
  WarpState* warp = nullptr;
  unsigned char* smem = nullptr;
};
inline thread_local ThreadCtx ctx;

inline int lane() { return static_cast<int>(ctx.tid.x) % kWarp; }

template <typename T> T ldg(const T* p) {
  if (sizeof(T) == 16 && reinterpret_cast<uintptr_t>(p) % 16 != 0) {
    std::fprintf(stderr, "emulator: misaligned 16-byte load at %p\n", static_cast<const void*>(p));
    std::abort();
  }
  T v;
  std::memcpy(static_cast<void*>(&v), p, sizeof(T));
  return v;
}

inline void launch(dim3 grid, dim3 block, size_t smem_bytes, const std::function<void()>& fn) {
  const int threads = static_cast<int>(block.x);
  if (threads % kWarp != 0 || block.y != 1 || block.z != 1 || grid.y != 1 || grid.z != 1) {
    std::fprintf(stderr, "emulator: only 1-D grids of 1-D blocks of whole warps are modelled\n");
    std::abort();
  }
  std::barrier<> block_bar(threads);
  std::vector<WarpState> warps(threads / kWarp);
  for (auto& w : warps) w.bar = std::make_unique<std::barrier<Complete>>(kWarp, Complete{&w});
  for (unsigned bx = 0; bx < grid.x; ++bx) {
    // A fresh exact-size buffer per block, filled with 0xff (NaN in fp16/bf16), so reading
    // shared memory that was never written poisons the result and overruns reach ASan.
    std::vector<unsigned char> smem(smem_bytes, 0xff);
    for (auto& w : warps) {
      w.smem_lo = smem.data();
      w.smem_hi = smem.data() + smem_bytes;
    }
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ctx.tid = make_uint3(static_cast<unsigned>(t), 0, 0);
        ctx.bid = make_uint3(bx, 0, 0);
        ctx.bdim = block;
        ctx.gdim = grid;
        ctx.block_bar = &block_bar;
        ctx.warp = &warps[t / kWarp];
        ctx.smem = smem.data();
        fn();
      });
    }
    for (auto& th : pool) th.join();
  }
}

}  // namespace emu

namespace styleforge {
namespace {

inline void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  emu::WarpState& w = *emu::ctx.warp;
  const int l = emu::lane();
  w.op[l] = emu::kLdmatrix;
  w.addr[l] = static_cast<const unsigned char*>(smem);
  w.bar->arrive_and_wait();
  for (int i = 0; i < 4; ++i) r[i] = w.out[l][i];
}

template <typename T> inline void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint2& b) {
  emu::WarpState& w = *emu::ctx.warp;
  const int l = emu::lane();
  w.op[l] = std::is_same_v<T, __nv_bfloat16> ? emu::kMmaBf16 : emu::kMmaF16;
  for (int i = 0; i < 4; ++i) {
    w.a[l][i] = a[i];
    w.c[l][i] = d[i];
  }
  w.b[l][0] = b.x;
  w.b[l][1] = b.y;
  w.bar->arrive_and_wait();
  for (int i = 0; i < 4; ++i) d[i] = w.d[l][i];
}

// cvt.rn.relu.{bf16x2,f16x2}.f32 d, hi, lo (see the header comment).
template <typename T> inline uint32_t relu_pack2(float lo, float hi) {
  auto one = [](float v) -> uint32_t {
    if (std::isnan(v)) return 0x7fffu;
    uint16_t bits;
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      bits = __bfloat16_as_ushort(__float2bfloat16_rn(v));
    } else {
      bits = __half_as_ushort(__float2half_rn(v));
    }
    return (bits & 0x8000u) != 0 ? 0u : bits;
  };
  return one(lo) | (one(hi) << 16);
}

template <typename P> inline P* opaque(P* ptr) { return ptr; }

}  // namespace
}  // namespace styleforge

// shfl.sync.bfly.b32 with the full mask, as a warp collective.
inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
  if (mask != 0xffffffffu) {
    std::fprintf(stderr, "emulator: only full-warp shuffles are modelled\n");
    std::abort();
  }
  emu::WarpState& w = *emu::ctx.warp;
  const int l = emu::lane();
  w.op[l] = emu::kShfl;
  w.shfl_in[l] = __float_as_uint(v);
  w.shfl_mask[l] = lane_mask;
  w.bar->arrive_and_wait();
  return __uint_as_float(w.out[l][0]);
}

#define threadIdx (emu::ctx.tid)
#define blockIdx (emu::ctx.bid)
#define blockDim (emu::ctx.bdim)
#define gridDim (emu::ctx.gdim)
#define __syncthreads() (emu::ctx.block_bar->arrive_and_wait())
#define __ldg(p) emu::ldg(p)
#define cudaPeekAtLastError() cudaSuccess
#define cudaGetDevice(d) ((*(d) = 0), cudaSuccess)
#define cudaFuncSetAttribute(...) cudaSuccess
// Programmatic dependent launch is off here (Conv9x9Args::pdl false): its launcher never runs.
#define cudaLaunchKernelEx(...) cudaErrorNotSupported
