// Device facts the bindings read once per device (torch side: uses c10's error checks). The
// launchers size their grids by the multiprocessor count, and no runtime query should sit
// inside a CUDA graph capture, so the first call per device caches it. Also the kernel-choice
// switches between a Hopper wgmma kernel and its portable mma.sync twin.
#pragma once

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <c10/cuda/CUDAException.h>

namespace styleforge {

inline int multiprocessor_count(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, int> counts;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = counts.find(device);
  if (found != counts.end()) return found->second;
  int count = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  counts.emplace(device, count);
  return count;
}

// Whether the device launches with programmatic dependent launch (compute capability 9.0+).
inline bool supports_pdl(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, bool> known;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = known.find(device);
  if (found != known.end()) return found->second;
  int major = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  known.emplace(device, major >= 9);
  return major >= 9;
}

// A kernel-choice switch (STYLEFORGE_CONV1_KERNEL, STYLEFORGE_ATTENTION_KERNEL): unset, empty or
// "auto" allows the Hopper wgmma kernel where the device and the binary run it; "mma" keeps the
// portable mma.sync kernel. Read at every call, so a benchmark or a test can compare the two in one
// process.
inline bool wgmma_kernel_allowed(const char* variable) {
  const char* v = std::getenv(variable);
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return true;
  TORCH_CHECK(std::strcmp(v, "mma") == 0, variable, " must be auto or mma, got '", v, "'");
  return false;
}

}  // namespace styleforge
