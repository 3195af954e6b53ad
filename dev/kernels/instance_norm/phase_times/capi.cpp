// A C entry to the InstanceNorm launcher for dev/kernels/instance_norm/phase_times.py: no torch, so
// the instrumented build (STYLEFORGE_SINGLE_PHASE_TIMES) loads with ctypes next to the package's
// own extension without registering the op twice. Dev only.
#include <cstddef>
#include <cstdint>

#include "instance_norm.h"

namespace styleforge {
cudaError_t instance_norm_single_phase_times(unsigned long long* host);
}

extern "C" {

// Channels_last x/out of (N, C, H, W); weight/bias fp32 or null; no residual. Returns the
// workspace bytes needed when ws is null, else launches and returns the cudaError_t.
long long sf_instance_norm(int dtype, void* x, void* out, const float* weight, const float* bias,
                           long long n, long long c, long long h, long long w, int pad, int upsample,
                           int relu, int num_sms, int path, void* ws, void* stream) {
  styleforge::InstanceNormArgs a;
  a.dtype = static_cast<styleforge::ScalarKind>(dtype);
  a.channels_last = true;
  a.x = x;
  a.out = out;
  a.weight = weight;
  a.bias = bias;
  a.N = n;
  a.C = c;
  a.H = h;
  a.W = w;
  a.pad = pad;
  a.upsample = upsample;
  a.relu = relu != 0;
  a.num_sms = num_sms;
  a.path = static_cast<styleforge::InstanceNormArgs::Path>(path);
  if (ws == nullptr) return static_cast<long long>(styleforge::instance_norm_workspace_bytes(a));
  return styleforge::instance_norm_launch(a, ws, static_cast<cudaStream_t>(stream));
}

int sf_phase_times(unsigned long long* host) { return styleforge::instance_norm_single_phase_times(host); }
}
