// Command-line driver for the emulated conv9x9 kernels: reads raw buffers, calls the real host
// launcher (conv9x9_launch) and writes the output buffer.
// Usage: conv9x9_emu key=value ... (emulate.py writes the files and reads the result back).
// Every buffer is its own exact-size allocation so AddressSanitizer sees any overrun; the output
// starts filled with 0xff bytes (NaN in every dtype) to expose elements the kernel never wrote.
// With norm=1 (conv1's IN1 statistics) it also writes scale and shift, runs the launch `repeat`
// times on one zeroed state, and fails (exit 4) unless every launch leaves the state zero and
// writes the same bytes.
#include "warp_emu.h"

#include <map>
#include <string>

#include "emulator_driver.h"

#include CONV9X9_SOURCE

using emu_driver::exact_copy;
using emu_driver::read_file;

int main(int argc, char** argv) {
  const std::map<std::string, std::string> kv = emu_driver::parse_args(argc, argv);
  auto num = [&](const char* k) { return std::stoll(kv.at(k)); };
  styleforge::Conv9x9Args args;
  args.dtype = static_cast<styleforge::ConvDtype>(num("dtype"));
  args.N = num("N");
  args.H = num("H");
  args.W = num("W");
  args.pad = static_cast<int>(num("pad"));
  args.x_float32 = num("x_float32") != 0;
  args.stride_n = num("sn");
  args.stride_c = num("sc");
  args.stride_h = num("sh");
  args.stride_w = num("sw");
  args.cin = static_cast<int>(num("cin"));
  args.cout = static_cast<int>(num("cout"));
  args.out_float32 = num("out_float32") != 0;
  args.num_sms = static_cast<int>(num("num_sms"));
  char* x = exact_copy(read_file(kv.at("x")));
  char* w = exact_copy(read_file(kv.at("weight")));
  char* b = kv.count("bias") ? exact_copy(read_file(kv.at("bias"))) : nullptr;
  char* scale = kv.count("scale") ? exact_copy(read_file(kv.at("scale"))) : nullptr;
  char* shift = kv.count("shift") ? exact_copy(read_file(kv.at("shift"))) : nullptr;
  args.scale = reinterpret_cast<const float*>(scale);
  args.shift = reinterpret_cast<const float*>(shift);
  args.x = x;
  args.weight = w;
  args.bias = reinterpret_cast<const float*>(b);
  const int64_t ho = args.H + 2 * args.pad - 8, wo = args.W + 2 * args.pad - 8;
  const size_t out_bytes = static_cast<size_t>(args.N * ho * wo * args.cout) * (args.out_float32 ? 4 : 2);
  char* out = exact_copy(std::vector<char>(out_bytes, static_cast<char>(0xff)));
  args.out = out;
  const bool norm = kv.count("norm") && num("norm") != 0;
  const size_t vec_bytes = static_cast<size_t>(args.N) * args.cout * sizeof(float);
  const size_t state_bytes = styleforge::norm_state_bytes(args.N, args.cout);
  char* nw = kv.count("norm_weight") ? exact_copy(read_file(kv.at("norm_weight"))) : nullptr;
  char* nb = kv.count("norm_bias") ? exact_copy(read_file(kv.at("norm_bias"))) : nullptr;
  char* nscale = exact_copy(std::vector<char>(vec_bytes, static_cast<char>(0xff)));
  char* nshift = exact_copy(std::vector<char>(vec_bytes, static_cast<char>(0xff)));
  char* state = exact_copy(std::vector<char>(state_bytes, 0));
  if (norm) {
    args.norm.weight = reinterpret_cast<const float*>(nw);
    args.norm.bias = reinterpret_cast<const float*>(nb);
    args.norm.eps = std::stof(kv.at("eps"));
    args.norm.scale = reinterpret_cast<float*>(nscale);
    args.norm.shift = reinterpret_cast<float*>(nshift);
    args.norm_state = state;
  }
  const int repeat = kv.count("repeat") ? static_cast<int>(num("repeat")) : 1;
  std::vector<char> first;
  for (int r = 0; r < repeat; ++r) {
    const cudaError_t err = styleforge::conv9x9_launch(args, nullptr);
    if (err != cudaSuccess) {
      std::fprintf(stderr, "conv9x9_launch returned error %d\n", static_cast<int>(err));
      return 3;
    }
    if (!norm) continue;
    for (size_t i = 0; i < state_bytes; ++i) {
      if (state[i] != 0) {
        std::fprintf(stderr, "launch %d left the norm state non-zero at byte %zu\n", r, i);
        return 4;
      }
    }
    std::vector<char> now(out, out + out_bytes);
    now.insert(now.end(), nscale, nscale + vec_bytes);
    now.insert(now.end(), nshift, nshift + vec_bytes);
    if (r == 0) {
      first = now;
    } else if (now != first) {
      std::fprintf(stderr, "launch %d wrote different bytes than launch 0\n", r);
      return 4;
    }
  }
  std::ofstream(kv.at("out"), std::ios::binary).write(out, static_cast<std::streamsize>(out_bytes));
  if (norm) {
    std::ofstream(kv.at("scale_out"), std::ios::binary).write(nscale, static_cast<std::streamsize>(vec_bytes));
    std::ofstream(kv.at("shift_out"), std::ios::binary).write(nshift, static_cast<std::streamsize>(vec_bytes));
  }
  for (char* buf : {x, w, b, scale, shift, out, nw, nb, nscale, nshift, state}) free(buf);
  return 0;
}
