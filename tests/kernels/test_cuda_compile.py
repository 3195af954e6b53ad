"""The CUDA sources without a GPU: nvcc compile checks, a syntax check of the torch bindings,
and the real kernel run on the CPU through tests/emulators/instance_norm.

Each part skips cleanly when its tool is missing (nvcc; g++ with the CUDA headers; torch's
c10/cuda headers). The emulator runs instance_norm.cu's kernels and host launcher unchanged
(threads of a block concurrent, AddressSanitizer on), so indexing, tiling, alignment
decisions, head/tail handling and reductions are checked here; memory-model and timing
questions are left to the GPU tests and compute-sanitizer.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import rel_error

from styleforge.kernels import build

CSRC = build.CSRC
CU_FILES = [CSRC / s for s in build.SOURCES if s.endswith(".cu")]
EMULATOR = Path(__file__).resolve().parents[1] / "emulators" / "instance_norm"

pytestmark = pytest.mark.slow   # nvcc, g++ and the emulator build


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("source", CU_FILES, ids=lambda p: p.name)
def test_cu_compiles_for_sm80_and_sm90(source, tmp_path):
    # The flags torch.utils.cpp_extension adds (no implicit half/bf16 conversions), both archs.
    cmd = ["nvcc", "-std=c++17", "-O3", "--threads", "2", "-c", str(source), "-o", str(tmp_path / "k.o"),
           "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90",
           "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
           "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "-Xptxas", "-warn-spills"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "spill" not in proc.stderr.lower(), proc.stderr[-4000:]


def _torch_cuda_headers() -> Path | None:
    include = Path(torch.__file__).parent / "include"
    return include if (include / "c10" / "cuda" / "CUDAGuard.h").is_file() else None


def _cuda_include() -> Path | None:
    for candidate in ("/usr/local/cuda/include", "/usr/local/cuda-13.0/include"):
        if (Path(candidate) / "cuda_runtime.h").is_file():
            return Path(candidate)
    return None


@pytest.mark.skipif(shutil.which("g++") is None or _torch_cuda_headers() is None or _cuda_include() is None,
                    reason="needs g++, torch's c10/cuda headers and the CUDA headers")
@pytest.mark.parametrize("bindings", ["instance_norm/instance_norm_binding.cpp", "conv9x9/conv9x9_binding.cpp",
                                      "conv3x3/conv3x3_binding.cpp", "attention/attention_binding.cpp"])
def test_bindings_pass_a_syntax_check(tmp_path, bindings):
    include = _torch_cuda_headers()
    # CPU wheels ship c10/cuda headers but not this generated one; an empty stand-in suffices.
    stub = tmp_path / "c10" / "cuda" / "impl"
    stub.mkdir(parents=True)
    if not (include / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").is_file():
        (stub / "cuda_cmake_macros.h").write_text("#pragma once\n")
    cmd = ["g++", "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-isystem", str(tmp_path),
           "-isystem", str(include), "-isystem", str(include / "torch" / "csrc" / "api" / "include"),
           "-isystem", str(_cuda_include()), str(CSRC / bindings)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]


# ---- the kernels, emulated on the CPU --------------------------------------------------------

def _emulate_module():
    sys.path.insert(0, str(EMULATOR))
    try:
        import emulate
    finally:
        sys.path.remove(str(EMULATOR))
    return emulate


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    emulate = _emulate_module()
    if shutil.which("g++") is None or emulate.cuda_include() is None:
        pytest.skip("the kernel emulator needs g++ and the CUDA headers")
    exe = emulate.build(tmp_path_factory.mktemp("emulator"))
    return emulate, exe


def _x(shape, dtype, channels_last=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=g) * 25 + 60).to(dtype)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def _padded_interior(shape, dtype, channels_last):
    n, c, h, w = shape
    padded = _x((n, c, h + 2, w + 2), dtype, channels_last, seed=5)
    return padded[..., 1:-1, 1:-1]


MORE = (lambda v: v > 1)
# label: (shape, dtype, channels_last, options, emulated SM count, x offset in elements,
#         what the launcher's plan must show for the case to test what its label says)
EMULATED = {
    "nchw fp32 split plane, odd size": ((1, 2, 181, 191), torch.float32, False, dict(relu=True, pad=1), 1, 0,
                                        dict(chunks=MORE)),
    "nchw bf16 split plane, misaligned": ((1, 1, 190, 191), torch.bfloat16, False, dict(pad=3, upsample=2), 1, 1,
                                          dict(chunks=MORE)),
    "nchw fp16 tiny planes, offset 3": ((3, 3, 5, 3), torch.float16, False, dict(relu=True, pad=2), 4, 3, {}),
    "nchw 1x1 planes": ((2, 3, 1, 1), torch.float32, False, dict(relu=True), 4, 0, {}),
    "nchw strided residual": ((2, 3, 6, 10), torch.bfloat16, False, dict(residual="interior", pad=1), 4, 0, {}),
    "nchw wide rows, column tiles": ((1, 1, 2, 2100), torch.float32, False, dict(relu=True, pad=1), 132, 0,
                                     dict(col_tiles=MORE)),
    "cl bf16 C=32 split plane": ((1, 32, 60, 50), torch.bfloat16, True, dict(relu=True, pad=4), 1, 0,
                                 dict(chunks=MORE, stats_vec=8, apply_vec=8)),
    "cl fp32 C=128 upsample": ((2, 128, 5, 6), torch.float32, True, dict(pad=1, upsample=2), 2, 0,
                               dict(stats_vec=4, apply_vec=4)),
    "cl bf16 padded-interior residual": ((2, 64, 6, 5), torch.bfloat16, True,
                                         dict(residual="interior", pad=1, upsample=2), 4, 0, dict(apply_vec=8)),
    "cl fp16 nchw residual (scalar path)": ((2, 32, 6, 5), torch.float16, True,
                                            dict(residual="nchw", relu=True, pad=1), 4, 0,
                                            dict(stats_vec=8, apply_vec=1)),
    "cl C=3 (scalar path)": ((2, 3, 6, 5), torch.bfloat16, True, dict(relu=True, pad=2), 4, 0,
                             dict(stats_vec=1, apply_vec=1)),
    "cl C=264 two channel tiles": ((1, 264, 3, 4), torch.float16, True, dict(relu=True, pad=1), 4, 0,
                                   dict(stats_tiles=2, apply_tiles=2)),
    "cl misaligned (scalar path)": ((1, 16, 5, 6), torch.bfloat16, True, dict(relu=True, pad=1), 4, 1,
                                    dict(stats_vec=1, apply_vec=1)),
    "cl wide rows, column tiles": ((1, 3, 2, 800), torch.float32, True, dict(pad=1), 132, 0, dict(col_tiles=MORE)),
    "cl large mean fp32": ((1, 8, 40, 36), torch.float32, True, dict(mean=1000.0), 2, 0, {}),
    "cl bf16 C=128 (16 groups per warp row)": ((1, 128, 20, 24), torch.bfloat16, True, dict(relu=True, pad=1), 1, 0,
                                                dict(chunks=MORE, stats_vec=8)),
    "cl fp32 C=4 (one group, shuffles over all lanes)": ((1, 4, 30, 40), torch.float32, True, dict(mean=1000.0), 1,
                                                          0, dict(stats_vec=4)),
}


@pytest.mark.parametrize("label", list(EMULATED))
def test_emulated_kernel_matches_reference(emulator, label):
    from styleforge.kernels.reference import instance_norm as reference
    emulate, exe = emulator
    shape, dtype, channels_last, options, sms, offset, expect = EMULATED[label]
    options = dict(options)
    mean = options.pop("mean", None)
    x = _x(shape, dtype, channels_last)
    if mean is not None:
        x = (x.float() - 60 + mean).to(dtype)
    c = shape[1]
    weight, bias = torch.rand(c) + 0.5, torch.randn(c)
    residual = options.pop("residual", None)
    if residual == "interior":
        residual = _padded_interior(shape, dtype, channels_last)
    elif residual == "nchw":
        residual = _x(shape, dtype, False, seed=3)
    relu, pad, upsample = options.get("relu", False), options.get("pad", 0), options.get("upsample", 1)
    out, plan = emulate.run(exe, x, weight, bias, residual, 1e-5, relu, pad, upsample, num_sms=sms,
                            x_offset=offset, return_plan=True)
    for key, want_value in expect.items():
        ok = want_value(plan[key]) if callable(want_value) else plan[key] == want_value
        assert ok, f"plan {plan} does not exercise {key} as the case intends"
    want = reference.instance_norm(x, weight, bias, residual, 1e-5, relu, pad, upsample)
    assert not torch.isnan(out).any(), "unwritten (poisoned) output elements"
    # Same fp32 maths, one rounding to the storage dtype: at most one ulp apart, rarely.
    limit = 1e-6 if dtype == torch.float32 else 2e-3
    assert rel_error(out, want) <= limit
