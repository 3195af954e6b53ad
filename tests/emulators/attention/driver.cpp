// Command-line driver for the emulated attention kernel: reads raw buffers, calls the real host
// launcher (attention_launch) and writes the output buffer.
// Usage: attention_emu key=value ... (emulate.py writes the files and reads the result back).
// Every buffer is its own exact-size allocation so AddressSanitizer sees any overrun; the output
// starts filled with 0xff bytes (NaN) to expose elements the kernel never wrote.
#include "attn_emu.h"

#include <map>
#include <string>

#include "emulator_driver.h"

#include ATTENTION_SOURCE

using emu_driver::exact_copy;
using emu_driver::read_file;

int main(int argc, char** argv) {
  const std::map<std::string, std::string> kv = emu_driver::parse_args(argc, argv);
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
