"""Playground version (never imported by the package): the shipped torch blend with its
steady-state frame replayed from one CUDA graph.

The shipped blend issues about 70 kernels a frame from the engine thread, each a Python call
that drops and retakes the GIL beside the pipeline's decode and encode workers. Here a frame
whose history is in hand copies its three inputs into static buffers and replays a graph of
the whole blend (the trust mask, the scene-cut decision on the device, the warp, the blurs, the
restore, and the history's update), then clones the output: five launches. The first frame,
a restart (no flows), a change of size or a failed capture run the shipped eager code. The
same kernels run in the same order, so frames should equal the eager blend's exactly;
`profile_blend.py --versions new,graphed` prints the gap and the ms of each on the device.
Not here: the capture rules (`engine.capture.capturing`, which this uses as the runners do).
"""
from __future__ import annotations

import warnings

import torch

from styleforge.engine.capture import capturing, cuda_work
from styleforge.engine.cudnn_flags import cudnn_flags
from styleforge.media.temporal_torch import TorchTemporalBlender, _last_pixel, _sample, _upscale, sampling_grid


class GraphedTemporalBlender(TorchTemporalBlender):
    def __post_init__(self):
        self._graph, self._key, self._warm, self._eager_only = None, None, None, False
        super().__post_init__()

    def reset(self) -> None:
        """As the shipped reset; the restart count is zeroed in place (a graph reads it)."""
        restarts = getattr(self, "_restarts", None)
        super().reset()
        if restarts is not None:
            with cuda_work():
                restarts.zero_()
            self._restarts = restarts

    def _blend(self, content, stylized, flows):
        steady = (self.device.type == "cuda" and not self._eager_only and self.strength != 0.0
                  and flows is not None and self._content is not None
                  and self._content.shape == content.shape and self._output.shape == stylized.shape)
        if not steady:
            return super()._blend(content, stylized, flows)
        if (not isinstance(flows, torch.Tensor) or flows.dtype != torch.float32
                or flows.device.type != self.device.type):
            flows = torch.as_tensor(flows).to(self.device, torch.float32, non_blocking=True)
        content = content if content.dtype == torch.float32 else content.float()
        key = (tuple(content.shape), tuple(stylized.shape), tuple(flows.shape))
        if self._key != key:
            # The first steady frame of a shape runs eagerly (every kernel's first use, cuDNN's
            # plan for the feather, outside any capture); the next one captures.
            if self._warm != key:
                self._warm = key
                return super()._blend(content, stylized, flows)
            if not self._capture(key, content, stylized, flows):
                return super()._blend(content, stylized, flows)
        inputs, previous, (trusted, result) = self._static
        for static, given in zip(inputs, (content, stylized, flows)):
            static.copy_(given)
        if self._content is not previous[0]:   # the history last came from the eager path
            previous[0].copy_(self._content)
            previous[1].copy_(self._output)
        self._graph.replay()
        self._content, self._output, self._trusted = previous[0], previous[1], trusted
        return result.clone()

    def _capture(self, key, content, stylized, flows) -> bool:
        """Capture the steady-state blend for these shapes; False (and eager from now on, with one
        warning) where the capture fails."""
        inputs = (torch.empty_like(content), torch.empty_like(stylized), torch.empty_like(flows))
        previous = (torch.empty_like(content), torch.empty_like(stylized))
        # Per-shape constants are uploads: made before the capture, which forbids them.
        sampling_grid(flows, tuple(content.shape[1:]))
        sampling_grid(flows, tuple(stylized.shape[1:]))
        _last_pixel(tuple(content.shape[1:]), content.device)
        graph = torch.cuda.CUDAGraph()
        try:
            with capturing(graph), cudnn_flags(False, torch.backends.cudnn.deterministic,
                                               torch.backends.cudnn.allow_tf32):
                outputs = self._step(*inputs, *previous)
        except RuntimeError as exc:
            warnings.warn(f"temporal blend: CUDA-graph capture failed, blending eagerly ({exc})", RuntimeWarning)
            self._eager_only, self._graph, self._key = True, None, None
            return False
        self._graph, self._key, self._static = graph, key, (inputs, previous, outputs)
        return True

    def _step(self, content, stylized, flows, previous_content, previous_output):
        """The shipped `_blend`'s blending branch on static buffers, the history updated in place:
        → (trusted share, output rounded)."""
        both = torch.empty((6, *stylized.shape[1:]), device=stylized.device)
        current, blended = both[:3], both[3:]
        torch.clamp(stylized.round(), 0.0, 255.0, out=current)
        grid, mask = self.trust(content, previous_content, flows)
        trusted = mask.mean()
        cut = trusted < 1.0 - self.scene_cut
        self._restarts += cut
        mask = mask.masked_fill(cut, 0.0)
        if current.shape[1:] != content.shape[1:]:
            grid = sampling_grid(flows, tuple(current.shape[1:]))[3]
            mask = _upscale(mask[None], current.shape[1:])[0]
        change = _sample(previous_output, grid, "bicubic") - current
        if self._detail is not None:
            change = self._detail(change)
        torch.addcmul(current, mask, change, value=self.strength, out=blended)
        out = (self._restore(both) if self.restores() else blended).clamp_(0.0, 255.0)
        previous_content.copy_(content)
        previous_output.copy_(out)
        return trusted, out.round()
