// What the CPU emulators' command-line drivers (dev/kernels/*/emulator/driver.cpp) share: key=value
// arguments, whole-file reads, and exact-size allocations, so AddressSanitizer sees any overrun.
// A development tool, not shipped.
#pragma once

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace emu_driver {

// argv[1..] as key=value pairs.
inline std::map<std::string, std::string> parse_args(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    kv[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return kv;
}

inline std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// `bytes` bytes (at least 1), 256-byte aligned as cudaMalloc's are; never freed (one call per process).
inline void* exact_alloc(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes == 0 ? 1 : bytes) != 0) std::abort();
  return p;
}

inline char* exact_copy(const std::vector<char>& bytes) {
  char* p = static_cast<char*>(exact_alloc(bytes.size()));
  std::memcpy(p, bytes.data(), bytes.size());
  return p;
}

}  // namespace emu_driver
