"""The arbitrary-style engine: paintings → cached style codes → any photo, on one device.

`ArbitraryStylizer` owns one loaded `ArbitraryStyleNet` on one device/precision/backend and an
in-memory LRU of style codes keyed by the painting's bytes (SHA-256 of the file, or of a PIL
image's pixels) and the style size, so a painting is encoded once however many frames use it.
Paintings are read, keyed and sized by `paintings.py` (the same care as photos; transparent
ones composited on white). `PaintingStylizer` binds a list of weighted paintings
and has the `Stylizer` call contract: float (N, 3, H, W) in 0–255 in, float32 CPU out.
Backends: reference (plain PyTorch, the ops' twins), fused (`arbitrary_fused.py` on the glue,
attention and FFN kernels, CUDA graphs per input shape), compile (torch.compile of the model),
openvino (`arbitrary_openvino.py`: encoder and decoder on OpenVINO, INT8 by default, the attention
fp32; `auto`'s pick on a CPU where installed; passes but the last at `OPENVINO_EARLY_PASS_SCALE`
of the size). Not the model (`models/`). Around the passes, on every backend: `degrid` after
each pass (the weights stamp a 4-px lattice, docs/arbitrary.md) and, with `palette`, the
painting's colours moved onto the image between passes (after the last, a share raised where the
palette distance stays above `palette_target`: `palette_share.py`), from a `PaletteCode` cached
with the style code (one painting; not a mix); `cpu_forms.py` picks their forms (the code's too).
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..models.arbitrary import ArbitraryStyleNet, StyleCode, load_arbitrary
from ..models.arbitrary.palette import PaletteCode
from .arbitrary_fused import FusedArbitraryNet
from .backends import OPENVINO_PRECISIONS, resolve_device, resolve_dtype, wants_openvino
from .blending import apply_strength, preserve_color
from .capture import capturing, cuda_work
from .cpu_forms import aimed_palette, palette_code, palette_transport, remove_grid
from .cudnn_flags import cudnn_flags
from .options import (
    StylizeOptions,
    check_fraction,
    check_style_weight,
    check_style_weights,
)
from .paintings import Painting, painting_image, painting_key, painting_label, painting_tensor
from .stroke import downscale, internal_size, upscale_styled

STYLE_CACHE_SIZE = 16
GRAPH_CACHE_SIZE = 2
GRAPH_MAX_VALUES = 3 * 3840 * 2160 * 2   # larger frames run eagerly: a graph keeps its temporaries
# On OpenVINO (the CPU fast path) every pass but the last runs at this share of the internal size
# (320 px for a 512-px photo): a pass costs its pixels, and the first pass only has to start the
# restyling the last one finishes. At 0.5 it paints blocks; the quality held is in docs/cpu.md.
OPENVINO_EARLY_PASS_SCALE = 0.625


def early_size(image: torch.Tensor, scale: float) -> tuple[int, int]:
    """(H, W) of `image` times `scale`, rounded, at least 1."""
    return tuple(max(1, round(side * scale)) for side in image.shape[-2:])


class PaintedCode(dict):
    """A painting's StyleCode (level → keys/values) that also carries its `PaletteCode`."""
    palette: PaletteCode | None = None


def check_rgb_batch(content: torch.Tensor) -> None:
    if content.dim() != 4 or content.shape[1] != 3:
        raise ValueError(f"expected (N, 3, H, W) RGB, got shape {tuple(content.shape)}")


class _GraphRunner:
    """CUDA graphs of `fn(x)` per (shape, style codes, alpha); replays copy x in and out."""

    def __init__(self, fn):
        self.fn = fn
        self.graphs: OrderedDict = OrderedDict()
        self.failures = 0

    def __call__(self, x: torch.Tensor, key: tuple, keep: object) -> torch.Tensor:
        """`keep` (the style codes) stays referenced by the graph: their memory is what it reads."""
        key = (tuple(x.shape), x.dtype, *key)
        # All of it is CUDA work (engine.capture): the warm-up may autotune cuDNN (a device
        # synchronisation), an evicted graph is destroyed; the capture gives the shared side up.
        with cuda_work():
            if key not in self.graphs:
                static_in = x.clone()
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                # Warm-up off the capture (torch.cuda.graphs docs), with cuDNN timing its algorithms
                # for each convolution shape, as the built-in styles' runner does (engine/runner.py,
                # `_cudnn_flags`, says why `deterministic` keys these plans apart from heuristic
                # ones cached by other code, e.g. torch.compile of the plain model).
                with self._cudnn(benchmark=True), torch.cuda.stream(side):
                    self.fn(static_in)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                try:   # engine.capture: the media pipeline's workers wait while the engine thread captures
                    # The autotuner off while capturing (a timing run synchronises the device): the
                    # warm-up's plans are in cuDNN's cache, which a convolution looks up first.
                    with capturing(graph), self._cudnn(benchmark=False):
                        static_out = self.fn(static_in)
                except RuntimeError as exc:
                    if not self.failures:
                        warnings.warn(f"CUDA graph capture failed ({str(exc).strip()[:200]}); that call ran "
                                      "eagerly", RuntimeWarning, stacklevel=3)
                    self.failures += 1
                    return self.fn(x)
                self.graphs[key] = (graph, static_in, static_out, keep)
                while len(self.graphs) > GRAPH_CACHE_SIZE:
                    self.graphs.popitem(last=False)
            self.graphs.move_to_end(key)
            graph, static_in, static_out, _ = self.graphs[key]
            static_in.copy_(x)
            graph.replay()
            return static_out.clone()

    @staticmethod
    def _cudnn(benchmark: bool):
        return cudnn_flags(benchmark, deterministic=True, allow_tf32=torch.backends.cudnn.allow_tf32)


@dataclass
class ArbitraryStylizer:
    """One loaded arbitrary-style model; `bind(paintings)` gives a Stylizer-like callable."""
    options: StylizeOptions

    def __post_init__(self):
        opts = self.options
        self.device = resolve_device(opts.device)
        # The built-in styles' rule (`backends.wants_openvino`): auto on a CPU takes OpenVINO INT8
        # for the encoder and decoder where it is installed; int8/openvino elsewhere is an error.
        openvino = wants_openvino(opts.backend, opts.precision, self.device)
        self.dtype = torch.bfloat16 if (opts.precision == "auto" and self.device.type == "cuda") \
            else torch.float32 if openvino else resolve_dtype(opts.precision, self.device)
        backend = "openvino" if openvino else opts.backend
        if backend == "auto":
            backend = "fused" if self.device.type == "cuda" and self.dtype != torch.float32 else "reference"
        if backend in ("fused", "compile") and self.device.type != "cuda":
            raise RuntimeError(f"--backend {backend} needs --device cuda")
        self.backend = backend
        model, self.metadata = load_arbitrary(opts.arbitrary_weights)
        # The fused forward copies its weights from the fp32 model (folds need them unrounded).
        self.fused = FusedArbitraryNet(model, self.device, self.dtype) if backend == "fused" else None
        self.memory_format = torch.channels_last if self.device.type == "cuda" else torch.contiguous_format
        self.model: ArbitraryStyleNet = model.to(self.device, self.dtype, memory_format=self.memory_format).eval()
        self.openvino = None
        if openvino:
            from .arbitrary_openvino import OpenVINOArbitraryNet
            self.openvino = OpenVINOArbitraryNet(self.model, OPENVINO_PRECISIONS[opts.precision])
        self._codes: OrderedDict[tuple, StyleCode] = OrderedDict()
        self._compiled = None
        if backend == "compile":
            from ..kernels import register_ops
            register_ops()   # before tracing: the graph then holds the ops, not their registration
            self._compiled = torch.compile(self.model.stylize)
        self._graphs = _GraphRunner(None) if backend == "fused" else None

    def describe(self) -> str:
        what = f"openvino {self.openvino.precision}" if self.openvino else f"{self.dtype}, {self.backend}"
        return f"arbitrary style on {self.device} ({what})"

    @torch.inference_mode()
    def style_code(self, painting: Painting) -> StyleCode:
        """The painting's keys/values at every level, from the LRU when seen before."""
        key = (painting_key(painting), self.options.style_size)
        if key in self._codes:
            self._codes.move_to_end(key)
            return self._codes[key]
        image = painting_tensor(painting_image(painting, self.options.max_pixels), self.options.style_size)
        code = PaintedCode((self.openvino or self.model).encode_style(image.to(self.device, self.dtype)))
        code.palette = palette_code(image.to(self.device))
        self._codes[key] = code
        while len(self._codes) > STYLE_CACHE_SIZE:
            self._codes.popitem(last=False)
        return code

    def _styled(self, content: torch.Tensor, styles: list[tuple[StyleCode, float]], alpha: float) -> torch.Tensor:
        """content float32 (N, 3, H, W) on the device → the stylized frame at its size, float32:
        the model at the stroke scale's internal size, then the photo's detail restored."""
        inner = internal_size(*content.shape[-2:], self.options.stroke_scale)
        small = downscale(content, inner) if inner != tuple(content.shape[-2:]) else content
        if self.fused is not None:     # takes float32 and clamps: no rounding of 0–255 to bf16
            model, prepare = self.fused.stylize, (lambda t: t)
        elif self.openvino is not None:
            model, prepare = self.openvino.stylize, (lambda t: t.clamp(0, 255))
        else:
            model = self._compiled or self.model.stylize
            prepare = lambda t: t.clamp(0, 255).to(self.dtype).contiguous(memory_format=self.memory_format)  # noqa: E731
        opts = self.options
        palette = getattr(styles[0][0], "palette", None) if len(styles) == 1 and opts.palette != "none" else None
        early = early_size(small, OPENVINO_EARLY_PASS_SCALE) if self.openvino is not None and opts.passes > 1 \
            else tuple(small.shape[-2:])
        first = downscale(small, early) if early != tuple(small.shape[-2:]) else small
        out = model(prepare(first), styles, alpha).float()
        for i in range(opts.passes - 1):
            # The output restyled: held-out style ratio 0.278 → 0.186 for content distance
            # 0.81 → 1.00 (docs/arbitrary.md); a third pass scored worse.
            out = self._clean(out)
            if palette is not None:
                out = palette_transport(out, palette)
            if i == opts.passes - 2 and tuple(out.shape[-2:]) != tuple(small.shape[-2:]):   # the last pass: full size
                out = F.interpolate(out, size=small.shape[-2:], mode="bicubic", align_corners=False).clamp(0, 255)
            out = model(prepare(out), styles, alpha).float()
        if palette is not None and opts.palette == "all" and opts.palette_strength > 0:
            # A quarter of the way, more (to `palette_cap`) only where the palette distance is still
            # above `palette_target`: a fixed larger share paints the painting's colours on the
            # photo's contrast (docs/arbitrary.md). Before the last degrid: a colour map steepens
            # what lattice is left.
            out = self._final_palette(out, palette)
        out = self._clean(out)
        return upscale_styled(content, small, out) if small is not content else out

    def _final_palette(self, out: torch.Tensor, palette: PaletteCode) -> torch.Tensor:
        opts = self.options
        if opts.palette_cap <= opts.palette_strength or palette.measure is None:
            return palette_transport(out, palette, opts.palette_strength)
        return aimed_palette(out, palette, opts.palette_strength, opts.palette_target, opts.palette_cap)[0]

    def _clean(self, out: torch.Tensor) -> torch.Tensor:
        return remove_grid(out).clamp(0, 255) if self.options.degrid else out

    def _run(self, content: torch.Tensor, styles: list[tuple[StyleCode, float]], alpha: float) -> torch.Tensor:
        # The whole frame, resizes and detail included, is one graph: at the default stroke scale
        # the model runs at 512 px and the launches of the resize and detail steps would dominate.
        if self._graphs is not None and content.numel() <= GRAPH_MAX_VALUES:
            self._graphs.fn = lambda inp: self._styled(inp, styles, alpha)
            key = (tuple(id(code) for code, _ in styles), tuple(w for _, w in styles), alpha,
                   self.options.degrid, self.options.palette, self.options.palette_strength,
                   self.options.palette_target, self.options.palette_cap)
            return self._graphs(content, key, styles)
        return self._styled(content, styles, alpha)

    @torch.inference_mode()
    def on_device(self, content: torch.Tensor, paintings: list[tuple[Painting, float]],
                  alpha: float | None = None, preserve: bool | None = None) -> torch.Tensor:
        """As `stylize`, the result left on the engine's device (float32)."""
        if alpha is not None:          # checked before the paintings are read
            check_fraction("alpha", float(alpha))
        check_rgb_batch(content)
        if not paintings:
            raise ValueError("no style image given")
        return self.with_codes(content, [(self.style_code(p), float(w)) for p, w in paintings], alpha, preserve)

    @torch.inference_mode()
    def with_codes(self, content: torch.Tensor, styles: list[tuple[StyleCode, float]], alpha: float | None = None,
                   preserve: bool | None = None) -> torch.Tensor:
        """`on_device` with the paintings' codes already looked up (a bound stylizer's frames)."""
        alpha = self.options.alpha if alpha is None else check_fraction("alpha", float(alpha))
        preserve = self.options.preserve_color if preserve is None else preserve
        content = content.to(self.device, torch.float32)
        out = self._run(content, styles, alpha)
        if preserve:
            out = preserve_color(content, out)
        return apply_strength(content, out, self.options.strength)

    @torch.inference_mode()
    def stylize(self, content: torch.Tensor, paintings: list[tuple[Painting, float]],
                alpha: float | None = None, preserve: bool | None = None) -> torch.Tensor:
        """content float (N, 3, H, W) 0–255 → the same shape, float32, on the CPU. `alpha` and
        `preserve` override the options' for this call (one loaded model serves every setting)."""
        return self.on_device(content, paintings, alpha, preserve).cpu()

    def bind(self, paintings: list[tuple[Painting, float]], alpha: float | None = None,
             preserve: bool | None = None) -> PaintingStylizer:
        return PaintingStylizer(self, list(paintings), alpha, preserve)


@dataclass
class PaintingStylizer:
    """An `ArbitraryStylizer` with its paintings: the `Stylizer` contract for the pipeline."""
    engine: ArbitraryStylizer
    paintings: list[tuple[Painting, float]]
    alpha: float | None = None          # None: the engine's options
    preserve: bool | None = None

    def __post_init__(self):
        # Checked before any painting is read: the API binds (painting, weight) pairs directly.
        weights = [check_style_weight(painting_label(p), w) for p, w in self.paintings]
        check_style_weights(weights)
        self.paintings = [(p, w) for (p, _), w in zip(self.paintings, weights)]
        # Looked up once: a broken painting fails here, not per photo, and frames pay no hashing
        # of the painting (a hash of every pixel for a PIL image; a file read for a path).
        self.styles = [(self.engine.style_code(painting), float(w)) for painting, w in self.paintings]

    @property
    def style_name(self) -> str:
        return ", ".join(painting_label(p) for p, _ in self.paintings)

    def describe(self) -> str:
        return f"{self.style_name} ({self.engine.describe()})"

    @property
    def device(self) -> torch.device:
        return self.engine.device

    def on_device(self, content: torch.Tensor) -> torch.Tensor:
        """The pipeline's CUDA path: the result stays on the device for its download stream."""
        check_rgb_batch(content)
        return self.engine.with_codes(content, self.styles, self.alpha, self.preserve)

    def __call__(self, content: torch.Tensor) -> torch.Tensor:
        return self.on_device(content).cpu()
