// Launch helpers of the tensor-core kernels: opting a kernel into more than 48 KB of dynamic shared
// memory, once per (device, kernel), with max_carveout also asking for the largest shared-memory
// carveout (the driver otherwise sizes it for one CTA, ncu: 135 KB for a 107 KB CTA, and a kernel
// meant to run two CTAs per SM runs one); a persistent grid's size; and whether the device runs the
// build's sm_90a code. Pure CUDA (runtime header only). The attribute is per device and must stay
// out of the launch path, so a CUDA graph capture never sees it twice.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

namespace styleforge {
namespace {

template <typename Kernel>
cudaError_t allow_smem(Kernel kernel, size_t bytes, int kernel_id, bool max_carveout = false) {
  constexpr int kMaxDevices = 64, kKernels = 16;
  static std::mutex mutex;
  static bool done[kMaxDevices][kKernels] = {};
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const std::lock_guard<std::mutex> lock(mutex);
  if (device >= 0 && device < kMaxDevices && done[device][kernel_id]) return cudaSuccess;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (err == cudaSuccess && max_carveout) {
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  }
  if (err == cudaSuccess && device >= 0 && device < kMaxDevices) done[device][kernel_id] = true;
  return err;
}

// CTAs of `kernel` (block `threads`, `smem` dynamic bytes) that the device runs at once: a
// persistent grid's size. Once per (device, kernel_id), after allow_smem.
template <typename Kernel>
cudaError_t resident_ctas(Kernel kernel, int threads, size_t smem, int kernel_id, int& ctas) {
  constexpr int kMaxDevices = 64, kKernels = 16;
  static std::mutex mutex;
  static int cached[kMaxDevices][kKernels] = {};
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const std::lock_guard<std::mutex> lock(mutex);
  const bool slot = device >= 0 && device < kMaxDevices;
  if (slot && cached[device][kernel_id] > 0) {
    ctas = cached[device][kernel_id];
    return cudaSuccess;
  }
  int per_sm = 0, sms = 0;
  err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  ctas = per_sm * sms > 0 ? per_sm * sms : 1;
  if (slot) cached[device][kernel_id] = ctas;
  return cudaSuccess;
}


// Whether this build has sm_90a code for the device: compute capability 9.0 and a binary for it
// (`probe`, any kernel of the file), not a JIT of older PTX. Cached per device and probe type.
template <typename Kernel>
bool device_runs_sm90a(Kernel probe) {
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
                    major == 9 && minor == 0 && cudaFuncGetAttributes(&attr, probe) == cudaSuccess &&
                    attr.binaryVersion == 90;
    s = ok ? 1 : -1;
    state[dev].store(s, std::memory_order_relaxed);
  }
  return s > 0;
}

}  // namespace
}  // namespace styleforge
