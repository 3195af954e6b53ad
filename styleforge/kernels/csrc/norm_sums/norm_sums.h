// The InstanceNorm hand-off between a convolution and the layer after it, host side: what the
// affine is (NormHandoff) and the in-kernel form's state.
//
// Two forms. The separate one: the convolution writes per-tile (sum, M2) partials and a hand-off
// kernel merges them into (scale, shift) (conv3x3.cu, moments_launch). The in-kernel one, when the
// caller passes a state: every CTA adds its tiles' moments to fp64 sums Σx, Σx² with atomics, and
// the grid's last CTA to finish turns them into (scale, shift) and leaves the state zero again, so no
// kernel boundary and no merge pass sit between the convolution and its consumer
// (norm_sums.cuh). Plain C++, no torch, no CUDA headers: the bindings and both kernel files
// include it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace styleforge {

// The affine the hand-off writes: InstanceNorm(x; weight, bias, eps) = x·scale + shift per
// (sample, channel).
struct NormHandoff {
  const float* weight = nullptr;   // (C,) fp32 or null (= 1)
  const float* bias = nullptr;     // (C,) fp32 or null (= 0)
  float eps = 1e-5f;
  float* scale = nullptr;          // (N, C) fp32, written
  float* shift = nullptr;          // (N, C) fp32, written
};

// The in-kernel hand-off's state: a counter of CTAs done, then kNormSumCopies copies of the sums,
// each [2][N][C] fp64 (Σx, then Σx²). A CTA adds to copy blockIdx % kNormSumCopies, so that an
// address takes 1/8 of the atomics. Zero before the first launch (a zero-filled allocation); every
// launch leaves it zero, so one state serves a stream's launches, graph replays included.
// Launches that may overlap need separate states.
constexpr int kNormSumCopies = 8;
constexpr size_t kNormStateHeaderBytes = 256;
constexpr size_t norm_state_bytes(int64_t N, int C) {
  return kNormStateHeaderBytes + static_cast<size_t>(kNormSumCopies) * 2 * static_cast<size_t>(N) * C * sizeof(double);
}

}  // namespace styleforge
