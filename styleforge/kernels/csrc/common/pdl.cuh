// Programmatic dependent launch (Hopper): the device-side wait and trigger, and a launcher that
// sets the attribute. Pure CUDA, shared by the fused convolutions' kernels (conv3x3_tile.cuh,
// conv9x9.cu).
#pragma once

#include <cuda_runtime.h>

namespace styleforge {
namespace {

// Programmatic dependent launch (sm_90+; no-ops elsewhere). A kernel launched with programmatic
// stream serialization may start while the previous kernel in the stream still runs: it must
// wait (grid_dependency_wait) before it reads what that kernel writes, and it lets its own
// successor start early with allow_dependents_launch. Work before the wait may only touch inputs
// no earlier kernel writes (here: the packed weights) and shared memory.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_dependents_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Launch with programmatic stream serialization (see grid_dependency_wait) where `pdl` is set:
// on Hopper, for the fused convolutions.
template <typename Kernel, typename... Args>
cudaError_t launch_pdl(bool pdl, Kernel kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       Args... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  // Positional (grid, block, shared bytes, stream, attributes, count): the CPU emulator of the 9×9
  // kernels defines gridDim and blockDim as macros, so the members are not named here.
  cudaLaunchConfig_t cfg = {grid, block, smem, stream, attr, pdl ? 1u : 0u};
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

}  // namespace
}  // namespace styleforge
