"""Cost of a grid-wide barrier on this GPU, and whether a cooperative launch survives CUDA-graph
capture (the single-launch InstanceNorm depends on both). Prints and writes JSON.

    PYTHONPATH=$PWD python3 dev/diag/gridsync.py --out $OUT/gridsync.json
"""
import argparse
import json
from pathlib import Path

import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cooperative_groups.h>
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>
namespace cg = cooperative_groups;

__global__ void sync_loop(int iters, float* sink) {
  cg::grid_group grid = cg::this_grid();
  float acc = threadIdx.x;
  for (int i = 0; i < iters; ++i) { acc += 1.f; grid.sync(); }
  if (acc < 0) sink[0] = acc;
}

void launch(int64_t blocks, int64_t threads, int64_t iters, torch::Tensor sink) {
  int it = (int)iters; float* p = sink.data_ptr<float>();
  void* args[] = {&it, &p};
  auto err = cudaLaunchCooperativeKernel((void*)sync_loop, dim3(blocks), dim3(threads), args, 0,
                                         at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
}
int max_blocks(int64_t threads) {
  int n = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, sync_loop, (int)threads, 0); return n;
}
"""
CPP = "void launch(int64_t, int64_t, int64_t, torch::Tensor); int max_blocks(int64_t);"


def ms(fn, reps=200):
    for _ in range(10):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / reps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    mod = load_inline("gridsync_probe", cpp_sources=CPP, cuda_sources=CUDA, functions=["launch", "max_blocks"],
                      extra_cuda_cflags=["-O3", "-arch=sm_90a"], verbose=False)
    sink = torch.zeros(1, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    res = {"sms": sms}
    for threads in (256, 512, 1024):
        per_sm = mod.max_blocks(threads)
        for blocks in (sms, sms * per_sm):
            t0 = ms(lambda: mod.launch(blocks, threads, 0, sink))
            t1 = ms(lambda: mod.launch(blocks, threads, 20, sink))
            res[f"{blocks}x{threads}"] = {"launch_us": 1e3 * t0, "sync_us": 1e3 * (t1 - t0) / 20}
    # capture in a CUDA graph
    try:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            mod.launch(sms, 256, 1, sink)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for _ in range(10):
                mod.launch(sms, 256, 2, sink)
        res["graph_10_launches_us"] = 1e3 * ms(lambda: g.replay(), 50)
        res["graph_capture"] = "ok"
    except Exception as exc:
        res["graph_capture"] = f"failed: {exc}"
    print(json.dumps(res, indent=1))
    a.out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
