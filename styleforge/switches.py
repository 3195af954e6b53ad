"""Every environment switch StyleForge's Python reads, read here once into a frozen dataclass.

`switches()` reads the environment the first time it is called and returns the same `Switches`
after; `Switches.from_env(env)` reads any mapping (tests pass one, or build a `Switches(...)`
directly and hand it to the component that takes it). No other module of the package reads
`os.environ`. `KERNEL_SWITCHES` documents the few variables the compiled CUDA library reads
itself, at each call (its C++ sources), so that one table lists them all: `docs/switches.md` is
generated from this module by `switches_table()` (a test keeps it current). Not a settings file
and not the CLI's options (those are `engine.options`).
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterator, Mapping

_OFF = ("0", "off", "false", "no")


def _choice(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...],
            aliases: Mapping[str, str] = {}) -> str:
    value = env.get(name, "").strip().lower() or default
    value = aliases.get(value, value)
    if value not in allowed:
        raise ValueError(f"{name}={env.get(name)!r}: must be one of {', '.join(allowed)}")
    return value


def _path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value).expanduser() if value else None


@dataclass(frozen=True)
class Switches:
    conv3x3: str = field(default="auto", metadata={
        "env": "STYLEFORGE_CONV3X3", "values": "`auto` (default), `on`, `off`",
        "doc": "the fused engine's residual blocks and decoder on `conv3x3_norm` (Hopper, fp16/bf16): `auto` "
               "captures the cuDNN, `conv3x3`, `conv3x3_links` and `hybrid` plans per shape and keeps the "
               "fastest graph (`FusedRunner.layer_choices[(\"residual\", shape)]`); `on` always the fused "
               "plan (the twins where there is no kernel); `off` cuDNN + the InstanceNorm op"})
    conv9x9: str = field(default="auto", metadata={
        "env": "STYLEFORGE_CONV9X9", "values": "`auto` (default), `off`",
        "doc": "the fused engine's 9×9 layers on our kernel where it is faster than cuDNN, or always cuDNN"})
    graph_io: bool = field(default=True, metadata={
        "env": "STYLEFORGE_GRAPH_IO", "values": "`1` (default), `0`",
        "doc": "read at capture: the fused engine's graph reads the caller's image where it is and writes a "
               "fresh output (its conv1 and head nodes repointed before each replay, `engine/graph_io.py`); "
               "`0` copies into the graph's static input and clones its static output"})
    plan_cache: bool = field(default=True, metadata={
        "env": "STYLEFORGE_PLAN_CACHE", "values": "`1` (default), `0`",
        "doc": "the fused engine keeps the plan and 9×9 choices it times per shape in "
               "`plans-<gpu>.json` beside the built kernels and reads them in the next process "
               "(`engine/plan_cache.py`); `0` times every shape afresh and writes nothing"})
    openvino: bool = field(default=True, metadata={
        "env": "STYLEFORGE_OPENVINO", "values": "`1` (default), `0`",
        "doc": "`--backend auto` on a CPU runs the built-in styles on OpenVINO INT8 where openvino and nncf "
               "are installed (`engine/openvino_runner.py`); `0` keeps it on PyTorch (an explicit "
               "`--backend openvino` or `--precision int8` still runs OpenVINO)"})
    cuda_warmup: bool = field(default=True, metadata={
        "env": "STYLEFORGE_CUDA_WARMUP", "values": "`1` (default), `0`",
        "doc": "a one-device CUDA run starts the CUDA driver and the GPU's context on a background thread "
               "while torch is imported and the weights load (`engine/cuda_warmup.py`); `0` leaves both to "
               "PyTorch's first CUDA call"})
    cache_dir: Path | None = field(default=None, metadata={
        "env": "STYLEFORGE_CACHE_DIR", "values": "a folder (default: `$XDG_CACHE_HOME/styleforge` or "
                                                 "`~/.cache/styleforge`)",
        "doc": "where the JIT-built CUDA kernels (and the fused engine's timed plans) are cached (under "
               "`kernels/`), and the OpenVINO models exported per style (under `openvino/`)"})
    xdg_cache_home: Path | None = field(default=None, metadata={
        "env": "XDG_CACHE_HOME", "values": "a folder (default `~/.cache`)",
        "doc": "the cache base when `STYLEFORGE_CACHE_DIR` is unset"})
    styles_dir: Path | None = field(default=None, metadata={
        "env": "STYLEFORGE_STYLES_DIR", "values": "a folder (default: the package's `styles/`)",
        "doc": "where the built-in style weights and their metadata are looked up"})
    commit: str = field(default="", metadata={
        "env": "STYLEFORGE_COMMIT", "values": "a commit id (default: asked of git)",
        "doc": "the commit recorded with benchmark rows where the tree is not a git checkout"})
    onednn_max_cpu_isa: str = field(default="", metadata={
        "env": "ONEDNN_MAX_CPU_ISA", "values": "unset, or an ISA name such as `AVX2` (oneDNN's own; its "
                                               "older name `DNNL_MAX_CPU_ISA` is read when this is unset)",
        "doc": "oneDNN, PyTorch's CPU convolutions, dispatches to no ISA above this one; read here so that "
               "precision `auto` on a CPU is bf16 only where oneDNN may use native bf16 (`AVX512_CORE_BF16` "
               "or above), fp32 below it; `bench --cpu` rows record it beside the ISA oneDNN reports"})

    @property
    def cache_home(self) -> Path:
        """StyleForge's cache folder: `STYLEFORGE_CACHE_DIR`, else `$XDG_CACHE_HOME/styleforge`."""
        return self.cache_dir or (self.xdg_cache_home or Path.home() / ".cache") / "styleforge"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Switches:
        return cls(
            conv3x3=_choice(env, "STYLEFORGE_CONV3X3", "auto", ("auto", "on", "off"),
                            {"1": "on", "force": "on", "0": "off", "cudnn": "off"}),
            conv9x9=_choice(env, "STYLEFORGE_CONV9X9", "auto", ("auto", "off"), {"0": "off", "cudnn": "off"}),
            graph_io=env.get("STYLEFORGE_GRAPH_IO", "1").strip().lower() not in _OFF,
            plan_cache=env.get("STYLEFORGE_PLAN_CACHE", "1").strip().lower() not in _OFF,
            openvino=env.get("STYLEFORGE_OPENVINO", "1").strip().lower() not in _OFF,
            cuda_warmup=env.get("STYLEFORGE_CUDA_WARMUP", "1").strip().lower() not in _OFF,
            cache_dir=_path(env, "STYLEFORGE_CACHE_DIR"),
            xdg_cache_home=_path(env, "XDG_CACHE_HOME"),
            styles_dir=_path(env, "STYLEFORGE_STYLES_DIR"),
            commit=env.get("STYLEFORGE_COMMIT", "").strip(),
            # oneDNN reads the ONEDNN_ name first and falls back to the DNNL_ one
            onednn_max_cpu_isa=(env.get("ONEDNN_MAX_CPU_ISA", "").strip()
                                or env.get("DNNL_MAX_CPU_ISA", "").strip()).upper(),
        )


# Read by the CUDA library's C++ at each call (not through this module): (variable, values, meaning).
KERNEL_SWITCHES = (
    ("STYLEFORGE_INSTANCE_NORM_PATH", "`auto` (default), `split`, `single`",
     "InstanceNorm as three launches, or one cooperative launch (channels_last, C a multiple of 16 bytes, "
     "N·C ≤ 512); `auto` takes the single launch for 6–24 MB inputs"),
    ("STYLEFORGE_ATTENTION_KERNEL", "`auto` (default), `mma`",
     "attention on the Hopper wgmma kernel where it applies (sm_90, D 64/128), or always the `mma.sync` one"),
    ("STYLEFORGE_CONV1_KERNEL", "`auto` (default), `mma`",
     "conv1 (9×9, 3 → 32) on the Hopper wgmma kernel where it applies, or always the `mma.sync` one"),
    ("STYLEFORGE_L2_HINT_BYTES", "unset (the device's L2 size), a byte count",
     "the fused 3×3 and 9×9 kernels load and store a launch's activations evict-first in L2 when they fit "
     "in this many bytes, so the kernels' code and weights stay in L2 between frames; `0` turns the hints off"),
)

_current: Switches | None = None


def switches() -> Switches:
    """The process's switches, read from the environment on first use."""
    global _current
    if _current is None:
        _current = Switches.from_env(os.environ)
    return _current


def reset() -> None:
    """Forget the switches read so far, so the next `switches()` reads the environment again (tests)."""
    global _current
    _current = None


def cuda_mask() -> str | None:
    """`CUDA_VISIBLE_DEVICES` as this process was started with it: the CUDA driver's variable, not a
    StyleForge switch; `--gpus` numbers GPUs within it. Read at each call (a parent may set it)."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def cuda_driver_defaults() -> None:
    """`CUDA_MODULE_LOADING=LAZY` where it is unset, as `torch.cuda` sets it before its first CUDA
    call: the driver reads it once, at `cuInit`, so StyleForge sets it where it calls `cuInit` before
    PyTorch does (`engine/cuda_warmup.py`). A driver variable, not a StyleForge switch."""
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")


@contextlib.contextmanager
def environment_added(env: Mapping[str, str]) -> Iterator[None]:
    """This process's environment with `env` added, then restored: what a child started inside sees
    from its first instruction (a `--gpus` worker's CUDA_VISIBLE_DEVICES, set before torch reads it)."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def configure_library(settings: Mapping[str, str]) -> None:
    """Set environment variables that a third-party library reads at import (e.g. Gradio's temp
    folder): the one place StyleForge writes the environment, as `switches()` is where it reads."""
    os.environ.update(settings)


def switches_table() -> str:
    """docs/switches.md: every switch, its values and what it does (generated; do not edit by hand)."""
    lines = ["# Environment switches", "",
             "Generated from `styleforge/switches.py` by `switches_table()`; `tests/test_switches.py` says "
             "when it is stale.",
             "Options that users choose per call are `StylizeOptions` fields and CLI flags, not switches.", "",
             "| variable | values | effect |", "|---|---|---|"]
    lines += [f"| `{f.metadata['env']}` | {f.metadata['values']} | {f.metadata['doc']} |" for f in fields(Switches)]
    lines += ["", "Read by the compiled CUDA kernels at each call:", "",
              "| variable | values | effect |", "|---|---|---|"]
    lines += [f"| `{name}` | {values} | {doc} |" for name, values, doc in KERNEL_SWITCHES]
    return "\n".join(lines) + "\n"
