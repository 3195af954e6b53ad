// Device facts the bindings read once per device (torch side: uses c10's error checks). The
// launchers size their grids by the multiprocessor count, and no runtime query should sit
// inside a CUDA graph capture, so the first call per device caches it. Also the kernel-choice
// switches between a Hopper wgmma kernel and its portable mma.sync twin.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include <c10/cuda/CUDAException.h>

namespace styleforge {

// cudaDeviceGetAttribute, asked once per (device, attribute).
inline int device_attribute(int device, cudaDeviceAttr attribute) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, int> known;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device, static_cast<int>(attribute));
  const auto found = known.find(key);
  if (found != known.end()) return found->second;
  int value = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  known.emplace(key, value);
  return value;
}

inline int multiprocessor_count(int device) { return device_attribute(device, cudaDevAttrMultiProcessorCount); }

// Whether the device launches with programmatic dependent launch (compute capability 9.0+).
inline bool supports_pdl(int device) { return device_attribute(device, cudaDevAttrComputeCapabilityMajor) >= 9; }

// The L2 size in bytes: the fused convolutions mark activations that fit it evict-first
// (cache_hints.cuh). STYLEFORGE_L2_HINT_BYTES, read at every call, overrides it (0: no launch marks
// its activations), so that a test can compare the two forms in one process.
inline int64_t l2_cache_bytes(int device) {
  const char* v = std::getenv("STYLEFORGE_L2_HINT_BYTES");
  if (v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long long bytes = std::strtoll(v, &end, 10);
    TORCH_CHECK(*end == '\0' && bytes >= 0, "STYLEFORGE_L2_HINT_BYTES must be a byte count, got '", v, "'");
    return bytes;
  }
  return device_attribute(device, cudaDevAttrL2CacheSize);
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
