// Opting a kernel into more than 48 KB of dynamic shared memory, once per (device, kernel); with
// max_carveout, also asking for the largest shared-memory carveout: the driver otherwise sizes it
// for one CTA (ncu: 135 KB for a 107 KB CTA), and a kernel meant to run two CTAs per SM runs one.
// Pure CUDA (runtime header only), shared by the tensor-core kernels' launchers. The attribute is
// per device and must stay out of the launch path, so a CUDA graph capture never sees it twice.
#pragma once

#include <cuda_runtime.h>

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

}  // namespace
}  // namespace styleforge
