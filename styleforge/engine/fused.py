"""The fused inference engine: cuDNN convolutions + StyleForge's InstanceNorm op + CUDA graphs.

`FusedRunner(model, device, dtype)` runs the parameters of a `TransformerNet` (never a second
copy of the network's structure: it reads the modules' weights) as a fixed plan in which
every convolution uses padding=0 and reads a channels_last tensor that the preceding norm op
wrote already reflection-padded (and, in the decoder, already ×2 upsampled), so no pad or
upsample pass is ever materialised. One CUDA graph is captured per input shape and dtype
(warm-up on a side stream first, as the `torch.cuda.graphs` docs prescribe) and replayed:
where its first and last kernels are ours, each replay reads the caller's CUDA tensor where it
is and writes a fresh output (`graph_io`); other inputs are copied into the graph's static input,
those that live on the CPU through a pinned staging buffer. The two 9×9 convolutions
(conv1, deconv3) can also run on StyleForge's tensor-core op (`kernels.conv9x9`), which folds
the work around them into its loads: conv1 reads the fp32 image and pads and casts it itself,
deconv3 applies IN5 + ReLU and pads; for each shape, outside capture, the op path and the cuDNN
path (which writes those tensors first) are timed on the real input with CUDA events and the
faster is kept (`layer_choices` records which and why). On Hopper in fp16/bf16 conv2 and conv3
(stride 2), the residual blocks and the decoder's two 3×3 convolutions can run as a chain of `kernels.conv3x3_norm` calls instead (plan "conv3x3": each
InstanceNorm applied in the next convolution's prologue from statistics the previous one's
epilogue gathered, so no norm pass over the activation), or only the decoder ("hybrid"); per
shape the plans are captured, their replays timed, and the fastest graph kept. It follows the runner
contract of `engine.backends`: float (N, 3, H, W) in 0–255, H and W multiples of 4 → the raw
network output in float32. It is not a training path (inference only, no autograd). On a CPU
device it runs the same plan eagerly, without graphs, through the op's reference twin: slow,
but it lets CI check the plan against the reference model.
"""
from __future__ import annotations

import logging
import os
from collections import OrderedDict
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .. import kernels
from ..models.transformer_net import TransformerNet
from .choices import CHOICE_REL_TOL, LayerChoice, median_ms, relative_error
from .graph_io import GraphIO, new_graph

MIN_SIDE = 8          # the 1/4-scale planes must be ≥ 2 px for their reflection pad of 1
MAX_GRAPHS = 8        # captured shapes kept (each holds its own activation memory)
WARMUP_ITERS = 3
DEFAULT_INKERNEL_NORMS = "in1"

log = logging.getLogger(__name__)


@dataclass
class _Norm:
    weight: torch.Tensor    # fp32: the op reads fp32 affines, and fp32 keeps them exact
    bias: torch.Tensor


@dataclass
class _Graph:
    graph: torch.cuda.CUDAGraph
    static_in: torch.Tensor
    static_out: torch.Tensor
    io: GraphIO | None = None               # conv1 and the head pointed at each call's own tensors
    pinned: torch.Tensor | None = None
    copied: torch.cuda.Event | None = None


class FusedRunner:
    def __init__(self, model: TransformerNet, device: torch.device, dtype: torch.dtype,
                 use_graphs: bool = True):
        device = torch.device(device)
        if device.type == "cuda":
            if device.index is None:
                device = torch.device("cuda", torch.cuda.current_device())
            kernels.ensure_cuda_kernels()   # build/load now: a graph capture cannot compile
        self.device, self.dtype = device, dtype
        self.use_graphs = use_graphs and device.type == "cuda"
        self._graphs: OrderedDict[tuple, _Graph] = OrderedDict()
        self.captures = 0     # input shapes captured (a shape may capture two plans and keep one)
        # (layer, input shape) → which implementation runs the 9×9 convolution there.
        self.layer_choices: dict[tuple[str, tuple[int, ...]], LayerChoice] = {}

        def conv(layer) -> tuple[torch.Tensor, int]:
            conv2d = layer.conv2d
            weight = conv2d.weight.detach().to(device, dtype).contiguous(memory_format=torch.channels_last)
            return weight, conv2d.stride[0]

        def norm(layer) -> _Norm:
            return _Norm(layer.weight.detach().to(device, torch.float32).contiguous(),
                         layer.bias.detach().to(device, torch.float32).contiguous())

        m = model
        # The bias of a convolution followed by InstanceNorm is a per-channel constant that the
        # mean subtraction removes exactly, so those convolutions run without one; only the last
        # convolution (deconv3, no norm after it) keeps its bias.
        self.encoder = [(conv(m.conv1), norm(m.in1)), (conv(m.conv2), norm(m.in2)), (conv(m.conv3), norm(m.in3))]
        self.residual = [(conv(b.conv1), norm(b.in1), conv(b.conv2), norm(b.in2)) for b in m.residual_blocks()]
        self.decoder = [(conv(m.deconv1), norm(m.in4)), (conv(m.deconv2), norm(m.in5))]
        self.head_weight, _ = conv(m.deconv3)
        self.head_bias = m.deconv3.conv2d.bias.detach().to(device, dtype)
        self.head_bias32 = m.deconv3.conv2d.bias.detach().to(device, torch.float32)
        # The conv9x9 op reads (Cout, Cin, 9, 9)-contiguous weights: keep copies, not per-call ones.
        self.op_weights = {"conv1": self.encoder[0][0][0].contiguous(), "deconv3": self.head_weight.contiguous()}
        self.head_pad = m.deconv3.reflection_pad.padding[0]   # 4: the 9×9 head convolution
        self.input_pad = m.conv1.reflection_pad.padding[0]     # 4: the 9×9 first convolution
        # The residual blocks' convolutions packed for the conv3x3_norm op (fp16/bf16 only).
        low = dtype in (torch.float16, torch.bfloat16)
        self.packed = ([(kernels.pack_weight(w1), kernels.pack_weight(w2)) for (w1, _), _, (w2, _), _ in self.residual]
                       if low else None)
        self.packed_decoder = tuple(kernels.pack_weight(w) for (w, _), _ in self.decoder) if low else None
        # conv2 (32 → 64) and conv3 (64 → 128), stride 2.
        self.packed_encoder = tuple(kernels.pack_weight(w) for (w, _), _ in self.encoder[1:]) if low else None
        # conv3x3_residual_chain's states per (device, batch): zeroed once, left zero by every call,
        # shared by the captured graphs (which replay one at a time on one stream).
        self._chain_states: dict[tuple[torch.device, int], torch.Tensor] = {}
        # The in-kernel norm hand-offs' states per (device, batch, norm): the same contract.
        self._norm_states: dict[tuple[torch.device, int, str], torch.Tensor] = {}
        # Which norms take the in-kernel hand-off (the rest: the hand-off kernel). On the H200 (perf
        # notes, session 8) it wins for IN1 (conv1: one persistent wave, and no moments pass) and
        # loses for IN3..IN5 (every CTA of a multi-wave grid waits for its fence and count before
        # it leaves its SM); IN2 is even. STYLEFORGE_INKERNEL_NORMS overrides, e.g. "in1,in2".
        setting = os.environ.get("STYLEFORGE_INKERNEL_NORMS", DEFAULT_INKERNEL_NORMS)
        self.inkernel_norms = frozenset(n.strip() for n in setting.split(",") if n.strip())
        # The sums hand-off (each layer forms its input norm's affine from its producer's sums: no
        # hand-off kernels, no last-block steps) for the fused plans; STYLEFORGE_SUMS_HANDOFF=0 keeps
        # the (scale, shift) hand-offs above.
        self.sums_handoff = os.environ.get("STYLEFORGE_SUMS_HANDOFF", "1").lower() not in ("0", "off")

    # ---- the plan --------------------------------------------------------------------------

    def forward(self, x: torch.Tensor, plan: str | None = None) -> torch.Tensor:
        """(N, 3, H, W) on self.device, any float dtype → (N, 3, H, W) float32.

        plan: how the residual blocks and the decoder's 3×3 convolutions run — "cudnn" (cuDNN
        convolutions, standalone norms), "conv3x3" (the fused ops for both, the blocks as one
        conv3x3_residual_chain), "conv3x3_links" (the same with the blocks as ten conv3x3_norm calls,
        which overlap where the plane leaves SMs free) or "hybrid" (cuDNN residual blocks, fused
        decoder: the residual link streams its 288 KB of weights per 128-pixel tile, which costs more
        than cuDNN on large planes, while the decoder's phase-split convolutions win at every size);
        None takes `default_plan()`.
        """
        plan = plan or self.default_plan()
        (_, n1), ((w2, _), n2), ((w3, _), n3) = self.encoder
        if plan in ("conv3x3", "conv3x3_links") and self.sums_handoff:
            return self._forward_sums(x, chain=plan == "conv3x3")
        if plan in ("conv3x3", "conv3x3_links"):
            # conv2 and conv3 apply IN1 and IN2 in their prologues and gather IN2 and IN3.
            p2, p3 = self.packed_encoder
            y, scale, shift = self._first_conv_norm(x.float(), n1)
            h, scale, shift, _ = kernels.conv3x3_norm(y, p2, scale, shift, relu=True, stride=2,
                                                      norm_weight=n2.weight, norm_bias=n2.bias,
                                                      state=self._norm_state(y, "in2", 64))
            h, scale, shift, _ = kernels.conv3x3_norm(h, p3, scale, shift, relu=True, stride=2,
                                                      norm_weight=n3.weight, norm_bias=n3.bias,
                                                      state=self._norm_state(h, "in3", 128))
            return self._decoder_conv3x3(*self._residual_conv3x3(h, scale, shift, chain=plan == "conv3x3"))
        y = self._first_conv(x.float())                 # conv1's raw output (N, 32, H, W)
        y = kernels.instance_norm(y, n1.weight, n1.bias, relu=True, pad=1)
        y = F.conv2d(y, w2, None, 2)                    # conv2's raw output (N, 64, H/2, W/2)
        y = kernels.instance_norm(y, n2.weight, n2.bias, relu=True, pad=1)
        # y: (N, 128, H/4 + 2, W/4 + 2), normalised and reflection-padded.
        y = kernels.instance_norm(F.conv2d(y, w3, None, 2), n3.weight, n3.bias, relu=True, pad=1)
        h, y = self._residual_cudnn(y)
        n2 = self.residual[-1][3]
        if plan == "hybrid":      # the fused decoder takes the last norm as (scale, shift), the skip dense
            scale, shift = kernels.norm_scale_shift(h, n2.weight, n2.bias)
            return self._decoder_conv3x3(h, scale, shift, y[..., 1:-1, 1:-1].contiguous(memory_format=torch.channels_last))
        # The last block's output feeds deconv1, which upsamples ×2 and pads: fold both in.
        y = kernels.instance_norm(h, n2.weight, n2.bias, residual=y[..., 1:-1, 1:-1], pad=1, upsample=2)
        ((w4, _), n4), ((w5, _), _) = self.decoder
        y = kernels.instance_norm(F.conv2d(y, w4), n4.weight, n4.bias, relu=True, pad=1, upsample=2)
        return self._head(F.conv2d(y, w5))

    def _forward_sums(self, x: torch.Tensor, chain: bool) -> torch.Tensor:
        """The fused plan with the sums hand-off between its layers: each producer leaves its output's
        fp64 sums in a norm state (affine=False) and the next layer forms the norm's affine from them
        in its own prologue (in_state) and leaves the state zero, so no hand-off kernel and no
        last-block step sits between two layers. IN1 and IN5 take that path only where the conv9x9
        op was chosen for conv1 and the head (cuDNN there: the (scale, shift) path); the last block's
        norm reaches deconv1 the same way (the chain's out_state)."""
        (_, n1), (_, n2), (_, n3) = self.encoder
        (_, n4), (_, n5) = self.decoder
        p2, p3 = self.packed_encoder
        d1p, d2p = self.packed_decoder

        def from_sums(state, norm):
            return {"in_state": state, "in_norm_weight": norm.weight, "in_norm_bias": norm.bias}

        def to_sums(state, norm):
            return {"norm_weight": norm.weight, "norm_bias": norm.bias, "state": state, "affine": False}

        y, scale, shift, s1 = self._first_conv_norm(x.float(), n1, sums=True)
        into2 = from_sums(s1, n1) if s1 is not None else {}
        s2 = self._state(y, "sums-in2", 64)
        h, *_ = kernels.conv3x3_norm(y, p2, scale, shift, relu=True, stride=2, **into2, **to_sums(s2, n2))
        s3 = self._state(h, "sums-in3", 128)
        h, *_ = kernels.conv3x3_norm(h, p3, relu=True, stride=2, **from_sums(s2, n2), **to_sums(s3, n3))
        # The last block's norm reaches deconv1 as sums too: the chain's CTAs then end without a last
        # one forming the affine after all the others (H200: 256² −2 µs, 512² −0.6; perf-notes).
        s_blocks = self._state(h, "sums-blocks", 128)
        h, _, _, block_in = self._residual_conv3x3(h, None, None, chain=chain, out_state=s_blocks,
                                                   **from_sums(s3, n3))
        s4 = self._state(h, "sums-in4", 64)
        h, *_ = kernels.conv3x3_norm(h, d1p, residual=block_in, upsample=2,
                                     **from_sums(s_blocks, self.residual[-1][3]), **to_sums(s4, n4))
        head_key = ("deconv3", (x.shape[0], 32, x.shape[2], x.shape[3]))   # deconv2's output: _head's key
        head_choice = self.layer_choices.get(head_key)
        if head_choice is None or head_choice.provider != "styleforge":   # cuDNN, or not chosen yet
            h, scale, shift, _ = kernels.conv3x3_norm(h, d2p, relu=True, upsample=2, norm_weight=n5.weight,
                                                      norm_bias=n5.bias, **from_sums(s4, n4))
            return self._head(h, scale, shift)
        s5 = self._state(h, "sums-in5", 32)
        h, *_ = kernels.conv3x3_norm(h, d2p, relu=True, upsample=2, **from_sums(s4, n4), **to_sums(s5, n5))
        return kernels.conv9x9_from_sums(h, self.op_weights["deconv3"], self.head_bias32, s5, out_float32=True,
                                         pad=self.head_pad, norm_weight=n5.weight, norm_bias=n5.bias,
                                         packed_weight=self._packed_weight("deconv3", kernels.pack_head_weight))

    def _decoder_conv3x3(self, h: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor,
                         block_in: torch.Tensor) -> torch.Tensor:
        """The decoder on conv3x3_norm from the last block's raw second convolution h, its norm
        (scale, shift) and the block's input: deconv1 applies that norm and the skip, then ×2
        upsamples; deconv2 applies IN4 and gathers IN5's statistics for the head, which applies IN5
        on load."""
        (_, n4), (_, n5) = self.decoder
        d1p, d2p = self.packed_decoder
        h, scale, shift, _ = kernels.conv3x3_norm(h, d1p, scale, shift, residual=block_in, upsample=2,
                                                  norm_weight=n4.weight, norm_bias=n4.bias,
                                                  state=self._norm_state(h, "in4", 64))
        h, scale, shift, _ = kernels.conv3x3_norm(h, d2p, scale, shift, relu=True, upsample=2,
                                                  norm_weight=n5.weight, norm_bias=n5.bias,
                                                  state=self._norm_state(h, "in5", 32))
        return self._head(h, scale, shift)

    def _residual_cudnn(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The blocks on cuDNN from conv3's padded, normalised output y. Returns the last block's
        raw second convolution and its padded input: its norm and skip are left to the caller,
        which either folds them into deconv1's padded, upsampled input or hands them to the fused
        decoder."""
        def raw_block(y, block):
            (w1, _), n1, (w2, _), _ = block
            return F.conv2d(kernels.instance_norm(F.conv2d(y, w1), n1.weight, n1.bias, relu=True, pad=1), w2)

        for block in self.residual[:-1]:
            n2 = block[3]
            y = kernels.instance_norm(raw_block(y, block), n2.weight, n2.bias, residual=y[..., 1:-1, 1:-1], pad=1)
        return raw_block(y, self.residual[-1]), y

    def _residual_conv3x3(self, c3: torch.Tensor, scale: torch.Tensor | None, shift: torch.Tensor | None,
                          chain: bool = True, **sums):
        """The blocks on conv3x3_norm from conv3's raw output and IN3 as (scale, shift): each norm is
        applied in the next convolution's prologue from the statistics the previous one's epilogue
        gathered. chain: as one `conv3x3_residual_chain` call (one persistent kernel where the plane
        fits the GPU at once), else as ten conv3x3_norm calls (which overlap on small planes, where
        consecutive links' blocks run on different SMs). Returns the last block's raw second
        convolution, its norm as (scale, shift) (empty with sums={"out_state": ...}: left there as
        sums) and the block's input."""
        weights = [w for pair in self.packed for w in pair]
        norms = [n for _, n1, _, n2 in self.residual for n in (n1, n2)]
        n = c3.shape[0]
        state = self._chain_states.get((c3.device, n))
        if state is None:   # first met in a warm-up, outside any capture; then reused by the graphs
            state = self._chain_states[(c3.device, n)] = kernels.chain_state(n, len(weights), c3.device)
        return kernels.conv3x3_residual_chain(c3, scale, shift, weights, [m.weight for m in norms],
                                              [m.bias for m in norms], state=state, chain=chain, **sums)

    def _norm_state(self, x: torch.Tensor, norm: str, channels: int) -> torch.Tensor | None:
        """The zeroed state of norm `norm`'s in-kernel hand-off at x's batch (None off CUDA, where
        the twins need none, and for norms that take the hand-off kernel)."""
        if not x.is_cuda or norm not in self.inkernel_norms:
            return None
        return self._state(x, norm, channels)

    def _state(self, x: torch.Tensor, name: str, channels: int) -> torch.Tensor:
        """The zeroed norm state `name` at x's batch and device: made in the first (warm-up) call,
        outside any capture, then shared by the captured graphs, which replay one at a time on one
        stream and leave it zero. A normal tensor, not an inference one: the twins of the sums
        hand-off update it in place, inside the runner's inference mode or outside it."""
        key = (x.device, x.shape[0], name)
        state = self._norm_states.get(key)
        if state is None:
            with torch.inference_mode(False):
                state = self._norm_states[key] = kernels.norm_state(x.shape[0], channels, x.device)
        return state

    def default_plan(self) -> str:
        """"conv3x3" where the fused op runs (Hopper, fp16/bf16) unless STYLEFORGE_CONV3X3 says off."""
        setting = os.environ.get("STYLEFORGE_CONV3X3", "auto").lower()
        if self.packed is None or setting in ("0", "off", "cudnn"):
            return "cudnn"
        if setting in ("1", "on", "force"):
            return "conv3x3"
        return "conv3x3" if kernels.conv3x3_norm_supported(self.device) else "cudnn"

    # ---- the two 9×9 convolutions: cuDNN or the conv9x9 op, whichever is faster -------------

    def _first_conv(self, x: torch.Tensor) -> torch.Tensor:
        """conv1 (no bias: the norm after it cancels it) on the fp32 image x (N, 3, H, W). The op
        resolves the reflection pad and the cast to the compute dtype in its loads; cuDNN needs
        both written first (pad before cast: two kernels, the other order was five)."""
        p, weight = self.input_pad, self.encoder[0][0][0]
        args = (x, self.op_weights["conv1"], None, False, None, None, p)

        def cudnn():
            y = F.pad(x, (p, p, p, p), mode="reflect").to(self.dtype, memory_format=torch.channels_last)
            return F.conv2d(y, weight)

        return self._pick("conv1", x, args, lambda: torch.ops.styleforge.conv9x9(*args), cudnn)

    def _first_conv_norm(self, x: torch.Tensor, norm: _Norm, sums: bool = False):
        """conv1's raw output and IN1. Where the op is chosen for conv1 it also gathers IN1's
        statistics in its epilogue (conv9x9_norm, no moments pass): sums, (y, None, None, state) with
        IN1's sums left in the state for conv2; else (y, scale, shift) through the in-kernel
        hand-off, if IN1 takes it. After cuDNN, norm_scale_shift reads the output once for (scale,
        shift) (and with sums the state is None)."""
        key, y = ("conv1", tuple(x.shape)), None
        fused = sums or "in1" in self.inkernel_norms
        if fused and key not in self.layer_choices:   # choose first (outside capture the choice sticks)
            y = self._first_conv(x)
        choice = self.layer_choices.get(key)
        if not (fused and choice is not None and choice.provider == "styleforge"):
            y = self._first_conv(x) if y is None else y
            scale, shift = kernels.norm_scale_shift(y, norm.weight, norm.bias)
            return (y, scale, shift, None) if sums else (y, scale, shift)
        weight, packed = self.op_weights["conv1"], self._packed_weight("conv1", kernels.pack_conv1_weight)
        if not sums:
            return kernels.conv9x9_norm(x, weight, pad=self.input_pad, norm_weight=norm.weight, norm_bias=norm.bias,
                                        state=self._norm_state(x, "in1", 32), packed_weight=packed)
        state = self._state(x, "sums-in1", 32)
        y, _, _ = kernels.conv9x9_norm(x, weight, pad=self.input_pad, norm_weight=norm.weight, norm_bias=norm.bias,
                                       state=state, affine=False, packed_weight=packed)
        return y, None, None, state

    def _packed_weight(self, name: str, pack) -> torch.Tensor:
        """op_weights[name] in its 9×9 kernel's shared-memory layout (`pack`), made at its first use
        (a warm-up call, outside any capture) and reused by the graphs."""
        key = f"{name}_packed"
        if key not in self.op_weights:
            self.op_weights[key] = pack(self.op_weights[name])
        return self.op_weights[key]

    def _head(self, h: torch.Tensor, scale: torch.Tensor | None = None,
              shift: torch.Tensor | None = None) -> torch.Tensor:
        """IN5 + ReLU + reflection pad + deconv3 (→ float32) on deconv2's raw output h. The op applies
        the norm on load from (scale, shift): the fused chain's deconv2 gathered them, else
        norm_scale_shift reads h once for them. cuDNN needs the norm op's padded output first."""
        n5 = self.decoder[1][1]
        weight = self.op_weights["deconv3"]

        def op():
            s, t = (scale, shift) if scale is not None else kernels.norm_scale_shift(h, n5.weight, n5.bias)
            return torch.ops.styleforge.conv9x9(h, weight, self.head_bias32, True, s, t, self.head_pad)

        def cudnn():
            y = kernels.instance_norm(h, n5.weight, n5.bias, relu=True, pad=self.head_pad)
            return F.conv2d(y, self.head_weight, self.head_bias).float()

        return self._pick("deconv3", h, (h, weight, self.head_bias32, True, None, None, self.head_pad), op, cudnn)

    def _pick(self, name: str, x: torch.Tensor, op_args: tuple, op, cudnn) -> torch.Tensor:
        """Run op() or cudnn(), as chosen for (name, x's shape); choose first if not yet chosen."""
        key = (name, tuple(x.shape))
        choice = self.layer_choices.get(key)
        if choice is None:
            choice = self._choose(name, x, op_args, op, cudnn)
            if choice.reason != "capturing":    # decide again outside the caller's capture
                self.layer_choices[key] = choice
        return op() if choice.provider == "styleforge" else cudnn()

    def _op_unavailable(self, x: torch.Tensor, op_args: tuple) -> str:
        """Why the conv9x9 op cannot run here ("" if it can)."""
        if x.device.type != "cuda" or self.dtype not in (torch.float16, torch.bfloat16):
            return "needs a CUDA device and fp16/bf16"
        if kernels.current_mode() == "reference":
            return "kernels in reference mode"
        if os.environ.get("STYLEFORGE_CONV9X9", "auto").lower() in ("0", "off", "cudnn"):
            return "STYLEFORGE_CONV9X9=off"
        if not kernels.conv9x9_supported(*op_args):
            return "shape or dtype not supported by the op"
        ok, why = kernels.cuda_kernels_available()
        return "" if ok else why

    def _choose(self, name: str, x: torch.Tensor, op_args: tuple, op, cudnn) -> LayerChoice:
        why = self._op_unavailable(x, op_args)
        if why:
            return LayerChoice("cudnn", why)
        if torch.cuda.is_current_stream_capturing():
            return LayerChoice("cudnn", "capturing")
        want, got = cudnn(), op()       # the first calls also warm both up
        err = relative_error(got, want)
        if not err <= CHOICE_REL_TOL:
            log.warning("conv9x9 op disagrees with cuDNN on %s %s (rel err %.3g): keeping cuDNN",
                        name, tuple(x.shape), err)
            return LayerChoice("cudnn", f"op disagrees with cuDNN (rel err {err:.3g})")
        op_ms, cudnn_ms = median_ms(op), median_ms(cudnn)
        faster = op_ms < cudnn_ms
        choice = LayerChoice("styleforge" if faster else "cudnn", "faster" if faster else "slower",
                             op_ms, cudnn_ms)
        log.info("%s %s: conv9x9 op %.3f ms, cuDNN %.3f ms → %s", name, tuple(x.shape), op_ms, cudnn_ms,
                 choice.provider)
        return choice

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
        if not self.use_graphs or torch.cuda.is_current_stream_capturing():
            return self.forward(x.to(self.device, non_blocking=True))
        entry = self._graph_for(x)
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
        self._graphs[key] = entry
        while len(self._graphs) > MAX_GRAPHS:
            self._graphs.popitem(last=False)
        return entry

    def _capture_best(self, static_in: torch.Tensor) -> _Graph:
        """Capture the default plan; where that is the fused chain and the choice is automatic, also
        capture the cuDNN and hybrid plans, time the graphs and keep the fastest (the fused residual
        chain wins at 512² and not on large planes: one block per tile; the persistent chain only
        where every tile is resident, and the separate links overlap on small planes). One
        candidate graph is alive besides the best at any time, so capture memory stays at two."""
        plan = self.default_plan()
        key = ("residual", tuple(static_in.shape))
        automatic = os.environ.get("STYLEFORGE_CONV3X3", "auto").lower() == "auto"
        if plan != "conv3x3" or not automatic:
            self.layer_choices[key] = LayerChoice(plan, "default" if automatic else "STYLEFORGE_CONV3X3")
            return self._capture(static_in, plan)
        best = self._capture(static_in, "cudnn")
        best.graph.replay()
        reference = best.static_out.clone()   # the cuDNN plan's frame, which every candidate must match
        cudnn_ms = best_ms = median_ms(best.graph.replay)
        best_plan, why, plans = "cudnn", "slower", {"cudnn": cudnn_ms}
        for candidate in ("conv3x3", "conv3x3_links", "hybrid"):
            entry = self._capture(static_in, candidate)
            entry.graph.replay()
            err = relative_error(entry.static_out, reference)
            if not err <= CHOICE_REL_TOL:
                log.warning("plan %s disagrees with the cuDNN plan at %s (rel err %.3g): not used", candidate,
                            tuple(static_in.shape), err)
                why = f"{candidate} disagrees with cuDNN (rel err {err:.3g})"
                continue
            ms = plans[candidate] = median_ms(entry.graph.replay)
            log.info("plan %s at %s: %.3f ms per frame (best so far %s, %.3f ms)", candidate,
                     tuple(static_in.shape), ms, best_plan, best_ms)
            if ms < best_ms:
                best, best_ms, best_plan = entry, ms, candidate
            del entry
        self.layer_choices[key] = LayerChoice(best_plan, "faster" if best_plan != "cudnn" else why,
                                              best_ms, cudnn_ms, plans)
        return best

    def _capture(self, static_in: torch.Tensor, plan: str) -> _Graph:
        cudnn = torch.backends.cudnn
        benchmark, tf32, deterministic = cudnn.benchmark, cudnn.allow_tf32, cudnn.deterministic
        # Let cuDNN time its algorithms during warm-up; capture then records the chosen ones.
        cudnn.benchmark = True
        # PyTorch caches one cuDNN plan per convolution key, and the key does not say whether the
        # plan was timed or guessed: a heuristic (benchmark=False) plan cached by earlier code of the
        # same shape — torch.compile of this network, say — would be reused here untimed. On an H200
        # that made our bf16 512² frame 0.99 ms after a compile run instead of 0.61 ms. The
        # deterministic flag is part of the key, so setting it gives our convolutions their own
        # entries; forward convolutions lose nothing by it (the non-deterministic cuDNN algorithms
        # are backward ones).
        cudnn.deterministic = True
        # fp32 here means exact fp32: cuDNN's channels_last TF32 convolutions landed 8.8e-4
        # (relative) off fp32 at 512² on an H200, 5× the error of the NCHW reference backend's
        # TF32, autotuned or not. `--backend auto` sends fp32 to the reference backend instead.
        cudnn.allow_tf32 = self.dtype != torch.float32
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(WARMUP_ITERS):
                    self.forward(static_in, plan)
            torch.cuda.current_stream().wait_stream(side)
            graph, kept = new_graph()
            with torch.cuda.graph(graph):
                static_out = self.forward(static_in, plan)
            if kept:
                graph.instantiate()
        finally:
            cudnn.benchmark, cudnn.allow_tf32, cudnn.deterministic = benchmark, tf32, deterministic
        return _Graph(graph, static_in, static_out, GraphIO.bind(graph, kept, static_in, static_out))
