// Command-line driver for the emulated kernels: reads raw buffers, calls the real host launcher
// (instance_norm_workspace_bytes / instance_norm_launch) and writes the output buffer.
// Usage: emu key=value ... (see emulate.py, which writes the files and reads the result).
// Every buffer is its own exact-size allocation so AddressSanitizer sees any overrun; the output
// and the workspace start filled with 0xff bytes (NaN in every dtype) to expose unwritten elements.
#include "cuda_emu.h"

#include <map>
#include <string>

#include "emulator_driver.h"

#include INSTANCE_NORM_SOURCE

using emu_driver::exact_alloc;
using emu_driver::read_file;

int main(int argc, char** argv) {
  const std::map<std::string, std::string> kv = emu_driver::parse_args(argc, argv);
  auto num = [&](const char* k) { return std::stoll(kv.at(k)); };
  styleforge::InstanceNormArgs args;
  args.dtype = static_cast<styleforge::ScalarKind>(num("dtype"));
  const size_t es = args.dtype == styleforge::ScalarKind::kFloat32 ? 4 : 2;
  args.channels_last = num("channels_last") != 0;
  args.N = num("N");
  args.C = num("C");
  args.H = num("H");
  args.W = num("W");
  args.pad = static_cast<int>(num("pad"));
  args.upsample = static_cast<int>(num("upsample"));
  args.relu = num("relu") != 0;
  args.eps = std::stod(kv.at("eps"));
  args.num_sms = static_cast<int>(num("num_sms"));

  const int64_t x_offset = num("x_offset");
  const auto x_bytes = read_file(kv.at("x"));
  char* x_buf = static_cast<char*>(exact_alloc(x_bytes.size()));
  std::memcpy(x_buf, x_bytes.data(), x_bytes.size());
  args.x = x_buf + x_offset * es;

  float* w_buf = nullptr;
  float* b_buf = nullptr;
  if (kv.count("weight")) {
    const auto bytes = read_file(kv.at("weight"));
    w_buf = static_cast<float*>(exact_alloc(bytes.size()));
    std::memcpy(w_buf, bytes.data(), bytes.size());
    args.weight = w_buf;
  }
  if (kv.count("bias")) {
    const auto bytes = read_file(kv.at("bias"));
    b_buf = static_cast<float*>(exact_alloc(bytes.size()));
    std::memcpy(b_buf, bytes.data(), bytes.size());
    args.bias = b_buf;
  }
  char* r_buf = nullptr;
  if (kv.count("residual")) {
    const auto bytes = read_file(kv.at("residual"));
    r_buf = static_cast<char*>(exact_alloc(bytes.size()));
    std::memcpy(r_buf, bytes.data(), bytes.size());
    args.residual = r_buf + num("res_offset") * es;
    args.res_stride[0] = num("rs0");
    args.res_stride[1] = num("rs1");
    args.res_stride[2] = num("rs2");
    args.res_stride[3] = num("rs3");
  }
  const int64_t out_numel =
      args.N * args.C * (args.H * args.upsample + 2 * args.pad) * (args.W * args.upsample + 2 * args.pad);
  const size_t out_bytes = static_cast<size_t>(out_numel) * es;
  char* out_buf = static_cast<char*>(exact_alloc(out_bytes));
  std::memset(out_buf, 0xff, out_bytes);
  args.out = out_buf;

  const size_t ws_bytes = styleforge::instance_norm_workspace_bytes(args);
  char* ws = static_cast<char*>(exact_alloc(ws_bytes));
  std::memset(ws, 0xff, ws_bytes);
  const cudaError_t err = styleforge::instance_norm_launch(args, ws, nullptr);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "instance_norm_launch returned error %d\n", static_cast<int>(err));
    return 3;
  }
  std::ofstream(kv.at("out"), std::ios::binary).write(out_buf, static_cast<std::streamsize>(out_bytes));
  // The plan the launcher chose, so tests can check that a case exercised the path it names.
  const auto plan = styleforge::make_plan(styleforge::normalised(args), static_cast<int>(es));
  std::printf("workspace_bytes=%zu chunks=%d stats_vec=%d stats_tiles=%d apply_vec=%d apply_tiles=%d "
              "col_tiles=%d\n", ws_bytes, plan.chunks, plan.stats_vec, plan.stats_tiles, plan.apply_vec,
              plan.apply_tiles, plan.col_tiles);
  free(x_buf);
  free(w_buf);
  free(b_buf);
  free(r_buf);
  free(out_buf);
  free(ws);
  return 0;
}
