// Hopper (sm_90a) PTX wrappers for the wgmma kernels: mbarriers, bulk copies into shared memory,
// 128-byte-swizzle matrix descriptors and the warpgroup MMA fence/commit/wait discipline.
// Pure CUDA, no torch. Everything is defined only when compiling device code for sm_90a
// (STYLEFORGE_SM90A = 1); a file that includes this builds for other GPUs with STYLEFORGE_SM90A = 0 and keeps its
// kernel bodies empty. Written from the PTX ISA sections "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate", "mbarrier" and "cp.async.bulk".
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define STYLEFORGE_SM90A 1
#else
#define STYLEFORGE_SM90A 0
#endif

#if STYLEFORGE_SM90A
namespace styleforge {
namespace sm90 {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// `bytes` (a multiple of 16) from global `src` to shared `dst`, both 16-byte aligned, completing
// on mbarrier `bar` (which must expect them).
__device__ __forceinline__ void bulk_copy_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(bar)
               : "memory");
}

// Matrix descriptor for the 128-byte swizzle (PTX ISA "Matrix Descriptor Format"): start address,
// leading and stride byte offsets, all >> 4, layout type 1 in bits 62–63, base offset 0 (tiles
// are 1024-byte aligned).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32) | (1ull << 62);
}

// Orders this thread's generic-proxy writes to shared memory before later async-proxy reads of it
// (a wgmma's B operand written with plain stores): each writer fences, then the CTA barrier.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// Keeps the compiler from moving register reads/writes across a wgmma issue or wait: registers a
// wgmma reads or writes asynchronously must stay untouched (and allocated) until its wait.
template <int N>
__device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void reg_fence(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c) asm volatile("" : "+r"(r[i][c])::"memory");
}

template <int M, int N>
__device__ __forceinline__ void reg_fence(float (&r)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i) reg_fence(r[i]);
}
template <int M, int N>
__device__ __forceinline__ void reg_fence(uint32_t (&r)[M][N][4]) {
#pragma unroll
  for (int i = 0; i < M; ++i) reg_fence(r[i]);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

#define STYLEFORGE_WG_F8(d, i)                                                                                         \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define STYLEFORGE_WG_F16(d, i) STYLEFORGE_WG_F8(d, i), STYLEFORGE_WG_F8(d, i + 8)
#define STYLEFORGE_WG_F32(d, i) STYLEFORGE_WG_F16(d, i), STYLEFORGE_WG_F16(d, i + 16)
#define STYLEFORGE_WG_ACC16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define STYLEFORGE_WG_ACC32                                                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define STYLEFORGE_WG_ACC64                                                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "  \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "  \
  "%62, %63}"
// One wgmma with A from registers; NACC accumulator operands come first, so the A registers, the B
// descriptor and the scale-d flag are operands NACC .. NACC + 5. scale-d is a predicate operand,
// set from a register holding 1 (accumulate into D).
#define STYLEFORGE_WG_RS(N, TY, TRANS_B, ACC, A0, A1, A2, A3, B, P, ...)                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" P ", 0;\n"                                       \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " ACC                   \
               ", {%" A0 ", %" A1 ", %" A2 ", %" A3 "}, %" B ", p, 1, 1, " #TRANS_B ";\n}\n"            \
               : __VA_ARGS__                                                                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))

// D (m64 × nN, f32) += A · B: A from registers (per warp the m16n8k16 A fragment of its 16 rows),
// B from shared memory through descriptor b, K-major (no transpose). N = 2 × the accumulator count.
template <bool kBF16>
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kBF16) {
    STYLEFORGE_WG_RS(128, "bf16", 0, STYLEFORGE_WG_ACC64, "64", "65", "66", "67", "68", "69", STYLEFORGE_WG_F32(d, 0), STYLEFORGE_WG_F32(d, 32));
  } else {
    STYLEFORGE_WG_RS(128, "f16", 0, STYLEFORGE_WG_ACC64, "64", "65", "66", "67", "68", "69", STYLEFORGE_WG_F32(d, 0), STYLEFORGE_WG_F32(d, 32));
  }
}
template <bool kBF16>
__device__ __forceinline__ void wgmma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kBF16) {
    STYLEFORGE_WG_RS(64, "bf16", 0, STYLEFORGE_WG_ACC32, "32", "33", "34", "35", "36", "37", STYLEFORGE_WG_F32(d, 0));
  } else {
    STYLEFORGE_WG_RS(64, "f16", 0, STYLEFORGE_WG_ACC32, "32", "33", "34", "35", "36", "37", STYLEFORGE_WG_F32(d, 0));
  }
}
template <bool kBF16>
__device__ __forceinline__ void wgmma_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kBF16) {
    STYLEFORGE_WG_RS(32, "bf16", 0, STYLEFORGE_WG_ACC16, "16", "17", "18", "19", "20", "21", STYLEFORGE_WG_F16(d, 0));
  } else {
    STYLEFORGE_WG_RS(32, "f16", 0, STYLEFORGE_WG_ACC16, "16", "17", "18", "19", "20", "21", STYLEFORGE_WG_F16(d, 0));
  }
}
#undef STYLEFORGE_WG_RS

// Per-thread register limit of the executing warpgroup (every warp of it executes the same one):
// a producer warpgroup gives its registers to the consumers.
template <int R>
__device__ __forceinline__ void regs_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R)); }
template <int R>
__device__ __forceinline__ void regs_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R)); }

}  // namespace sm90
}  // namespace styleforge
#endif  // STYLEFORGE_SM90A
