// A captured frame's first and last kernels pointed at each call's own image and output.
//
// The engine replays one CUDA graph per input shape. Copying every call's image into the graph's
// static input and cloning its static output into a fresh tensor cost two more kernels and their
// launch gaps per frame (docs/perf-history.md). Where conv1 is a
// 9×9 kernel of ours that reads the static input and the head one that writes the static output,
// the engine instead rewrites those two kernel nodes' pointers in the executable graph before each
// replay (cudaGraphExecKernelNodeSetParams affects only launches made after it). Plain C extern
// functions, called through ctypes by styleforge/engine/graph_io.py; CUDA runtime only, no torch.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "../conv9x9/conv9x9.h"
#include "../conv9x9/conv9x9_sm90.h"

namespace styleforge {
namespace {

Conv9x9Role role_of(const void* func) {
  if (conv9x9_sm90_is_kernel(func)) return Conv9x9Role::kImage;
  return conv9x9_kernel_role(func);
}

// The pointer at `offset` in the kernel node's one argument (a Params).
uintptr_t param_pointer(const cudaKernelNodeParams& params, size_t offset) {
  uintptr_t value = 0;
  std::memcpy(&value, static_cast<const char*>(params.kernelParams[0]) + offset, sizeof value);
  return value;
}

}  // namespace
}  // namespace styleforge

extern "C" {

// Finds, in a captured (kept) graph, the one 9×9 kernel node that reads `image` through Params::x and
// the one that writes `output` through Params::out. Returns a bit mask (1: *image_node set, 2:
// *output_node set; a role found on more than one node is left unset), or −1 − the CUDA error.
int sf_graph_io_nodes(uintptr_t graph, uintptr_t image, uintptr_t output, uintptr_t* image_node,
                      uintptr_t* output_node) {
  using namespace styleforge;
  const cudaGraph_t g = reinterpret_cast<cudaGraph_t>(graph);
  size_t count = 0;
  cudaError_t err = cudaGraphGetNodes(g, nullptr, &count);
  if (err != cudaSuccess) return -1 - static_cast<int>(err);
  std::vector<cudaGraphNode_t> nodes(count);
  err = cudaGraphGetNodes(g, nodes.data(), &count);
  if (err != cudaSuccess) return -1 - static_cast<int>(err);
  const Conv9x9ParamsLayout layout = conv9x9_params_layout();
  int found_image = 0, found_output = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams params;
    if (cudaGraphKernelNodeGetParams(node, &params) != cudaSuccess) {
      // A kernel launched through the driver API (cuDNN's) has no runtime function to report
      // (cudaErrorInvalidDeviceFunction): not ours. Clear the error so that no later launch check
      // reads it as its own.
      (void)cudaGetLastError();
      continue;
    }
    const Conv9x9Role role = role_of(params.func);
    if (role == Conv9x9Role::kImage && param_pointer(params, layout.x_offset) == image) {
      ++found_image;
      *image_node = reinterpret_cast<uintptr_t>(node);
    } else if (role == Conv9x9Role::kOutput && param_pointer(params, layout.out_offset) == output) {
      ++found_output;
      *output_node = reinterpret_cast<uintptr_t>(node);
    }
  }
  return (found_image == 1 ? 1 : 0) | (found_output == 1 ? 2 : 0);
}

// Points the executable graph's copy of `node` (from sf_graph_io_nodes) at `pointer`: its Params::x
// for an image node, Params::out for an output node; the node's other arguments stay those it was
// captured with. Returns the CUDA error code (0: done).
int sf_graph_io_retarget(uintptr_t exec, uintptr_t node, uintptr_t pointer) {
  using namespace styleforge;
  const cudaGraphNode_t n = reinterpret_cast<cudaGraphNode_t>(node);
  cudaKernelNodeParams params;
  cudaError_t err = cudaGraphKernelNodeGetParams(n, &params);
  if (err != cudaSuccess) return static_cast<int>(err);
  const Conv9x9ParamsLayout layout = conv9x9_params_layout();
  const Conv9x9Role role = role_of(params.func);
  if (role == Conv9x9Role::kNone) return static_cast<int>(cudaErrorInvalidValue);
  alignas(16) unsigned char argument[512];
  if (layout.size > sizeof argument) return static_cast<int>(cudaErrorInvalidValue);
  std::memcpy(argument, params.kernelParams[0], layout.size);
  std::memcpy(argument + (role == Conv9x9Role::kImage ? layout.x_offset : layout.out_offset), &pointer,
              sizeof pointer);
  void* arguments[] = {argument};
  params.kernelParams = arguments;
  params.extra = nullptr;
  return static_cast<int>(cudaGraphExecKernelNodeSetParams(reinterpret_cast<cudaGraphExec_t>(exec), n, &params));
}

}  // extern "C"
