// A CPU stand-in for the CUDA execution model, just enough to run csrc/cuda/instance_norm.cu
// unchanged (after emulate.py rewrites its `<<<>>>` launches and 16-byte accesses) on a machine
// without a GPU: blocks run one after another, the threads of a block run concurrently on a pool
// of std::threads, __syncthreads and warp shuffles are std::barrier phases. It checks indexing,
// tiling, head/tail handling, reductions, alignment of vector accesses (__ldg/store16 abort on
// a misaligned address) and, built with -fsanitize=address, out-of-bounds accesses. It does not
// model the memory system, races between blocks, or timing. A test tool, never shipped.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

using std::max;
using std::min;

namespace emu {

constexpr int kWarp = 32;

// A barrier that threads leave when they return from the kernel (as on the GPU, a returned
// thread no longer holds __syncthreads up).
class Barrier {
 public:
  void reset(int participants) {
    alive_ = participants;
    arrived_ = 0;
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t phase = phase_;
    if (++arrived_ == alive_) {
      advance();
    } else {
      cv_.wait(lock, [&] { return phase_ != phase; });
    }
  }
  void leave() {
    std::lock_guard<std::mutex> lock(mu_);
    --alive_;
    if (alive_ > 0 && arrived_ == alive_) advance();
  }

 private:
  void advance() {
    arrived_ = 0;
    ++phase_;
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int alive_ = 0, arrived_ = 0;
  uint64_t phase_ = 0;
};

struct Warp {
  Barrier bar;
  double slot[kWarp];
};

struct ThreadCtx {
  uint3 tid{0, 0, 0}, bid{0, 0, 0};
  dim3 bdim, gdim;
  Barrier* block_bar = nullptr;
  Warp* warp = nullptr;
};
inline thread_local ThreadCtx ctx;

template <typename T> T shfl_xor(T v, int mask) {
  const int lane = static_cast<int>(ctx.tid.x) % kWarp;
  ctx.warp->slot[lane] = static_cast<double>(v);
  ctx.warp->bar.wait();
  const T r = static_cast<T>(ctx.warp->slot[lane ^ mask]);
  ctx.warp->bar.wait();
  return r;
}

inline float uint_as_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t float_as_uint(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline void check_aligned(const void* p, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
    std::fprintf(stderr, "emulator: misaligned 16-byte %s at %p\n", what, p);
    std::abort();
  }
}
template <typename T> T ldg(const T* p) {
  if constexpr (sizeof(T) == 16) check_aligned(p, "load");
  T v;
  std::memcpy(static_cast<void*>(&v), p, sizeof(T));
  return v;
}
template <typename T> void store16(T* p, const uint4& v) {
  check_aligned(p, "store");
  std::memcpy(p, &v, 16);
}

// Runs fn for every (block, thread) of a launch: one pool of blockDim threads walks the
// blocks in order, all threads of a block running concurrently.
inline void launch(dim3 grid, dim3 block, const std::function<void()>& fn) {
  const int threads = static_cast<int>(block.x * block.y * block.z);
  if (threads % kWarp != 0 || block.y != 1 || block.z != 1) {
    std::fprintf(stderr, "emulator: only 1-D blocks of whole warps are modelled\n");
    std::abort();
  }
  Barrier block_bar;
  std::vector<Warp> warps(threads / kWarp);
  auto reset = [&]() noexcept {
    block_bar.reset(threads);
    for (auto& w : warps) w.bar.reset(kWarp);
  };
  reset();
  std::barrier<decltype(reset)> between(threads, reset);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ctx.tid = make_uint3(static_cast<unsigned>(t), 0, 0);
      ctx.bdim = block;
      ctx.gdim = grid;
      ctx.block_bar = &block_bar;
      ctx.warp = &warps[t / kWarp];
      for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
          for (unsigned bx = 0; bx < grid.x; ++bx) {
            ctx.bid = make_uint3(bx, by, bz);
            fn();
            ctx.warp->bar.leave();
            block_bar.leave();
            between.arrive_and_wait();
          }
    });
  }
  for (auto& th : pool) th.join();
}

}  // namespace emu

#define threadIdx (emu::ctx.tid)
#define blockIdx (emu::ctx.bid)
#define blockDim (emu::ctx.bdim)
#define gridDim (emu::ctx.gdim)
#define __syncthreads() (emu::ctx.block_bar->wait())
#define __shfl_xor_sync(mask, v, o) emu::shfl_xor((v), (o))
#define __uint_as_float(u) emu::uint_as_float(u)
#define __float_as_uint(f) emu::float_as_uint(f)
#define cudaPeekAtLastError() cudaSuccess
#define __ldg(p) emu::ldg(p)
#define __ldcg(p) emu::ldg(p)   // coherent L2 load: the same value on a CPU
