"""Is a TORCH_CHECK whose message formats an integer safe in a cpp_extension on this machine?
Builds a three-function inline extension and calls each in its own process.
    PYTHONPATH=$PWD python3 dev/diag/torch_check_probe.py
"""
from __future__ import annotations

import subprocess
import sys
import tempfile

import torch
from torch.utils import cpp_extension

SOURCE = r"""
#include <torch/extension.h>
#include <sstream>
void fail_text() { TORCH_CHECK(false, "plain text"); }
void fail_int(int64_t v) { TORCH_CHECK(false, "an integer: ", v); }
std::string format_int(int64_t v) { std::ostringstream s; s << v; return s.str(); }
"""
if __name__ == "__main__" and len(sys.argv) == 1:
    print("torch", torch.__version__, "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)
    print(subprocess.run(["g++", "--version"], capture_output=True, text=True, check=False).stdout.splitlines()[0])
    build = tempfile.mkdtemp()
    cpp_extension.load_inline("probe_ext", SOURCE, functions=["fail_text", "fail_int", "format_int"],
                              build_directory=build, verbose=False)
    for call in ("fail_text()", "fail_int(5)", "print(format_int(5))"):
        code = (f"import sys, torch; from torch.utils import cpp_extension; sys.path.insert(0, {build!r}); "
                f"import probe_ext as m\ntry:\n    m.{call}\n"
                f"except RuntimeError as e:\n    print('raised', str(e)[:60])")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        print(call, "rc", proc.returncode, proc.stdout.strip()[:80], proc.stderr.strip()[-200:])
