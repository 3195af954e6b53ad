// The CPU stand-in for csrc/cuda/attention.cu: dev/kernels/conv9x9/emulator/warp_emu.h supplies
// the execution model (blocks in turn, a block's threads concurrent on std::threads,
// __syncthreads a std::barrier, fresh 0xff-poisoned shared memory per block, launch rewriting);
// this header adds the primitives the attention kernel uses beyond conv9x9's, each modelled
// from the PTX ISA independently of the kernel's own index math:
//   mma.sync.m16n8k16.row.col (f32 += bf16/f16 · bf16/f16) with B given as two registers;
//   ldmatrix.sync.m8n8.x4.trans.b16: lanes 8i..8i+7 give the row addresses of matrix i, and
//     lane l receives in register i the elements (row 2(l%4), column l/4) and (row 2(l%4)+1,
//     column l/4) of matrix i, the first in the low 16 bits;
//   shfl.sync.bfly (__shfl_xor_sync with a full mask);
//   cp.async 16 bytes with src-size 16 or 0 (zero fill): done at issue, so commit/wait are
//     no-ops — ordering bugs between cp.async and its readers are NOT modelled (racecheck is).
// As in warp_emu.h, one barrier phase per collective suffices: a lane only reads its own result
// slot, and only the next phase's completion (which waits for that lane) overwrites it.
// Shared addresses must be 16-byte aligned (ldmatrix rows, cp.async) and inside the block's
// buffer, global cp.async sources 16-byte aligned; anything else aborts. A test tool only.
#pragma once

#include "warp_emu.h"

#include <barrier>

#define STYLEFORGE_ATTN_WARP_EMULATION 1

namespace attn_emu {

enum Op { kLdmatrixTrans = 1, kMmaBf16 = 2, kMmaF16 = 3, kShfl = 4 };
constexpr int kMaxWarps = 32;

struct Warp;
struct Done {
  Warp* w;
  void operator()() noexcept;
};

struct Warp {
  int op[emu::kWarp] = {};
  uint32_t a[emu::kWarp][4] = {};
  uint32_t b[emu::kWarp][2] = {};
  float c[emu::kWarp][4] = {};
  const unsigned char* addr[emu::kWarp] = {};
  float value[emu::kWarp] = {};
  int mask[emu::kWarp] = {};
  uint32_t out[emu::kWarp][4] = {};
  float d[emu::kWarp][4] = {};
  std::barrier<Done> bar{emu::kWarp, Done{this}};
};

inline Warp warps[kMaxWarps];

inline void fail(const char* what, const void* p) {
  std::fprintf(stderr, "attention emulator: %s (%p)\n", what, p);
  std::abort();
}

inline bool in_smem(const void* p, size_t bytes) {
  const auto* c = static_cast<const unsigned char*>(p);
  return c >= emu::ctx.warp->smem_lo && c + bytes <= emu::ctx.warp->smem_hi;
}

inline void Done::operator()() noexcept {
  const int op = w->op[0];
  for (int l = 1; l < emu::kWarp; ++l)
    if (w->op[l] != op) fail("lanes of one warp issued different collectives", nullptr);
  if (op == kShfl) {
    for (int l = 0; l < emu::kWarp; ++l) w->d[l][0] = w->value[l ^ w->mask[l]];
    return;
  }
  if (op == kLdmatrixTrans) {
    for (int l = 0; l < emu::kWarp; ++l) {
      for (int i = 0; i < 4; ++i) {
        uint16_t lo, hi;
        std::memcpy(&lo, w->addr[8 * i + 2 * (l % 4)] + (l / 4) * 2, 2);
        std::memcpy(&hi, w->addr[8 * i + 2 * (l % 4) + 1] + (l / 4) * 2, 2);
        w->out[l][i] = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
      }
    }
    return;
  }
  const bool bf16 = op == kMmaBf16;
  auto A = [&](int m, int k) {
    return emu::bits_to_float(emu::half_of(w->a[(m % 8) * 4 + (k % 8) / 2][(m >= 8) + 2 * (k >= 8)], k % 2), bf16);
  };
  auto B = [&](int k, int n) {
    return emu::bits_to_float(emu::half_of(w->b[4 * n + (k % 8) / 2][k >= 8], k % 2), bf16);
  };
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      const int lane = (m % 8) * 4 + n / 2, e = 2 * (m >= 8) + n % 2;
      double s = w->c[lane][e];
      for (int k = 0; k < 16; ++k) s += static_cast<double>(A(m, k)) * B(k, n);
      w->d[lane][e] = static_cast<float>(s);
    }
  }
}

inline Warp& warp() { return warps[emu::ctx.tid.x / emu::kWarp]; }

}  // namespace attn_emu

namespace styleforge {
namespace {

inline void cp_async16(void* smem, const void* gmem, bool valid) {
  if (reinterpret_cast<uintptr_t>(smem) % 16 != 0 || !attn_emu::in_smem(smem, 16))
    attn_emu::fail("cp.async destination misaligned or outside shared memory", smem);
  if (reinterpret_cast<uintptr_t>(gmem) % 16 != 0) attn_emu::fail("cp.async source misaligned", gmem);
  if (valid) std::memcpy(smem, gmem, 16);
  else std::memset(smem, 0, 16);
}
inline void cp_async_commit() {}
template <int N> inline void cp_async_wait() {}

inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
  if (reinterpret_cast<uintptr_t>(smem) % 16 != 0 || !attn_emu::in_smem(smem, 16))
    attn_emu::fail("ldmatrix row address misaligned or outside shared memory", smem);
  attn_emu::Warp& w = attn_emu::warp();
  const int l = emu::lane();
  w.op[l] = attn_emu::kLdmatrixTrans;
  w.addr[l] = static_cast<const unsigned char*>(smem);
  w.bar.arrive_and_wait();
  for (int i = 0; i < 4; ++i) r[i] = w.out[l][i];
}

template <typename T> inline void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  attn_emu::Warp& w = attn_emu::warp();
  const int l = emu::lane();
  w.op[l] = std::is_same_v<T, __nv_bfloat16> ? attn_emu::kMmaBf16 : attn_emu::kMmaF16;
  for (int i = 0; i < 4; ++i) {
    w.a[l][i] = a[i];
    w.c[l][i] = d[i];
  }
  w.b[l][0] = b0;
  w.b[l][1] = b1;
  w.bar.arrive_and_wait();
  for (int i = 0; i < 4; ++i) d[i] = w.d[l][i];
}

inline float shfl_xor(float v, int mask) {
  attn_emu::Warp& w = attn_emu::warp();
  const int l = emu::lane();
  w.op[l] = attn_emu::kShfl;
  w.value[l] = v;
  w.mask[l] = mask;
  w.bar.arrive_and_wait();
  return w.d[l][0];
}

}  // namespace
}  // namespace styleforge
