"""The CPU backend on OpenVINO: the style network exported once per style, INT8 by NNCF.

`OpenVINORunner(model, precision)` is a runner like `backends.make_runner`'s: float (N, 3, H, W)
in 0–255, any batch and any H, W (multiples of 4; the pipeline pads), → the raw network output,
float32 on the CPU. The network is converted from the reference PyTorch modules
(`openvino.convert_model`, one model with dynamic batch, height and width), and for `int8`
quantized by NNCF's post-training quantization (8-bit weights and activations per layer, ranges
calibrated on `calibration_images`: the photos the package ships plus flips, crops, rescales and
colour changes of them, so a user's machine needs no other data); the style network's INT8 goes
through `style_int8` (its norm inputs equalized first, checked against fp32, falling back to a
partly or wholly float form where a style loses too much). Export and calibration take
seconds to a minute, so the result is saved under `<cache>/openvino/` (`switches.cache_home`),
keyed by the weights' SHA-256, the precision, the calibration recipe, the style recipe and the
OpenVINO and NNCF versions; the next process reads the IR back in well under a second. It runs
on the threads PyTorch has (or those asked for), capped at the process's CPUs (`thread_config`).

openvino (and nncf, for INT8) are optional (`pip install "styleforge[openvino]"`) and imported
only here, only when this backend is used, so they cost the PyTorch path nothing when they are
merely installed. Not here: choosing this backend (`backends.resolve_backend`), the error of
INT8 against fp32 (docs/cpu.md, measured by `bench.cpu`).
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from ..notices import quieted
from ..switches import switches

log = logging.getLogger(__name__)

PRECISIONS = ("int8", "fp32")
CALIBRATION_RECIPE = 1     # bump when `calibration_images` changes: cached INT8 models are rebuilt
CALIBRATION_SIDES = (256, 384)
ASSETS = Path(__file__).resolve().parent.parent / "assets"


def openvino_available(precision: str = "int8") -> tuple[bool, str]:
    """(usable, reason); looks for the packages without importing them."""
    needed = ("openvino", "nncf") if precision == "int8" else ("openvino",)
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        return False, f"{' and '.join(missing)} not installed (pip install \"styleforge[openvino]\")"
    return True, ""


def cache_folder() -> Path:
    return switches().cache_home / "openvino"


def weights_digest(model: torch.nn.Module) -> str:
    """SHA-256 of the weights as fp32, by name: the same style gives the same key on any machine."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def cache_key(model: torch.nn.Module, precision: str) -> str:
    import openvino
    parts = [weights_digest(model)[:32], precision, f"ov{openvino.__version__.split('-')[0]}"]
    if precision == "int8":   # the version from metadata: importing nncf costs 0.5-2 s (scipy, networkx)
        from importlib.metadata import version
        parts += [f"nncf{version('nncf')}", f"cal{CALIBRATION_RECIPE}"]
    return "-".join(parts)


def _fit(image: np.ndarray, side: int) -> np.ndarray:
    """HWC uint8 → longer side `side`, both sides multiples of 4 (bilinear)."""
    from PIL import Image
    h, w = image.shape[:2]
    scale = side / max(h, w)
    size = (max(16, round(w * scale / 4) * 4), max(16, round(h * scale / 4) * 4))
    return np.asarray(Image.fromarray(image).resize(size, Image.BILINEAR))


def calibration_images(folder: Path = ASSETS, seed: int = 0) -> list[np.ndarray]:
    """The shipped photos and variants of them, as float32 (1, 3, H, W) in 0–255.

    Per photo and size: the photo, its mirror, a random crop (brought back to the size), and
    a contrast/brightness/saturation change, so the ranges cover framing and exposure that the
    three photos alone do not. Deterministic for a given seed.
    """
    from PIL import Image
    rng = np.random.default_rng(seed)
    out = []
    for path in sorted(folder.glob("*.jpg")):
        photo = np.asarray(Image.open(path).convert("RGB"))
        for side in CALIBRATION_SIDES:
            base = _fit(photo, side)
            h, w = base.shape[:2]
            ch, cw = int(h * rng.uniform(0.5, 0.8)), int(w * rng.uniform(0.5, 0.8))
            top, left = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
            crop = _fit(base[top:top + ch, left:left + cw], side)
            gray = base.astype(np.float32).mean(axis=2, keepdims=True)
            saturation, gain, bias = rng.uniform(0.3, 1.5), rng.uniform(0.6, 1.3), rng.uniform(-30, 30)
            jitter = (gray + (base - gray) * saturation) * gain + bias
            for image in (base, base[:, ::-1], crop, jitter):
                chw = np.clip(image.astype(np.float32), 0, 255).transpose(2, 0, 1)
                out.append(np.ascontiguousarray(chw[None]))
    if not out:
        raise RuntimeError(f"no calibration photos in {folder}: the package's assets are missing")
    return out


def export(model: torch.nn.Module, example: tuple[torch.Tensor, ...] | None = None):
    """The PyTorch network → an `openvino.Model`, every input with dynamic batch, height and width
    (its channels from `example`; default one 64-px RGB image, the style network's input)."""
    import openvino as ov
    example = example or (torch.zeros(1, 3, 64, 64),)
    with warnings.catch_warnings():
        # The trace notes InstanceNorm's Python-side size checks as constants: they only guard
        # against misuse, and the test suite checks the exported model at other shapes.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        return ov.convert_model(model.float().eval(), example_input=example,
                                input=[ov.PartialShape([-1, t.shape[1], -1, -1]) for t in example])


def quantize(ov_model, images: list[np.ndarray], ignored_scope=None):
    """NNCF post-training INT8 of every convolution (weights per channel, activations per
    tensor), ranges from `images`, then its fast bias correction; `ignored_scope` (an
    `nncf.IgnoredScope`) names the operations whose inputs stay in floating point."""
    import nncf
    extra = {"ignored_scope": ignored_scope} if ignored_scope is not None else {}
    with quieted("nncf"):       # its INFO notes ("1 ignored nodes were found…") are not for users
        return nncf.quantize(ov_model, nncf.Dataset(images), subset_size=len(images),
                             fast_bias_correction=True, **extra)


def load_or_build(model: torch.nn.Module, precision: str, export_fn=None, calibration=None, tag: str = "",
                  build_int8=None, what: str = "these weights"):
    """The IR for this model and precision from the cache, building (and caching) it if absent.

    `export_fn(model)` and `calibration()` default to the style network's (`export`,
    `calibration_images`); another network (the arbitrary model's parts) passes its own and a
    `tag` naming them, which joins the cache key. `build_int8(model, images)`, when given,
    replaces export + `quantize` for INT8 (the style network's checked recipe, `style_int8`).
    `what` names the network in the two INFO lines a build logs (the CLI shows them)."""
    import openvino as ov
    export_fn = export_fn or export
    calibration = calibration or calibration_images
    folder = cache_folder()
    xml = folder / f"{cache_key(model, precision)}{'-' + tag if tag else ''}.xml"
    core = ov.Core()
    if xml.is_file() and xml.with_suffix(".bin").is_file():
        try:
            return core.read_model(str(xml))
        except RuntimeError as exc:   # a truncated or foreign file: rebuild it
            log.warning("rebuilding the unreadable OpenVINO cache entry %s (%s)", xml, exc)
    start = time.perf_counter()
    log.info("preparing the OpenVINO %s model for %s (once; cached in %s)", precision, what, folder)
    if precision == "int8" and build_int8 is not None:
        ov_model = build_int8(model, calibration())
    else:
        ov_model = export_fn(model)
        if precision == "int8":
            ov_model = quantize(ov_model, calibration())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Written under a name of this process and thread, then renamed (each rename atomic),
        # the .bin first, so an .xml in the cache always has its weights beside it.
        tmp = folder / f".{xml.stem}.{os.getpid()}.{threading.get_ident()}.xml"
        ov.save_model(ov_model, str(tmp), compress_to_fp16=False)
        os.replace(tmp.with_suffix(".bin"), xml.with_suffix(".bin"))
        os.replace(tmp, xml)
    except OSError as exc:   # a read-only cache only costs the export again next time
        log.warning("could not cache the OpenVINO model in %s: %s", folder, exc)
    log.info("OpenVINO %s model for %s ready in %.1f s", precision, what, time.perf_counter() - start)
    return ov_model


def core_of(cpu: int) -> str:
    """The logical CPUs of `cpu`'s physical core, as Linux lists them ("2-3"); the CPU alone where
    the kernel does not say."""
    topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
    for name in ("core_cpus_list", "thread_siblings_list"):
        try:
            return (topology / name).read_text().strip()
        except OSError:
            continue
    return str(cpu)


def thread_config(threads: int, cpus=None, core=core_of) -> dict:
    """The threads OpenVINO is asked for: at most the CPUs this process may run on (`cpus`, default
    its affinity mask), and all of them run even where two are one core's logical CPUs. OpenVINO
    caps the count at the mask itself, but under the LATENCY hint it also leaves out a core's
    second logical CPU unless hyper-threading is asked for: pinned to two sibling CPUs it would run
    one thread while PyTorch beside it runs the two asked for."""
    if cpus is None:
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    cpus = set(cpus)
    threads = max(1, min(threads, len(cpus)))
    config = {"INFERENCE_NUM_THREADS": threads}
    if threads > len({core(cpu) for cpu in cpus}):
        config["ENABLE_HYPER_THREADING"] = True
    return config


def compile_config(precision: str, threads: int) -> dict:
    """fp32 asks for f32 math (OpenVINO would run bf16 on AMX/AVX512-BF16 CPUs by default);
    INT8 leaves the layers NNCF did not quantize to OpenVINO's choice for the CPU, unless
    ONEDNN_MAX_CPU_ISA caps oneDNN below bf16: OpenVINO reads bf16 from the CPU's flags, not
    from the cap, and its oneDNN would then emulate it. Threads: `thread_config`."""
    from .backends import onednn_allows_bf16
    config = {"PERFORMANCE_HINT": "LATENCY", **thread_config(threads)}
    if precision == "fp32" or not onednn_allows_bf16(switches().onednn_max_cpu_isa):
        config["INFERENCE_PRECISION_HINT"] = "f32"
    return config


def executed_precisions(compiled, layer_types: tuple[str, ...] = ("Convolution", "FullyConnected", "MatMul")
                        ) -> list[tuple[str, str, str, str]]:
    """(name, layer type, runtime precision, kernel) of each node of `layer_types` in a compiled
    model's execution graph (`get_runtime_model()`): what the CPU plugin runs after its own
    low-precision passes, e.g. ("…/Convolution", "Convolution", "u8", "jit_avx2_I8"). A
    convolution NNCF quantized runs u8 or i8; one left in floating point shows f32 (or bf16)."""
    out = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        layer = info["layerType"].astype(str)
        if layer in layer_types:
            out.append((op.get_friendly_name(), layer, info["runtimePrecision"].astype(str),
                        info["primitiveType"].astype(str)))
    return out


def cpu_report() -> str:
    """OpenVINO's own account of the CPU: its name and the precisions it runs natively."""
    import openvino as ov
    core = ov.Core()
    caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return f"{core.get_property('CPU', 'FULL_DEVICE_NAME')} [{', '.join(caps)}]"


class OpenVINORunner:
    """Runs one style's exported network on the CPU with OpenVINO (see the module docstring)."""

    def __init__(self, model: torch.nn.Module, precision: str = "int8", threads: int | None = None):
        if precision not in PRECISIONS:
            raise ValueError(f"the OpenVINO backend runs {' or '.join(PRECISIONS)}, not {precision!r}")
        ok, reason = openvino_available(precision)
        if not ok:
            raise RuntimeError(f"--backend openvino is unavailable: {reason}")
        import openvino as ov

        from . import style_int8
        self.precision = precision
        self.threads = threads or torch.get_num_threads()
        if precision == "int8":
            digest = weights_digest(model)

            def build(m, images):
                return style_int8.build(m, images, export, quantize, digest)
            # The first form joins the key: weights newly measured (`INT8_MEASURED`) build again.
            first = style_int8.first_form(digest)
            ov_model = load_or_build(model, precision, tag=f"style{style_int8.STYLE_INT8_RECIPE}-{first}",
                                     build_int8=build, what="this style")
            self.form = style_int8.form_of(ov_model)     # which layers stay float (`style_int8.FORMS`)
        else:
            ov_model, self.form = load_or_build(model, precision, what="this style"), "fp32"
        math = "fp32" if self.form == "fp32" else precision
        self.compiled = ov.Core().compile_model(ov_model, "CPU", compile_config(math, self.threads))
        self._request = self.compiled.create_infer_request()
        self._lock = threading.Lock()   # one infer request: the media pipeline may call from threads

    def threading(self) -> dict:
        """What OpenVINO made of the thread request, as compiled: threads, streams, pinning and
        hyper-threading. It caps the threads at the process's CPUs, and under the LATENCY hint
        leaves a core's second logical CPU out, so on two sibling CPUs it may run one thread."""
        out = {}
        for key in ("INFERENCE_NUM_THREADS", "NUM_STREAMS", "ENABLE_CPU_PINNING", "ENABLE_HYPER_THREADING"):
            try:
                value = self.compiled.get_property(key)
            except RuntimeError:    # a property this OpenVINO does not report
                continue
            out[key.lower()] = value if isinstance(value, (bool, int)) else str(value)
        return out

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        array = np.ascontiguousarray(x.detach().to("cpu", torch.float32).numpy())
        with self._lock:
            result = self._request.infer({0: array})
            out = np.array(result[self.compiled.output(0)], copy=True)   # the request reuses its buffer
        return torch.from_numpy(out)
