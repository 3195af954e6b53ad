// Command-line driver for the emulated conv9x9 kernels: reads raw buffers, calls the real host
// launcher (conv9x9_launch) and writes the output buffer.
// Usage: conv9x9_emu key=value ... (emulate.py writes the files and reads the result back).
// Every buffer is its own exact-size allocation so AddressSanitizer sees any overrun; the output
// starts filled with 0xff bytes (NaN in every dtype) to expose elements the kernel never wrote.
#include "warp_emu.h"

#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include CONV9X9_SOURCE

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
  styleforge::Conv9x9Args args;
  args.dtype = static_cast<styleforge::ConvDtype>(num("dtype"));
  args.N = num("N");
  args.Hp = num("Hp");
  args.Wp = num("Wp");
  args.cin = static_cast<int>(num("cin"));
  args.cout = static_cast<int>(num("cout"));
  args.out_float32 = num("out_float32") != 0;
  args.num_sms = static_cast<int>(num("num_sms"));
  char* x = exact_copy(read_file(kv.at("x")));
  char* w = exact_copy(read_file(kv.at("weight")));
  char* b = kv.count("bias") ? exact_copy(read_file(kv.at("bias"))) : nullptr;
  args.x = x;
  args.weight = w;
  args.bias = reinterpret_cast<const float*>(b);
  const size_t out_bytes =
      static_cast<size_t>(args.N * (args.Hp - 8) * (args.Wp - 8) * args.cout) * (args.out_float32 ? 4 : 2);
  char* out = exact_copy(std::vector<char>(out_bytes, static_cast<char>(0xff)));
  args.out = out;
  const cudaError_t err = styleforge::conv9x9_launch(args, nullptr);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "conv9x9_launch returned error %d\n", static_cast<int>(err));
    return 3;
  }
  std::ofstream(kv.at("out"), std::ios::binary).write(out, static_cast<std::streamsize>(out_bytes));
  free(x);
  free(w);
  free(b);
  free(out);
  return 0;
}
