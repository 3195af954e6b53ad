// Command-line driver for the emulated attention kernel: reads raw buffers, calls the real host
// launcher (attention_launch) and writes the output buffer.
// Usage: attention_emu key=value ... (emulate.py writes the files and reads the result back).
// Every buffer is its own exact-size allocation so AddressSanitizer sees any overrun; the output
// starts filled with 0xff bytes (NaN) to expose elements the kernel never wrote.
#include "attn_emu.h"

#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include ATTENTION_SOURCE

namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

char* exact_copy(const std::vector<char>& bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes.empty() ? 1 : bytes.size()) != 0) std::abort();
  std::memcpy(p, bytes.data(), bytes.size());
  return static_cast<char*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    kv[a.substr(0, eq)] = a.substr(eq + 1);
  }
  auto num = [&](const char* k) { return std::stoll(kv.at(k)); };
  styleforge::AttentionArgs args;
  args.dtype = static_cast<styleforge::AttnDtype>(num("dtype"));
  args.B = num("B");
  args.H = num("H");
  args.Nq = num("Nq");
  args.Nk = num("Nk");
  args.D = static_cast<int>(num("D"));
  args.scale = std::stof(kv.at("scale"));
  char* q = exact_copy(read_file(kv.at("q")));
  char* k = exact_copy(read_file(kv.at("k")));
  char* v = exact_copy(read_file(kv.at("v")));
  char* mask = kv.count("mask") ? exact_copy(read_file(kv.at("mask"))) : nullptr;
  args.q = q;
  args.k = k;
  args.v = v;
  args.key_padding_mask = reinterpret_cast<const uint8_t*>(mask);
  const size_t out_bytes = static_cast<size_t>(args.B * args.H * args.Nq * args.D) * 2;
  char* out = exact_copy(std::vector<char>(out_bytes, static_cast<char>(0xff)));
  args.out = out;
  const cudaError_t err = styleforge::attention_launch(args, nullptr);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "attention_launch returned error %d\n", static_cast<int>(err));
    return 3;
  }
  std::ofstream(kv.at("out"), std::ios::binary).write(out, static_cast<std::streamsize>(out_bytes));
  free(q);
  free(k);
  free(v);
  free(mask);
  free(out);
  return 0;
}
