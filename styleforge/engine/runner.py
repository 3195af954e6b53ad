"""The fused inference engine's runner: a model's plan, run eagerly or as one CUDA graph per shape.

`FusedRunner(model, device, dtype)` reads the network off a `TransformerNet` (`plan.describe`,
never a second copy of its structure), turns it into steps for a plan variant (`plan.build_steps`)
and runs them (`steps.run_steps`): cuDNN convolutions with StyleForge's InstanceNorm op, or our
9×9 and fused 3×3 ops, chosen per shape (`autotune`; the choices are kept in `shape_choices`, which
persists them per GPU and lends a timed one to a shape close in size). One CUDA graph is captured per input shape
and dtype (warm-up on a side stream first, as the `torch.cuda.graphs` docs prescribe) and
replayed (captured through `engine.capture`: thread-local mode under the process's capture lock,
so the media pipeline's other threads cannot invalidate it; a capture that fails anyway runs that
call eagerly, with one warning per runner): where its first and last kernels are ours, each replay reads the caller's
CUDA tensor
where it is and writes a fresh output (`graph_io`); other inputs are copied into the graph's
static input, those that live on the CPU through a pinned staging buffer. It follows the runner
contract of `engine.backends`: float (N, 3, H, W) in 0–255, H and W multiples of 4 → the raw
network output in float32. It is not a training path (inference only, no autograd). On a CPU
device it runs the same steps eagerly, without graphs, through the ops' reference twins: slow,
but it lets CI check every plan against the reference model.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from dataclasses import dataclass

import torch

from .. import kernels
from ..models.transformer_net import TransformerNet
from ..switches import Switches, switches
from . import autotune
from .autotune import LayerChoice
from .capture import capturing, cuda_work
from .cudnn_flags import cudnn_flags
from .graph_io import GraphIO, new_graph
from .memory import whole_frame_bytes
from .plan import build_steps, describe
from .plan_cache import PlanCache
from .shape_choices import ShapeChoices
from .steps import Context, run_steps

MIN_SIDE = 8          # the 1/4-scale planes must be ≥ 2 px for their reflection pad of 1
MAX_GRAPHS = 64       # captured shapes kept at most (each holds its own activation memory) …
GRAPH_MEMORY_SHARE = 0.1   # … and their activations within this share of the GPU's memory
MAX_SEEN = 4096       # shapes remembered as seen once (a folder of many sizes)
WARMUP_ITERS = 3
MAX_CAPTURE_FAILURES = 3   # a shape whose capture failed this often stays eager
PROVIDER_IMPL = {"styleforge": "conv9x9", "cudnn": "cudnn"}   # LayerChoice.provider → step impl


@dataclass
class _Graph:
    graph: torch.cuda.CUDAGraph
    static_in: torch.Tensor
    static_out: torch.Tensor
    io: GraphIO | None = None               # conv1 and the head pointed at each call's own tensors
    pinned: torch.Tensor | None = None
    copied: torch.cuda.Event | None = None
    nbytes: int = 0                         # its activations' estimate (memory.whole_frame_bytes)


class FusedRunner:
    def __init__(self, model: TransformerNet, device: torch.device, dtype: torch.dtype,
                 use_graphs: bool = True, settings: Switches | None = None):
        device = torch.device(device)
        kernels.register_ops()   # its steps call torch.ops.styleforge.* directly
        if device.type == "cuda":
            if device.index is None:
                device = torch.device("cuda", torch.cuda.current_device())
            kernels.ensure_cuda_kernels()   # build/load now: a graph capture cannot compile
        self.device, self.dtype = device, dtype
        self.switches = settings or switches()
        self.use_graphs = use_graphs and device.type == "cuda"
        self._graphs: OrderedDict[tuple, _Graph] = OrderedDict()
        self.graph_budget = (int(torch.cuda.get_device_properties(device).total_memory * GRAPH_MEMORY_SHARE)
                             if device.type == "cuda" else 0)
        self.captures = 0     # input shapes captured (a shape may capture several plans and keep one)
        self.capture_failures: dict[tuple, int] = {}   # shape key → failed captures (then eager calls)
        # Shapes run once, eagerly: timing plans and capturing a graph costs seconds at a large
        # shape, so a shape pays it only when it comes again (a folder of many sizes stays cheap).
        self._seen_once: OrderedDict[tuple, None] = OrderedDict()
        # (layer, input shape) → which implementation runs the 9×9 convolution there; ("residual",
        # image shape) → which plan the captured graph runs.
        self.layer_choices = ShapeChoices(dtype)
        self.layers = describe(model)
        self.context = Context(self.layers, device, dtype, self._pick)
        # Choices timed by an earlier process on this GPU and kernel build: no timing again.
        if device.type == "cuda" and self.switches.plan_cache:
            self.layer_choices.adopt_plan_cache(PlanCache.for_device(device))

    # ---- the plan --------------------------------------------------------------------------

    def forward(self, x: torch.Tensor, plan: str | None = None) -> torch.Tensor:
        """(N, 3, H, W) on self.device, any float dtype → (N, 3, H, W) float32.

        plan: `plan.VARIANTS` — "cudnn" (cuDNN convolutions, standalone norms), "conv3x3" (the fused
        ops with the sums hand-off, the blocks as one conv3x3_residual_chain), "conv3x3_links" (the
        same with the blocks as ten conv3x3_norm calls, which overlap where the plane leaves SMs
        free), "hybrid" (cuDNN residual blocks, fused decoder: the residual link streams its 288 KB
        of weights per 128-pixel tile, which costs more than cuDNN on large planes, while the
        decoder's phase-split convolutions win at every size) or "reference" (plain PyTorch);
        None takes `default_plan()`.
        """
        x = x.float()
        return run_steps(self.context, self.steps_for(x.shape, plan or self.default_plan()), x)

    def steps_for(self, shape: tuple[int, ...], plan: str):
        """The steps of `plan` at image `shape`, with the 9×9 layers' choices made so far."""
        n, _, h, w = shape
        image, head = self.layers[0], self.layers[-1]
        keys = {image.name: (image.name, tuple(shape)),
                head.name: (head.name, (n, head.conv.in_channels, h, w))}   # the head runs at full size
        choices = {name: PROVIDER_IMPL[c.provider] for name, key in keys.items()
                   if (c := self.layer_choices.get(key)) is not None}
        return build_steps(self.layers, plan, choices)

    def default_plan(self) -> str:
        """"conv3x3" where the fused op runs (Hopper, fp16/bf16) unless STYLEFORGE_CONV3X3 says off."""
        if not self.context.packed or self.switches.conv3x3 == "off":
            return "cudnn"
        if self.switches.conv3x3 == "on":
            return "conv3x3"
        return "conv3x3" if kernels.conv3x3_norm_supported(self.device) else "cudnn"

    def _pick(self, name: str, x: torch.Tensor, op_args: tuple, op, cudnn) -> torch.Tensor:
        """Run op() or cudnn(), as chosen for (name, x's shape); choose first if not yet chosen."""
        key = (name, tuple(x.shape))
        choice = self.layer_choices.get(key)
        if choice is None:
            # A size close to one already timed takes its choice: a folder of many sizes would
            # otherwise time both 9×9 paths (and build cuDNN's plans) at every new size.
            near = self.layer_choices.similar(name, key[1], lambda c: c.op_ms is not None)
            if near is not None and not autotune.op_unavailable(x, op_args, self.dtype, self.switches):
                choice = near
            else:
                choice = autotune.choose_layer(name, x, op_args, op, cudnn, self.dtype, self.switches)
                if choice.op_ms is not None:
                    self.layer_choices.remember(name, key[1], choice)
            if choice.reason != "capturing":    # decide again outside the caller's capture
                self.layer_choices[key] = choice
        return op() if choice.provider == "styleforge" else cudnn()

    # ---- the runner contract ----------------------------------------------------------------

    def check_input(self, x: torch.Tensor) -> None:
        if x.dim() != 4 or x.shape[1] != 3:
            raise ValueError(f"FusedRunner: expected (N, 3, H, W), got shape {tuple(x.shape)}")
        h, w = x.shape[-2:]
        if h % 4 or w % 4 or h < MIN_SIDE or w < MIN_SIDE:
            raise ValueError(f"FusedRunner: H and W must be multiples of 4 and ≥ {MIN_SIDE}, got {h}x{w} "
                             "(styleforge.engine.pipeline pads any image to such a size)")

    @torch.inference_mode()
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        # Every CUDA call below is CUDA work (engine.capture): the warm-up's cuDNN autotuning
        # synchronises the device, the plan timing waits on events, a discarded or evicted graph
        # is destroyed. The captures inside give the shared side up while they run.
        with cuda_work():
            if not self.use_graphs or torch.cuda.is_current_stream_capturing():
                return self.forward(x.to(self.device, non_blocking=True))
            key = (tuple(x.shape), x.dtype, x.device.type)
            # A shape whose capture failed is not new: its next call tries the capture again (up to
            # MAX_CAPTURE_FAILURES) instead of running eagerly as if seen for the first time.
            if key not in self._graphs and key not in self._seen_once and key not in self.capture_failures:
                self._seen_once[key] = None
                while len(self._seen_once) > MAX_SEEN:
                    self._seen_once.popitem(last=False)
                return self._eager(x)
            self._seen_once.pop(key, None)
            entry = self._graph_or_none(x, key)
            if entry is None:
                return self._eager(x)
            return self._replay(entry, x)

    def _eager(self, x: torch.Tensor) -> torch.Tensor:
        with cuda_work(), torch.cuda.device(self.device), self._cudnn_flags(benchmark=False):
            return self.forward(x.to(self.device, non_blocking=True), self.default_plan())

    def _graph_or_none(self, x: torch.Tensor, key: tuple) -> _Graph | None:
        """The shape's graph, captured now if new; None where the capture failed (this call runs
        eagerly; the shape is tried again until MAX_CAPTURE_FAILURES)."""
        if key not in self._graphs and self.capture_failures.get(key, 0) >= MAX_CAPTURE_FAILURES:
            return None
        try:
            return self._graph_for(x)
        except RuntimeError as exc:   # torch.AcceleratorError, a capture invalidated, out of memory
            failures = self.capture_failures[key] = self.capture_failures.get(key, 0) + 1
            if sum(self.capture_failures.values()) == 1:
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                warnings.warn(f"CUDA graph capture failed at {tuple(x.shape)} ({reason}); that call ran "
                              f"eagerly (failures so far: {failures})", RuntimeWarning, stacklevel=4)
            return None

    def _replay(self, entry: _Graph, x: torch.Tensor) -> torch.Tensor:
        if entry.io is not None:
            if entry.io.accepts(x):
                return entry.io.replay(x)
            entry.io.restore()
        if x.device.type == "cpu":
            if entry.copied is not None:
                entry.copied.synchronize()     # the previous upload has left the pinned buffer
            entry.pinned.copy_(x)
            entry.static_in.copy_(entry.pinned, non_blocking=True)
            entry.copied.record()
        else:
            entry.static_in.copy_(x)
        entry.graph.replay()
        return entry.static_out.clone()

    def _graph_for(self, x: torch.Tensor) -> _Graph:
        key = (tuple(x.shape), x.dtype, x.device.type)
        entry = self._graphs.get(key)
        if entry is not None:
            self._graphs.move_to_end(key)
            return entry
        with torch.cuda.device(self.device):
            static_in = torch.empty(x.shape, dtype=x.dtype, device=self.device)
            static_in.copy_(x)
            entry = self._capture_best(static_in)
        self.captures += 1
        if x.device.type == "cpu":
            entry.pinned = torch.empty(x.shape, dtype=x.dtype, pin_memory=True)
            entry.copied = torch.cuda.Event()
        entry.nbytes = whole_frame_bytes(x.shape[0] * x.shape[2] * x.shape[3], self.device, self.dtype)
        self._graphs[key] = entry
        # Evict least recently used graphs beyond the count or the memory share (always keep this one):
        # a folder of many sizes keeps its repeats captured without holding the card's memory.
        while len(self._graphs) > 1 and (len(self._graphs) > MAX_GRAPHS
                                         or sum(g.nbytes for g in self._graphs.values()) > self.graph_budget):
            self._graphs.popitem(last=False)
        return entry

    def _capture_best(self, static_in: torch.Tensor) -> _Graph:
        """The default plan's graph; where that is the fused chain and the choice automatic, the
        fastest of the candidate plans' (`autotune.choose_plan`)."""
        plan, shape = self.default_plan(), tuple(static_in.shape)
        automatic = self.switches.conv3x3 == "auto"
        if plan != "conv3x3" or not automatic:
            reason = "default" if automatic else "STYLEFORGE_CONV3X3"
            self.layer_choices[("residual", shape)] = LayerChoice(plan, reason)
            return self._capture(static_in, plan)
        known = self.layer_choices.known_plan(shape)
        if known is not None:   # timed before at this shape (then evicted) or at one of similar size
            self.layer_choices.setdefault(("residual", shape), known)
            return self._capture(static_in, known.provider)
        best, choice = autotune.choose_plan(lambda candidate: self._capture(static_in, candidate), shape)
        self.layer_choices[("residual", shape)] = choice
        self.layer_choices.remember("residual", shape, choice)
        return best

    def _cudnn_flags(self, benchmark: bool):
        # benchmark: let cuDNN time its algorithms during warm-up (an eager one-off call takes its
        # heuristics instead of paying for timing).
        # deterministic: PyTorch caches one cuDNN plan per convolution key, and the key does not
        # say whether the plan was timed or guessed: a heuristic (benchmark=False) plan cached by
        # earlier code of the same shape — torch.compile of this network, say — would be reused
        # here untimed. The deterministic flag is part of the key, so setting it gives our
        # convolutions their own entries; forward convolutions lose nothing by it (the
        # non-deterministic cuDNN algorithms are backward ones).
        # allow_tf32: fp32 here means exact fp32: cuDNN's channels_last TF32 convolutions land
        # several times further from fp32 than the NCHW reference backend's TF32; `--backend auto`
        # sends fp32 to the reference backend instead.
        return cudnn_flags(benchmark, deterministic=True, allow_tf32=self.dtype != torch.float32)

    def _capture(self, static_in: torch.Tensor, plan: str) -> _Graph:
        with cuda_work():   # held by the caller already; here too for a direct call
            with self._cudnn_flags(benchmark=True):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(WARMUP_ITERS):
                        self.forward(static_in, plan)
                torch.cuda.current_stream().wait_stream(side)
            graph, kept = new_graph(self.switches.graph_io)
            # The autotuner off while capturing: the warm-up's timed plans are in cuDNN's cache,
            # which a convolution looks up first either way, and a capture open with the
            # process-wide flag on would let any other thread's new convolution time itself (a
            # device synchronisation, forbidden during a capture). Same key flags as the warm-up.
            with capturing(graph), self._cudnn_flags(benchmark=False):
                static_out = self.forward(static_in, plan)
            if kept:
                graph.instantiate()
            return _Graph(graph, static_in, static_out, GraphIO.bind(graph, kept, static_in, static_out))
