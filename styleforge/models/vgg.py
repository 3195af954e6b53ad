"""VGG16 features up to relu4_3: the frozen loss network of Johnson et al. (2016).

The layer list is torchvision's `vgg16().features[:23]` (Simonyan & Zisserman 2014) with the same
indices, so a torchvision state dict (`features.N.weight/bias`) loads with `strict=True` and no key
map; torchvision itself is not needed. Input is RGB in 0–255 (the style network's range); the
ImageNet mean/std normalisation happens inside. This is not a classifier and is never trained:
`load_vgg16` returns it frozen. Channel widths are read from the weights, so the tests can use a
narrow random VGG with the same layout.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

CONV_INDICES = (0, 2, 5, 7, 10, 12, 14, 17, 19, 21)
POOL_INDICES = (4, 9, 16)
LAYER_ENDS = {"relu1_2": 4, "relu2_2": 9, "relu3_3": 16, "relu4_3": 23}   # slice ends in features
VGG16_WIDTHS = (64, 128, 256, 512)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

WHERE_TO_GET = (
    "The perceptual loss needs ImageNet VGG16 weights: torchvision's vgg16 IMAGENET1K_V1 (the "
    "layers up to relu4_3 are used). Either install torchvision (pip install torchvision) so they "
    "download on first use, or on any machine that has it run: python -c \"import torch, torchvision; "
    "torch.save(torchvision.models.vgg16(weights='IMAGENET1K_V1').features.state_dict(), "
    "'vgg16.pth')\" and pass --vgg-weights vgg16.pth. Any .pth state dict with torchvision's "
    "key names (features.0.weight … features.21.bias, or 0.weight … 21.bias) works.")


class VGGWeightsError(RuntimeError):
    """VGG weights are missing or unusable; the message says where to get good ones."""


class VGGFeatures(NamedTuple):
    relu1_2: torch.Tensor
    relu2_2: torch.Tensor | None = None
    relu3_3: torch.Tensor | None = None
    relu4_3: torch.Tensor | None = None


class VGG16Features(nn.Module):
    """(N, 3, H, W) in 0–255 → activations at relu1_2, relu2_2, relu3_3, relu4_3."""

    def __init__(self, widths: tuple[int, int, int, int] = VGG16_WIDTHS):
        super().__init__()
        convs_per_block = (2, 2, 3, 3)
        layers: list[nn.Module] = []
        cin = 3
        for block, (width, n) in enumerate(zip(widths, convs_per_block)):
            for _ in range(n):
                layers += [nn.Conv2d(cin, width, 3, padding=1), nn.ReLU(inplace=True)]
                cin = width
            if block < 3:
                layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        # Non-persistent, so the state dict holds exactly torchvision's keys. Folded with the
        # /255: (x/255 − m)/s = (x − 255m)/(255s).
        self.register_buffer("mean", 255.0 * torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", 255.0 * torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def forward(self, x: torch.Tensor, last: str = "relu4_3") -> VGGFeatures:
        """Stops after `last` (the content target needs only relu2_2); later fields are None."""
        end = LAYER_ENDS[last]
        h = (x - self.mean) / self.std
        outputs, start = [], 0
        for stop in LAYER_ENDS.values():
            if stop > end:
                break
            for layer in self.features[start:stop]:
                h = layer(h)
            outputs.append(h)
            start = stop
        return VGGFeatures(*outputs)


def _torchvision_key_state(raw: object, source: str,
                           conv_indices: tuple[int, ...] = CONV_INDICES) -> dict[str, torch.Tensor]:
    """features.N.* (or bare N.*) for the convs at `conv_indices` (default: the ten of
    features[:23]); other layers are ignored."""
    if isinstance(raw, dict) and isinstance(raw.get("state_dict"), dict):
        raw = raw["state_dict"]
    if not isinstance(raw, dict):
        raise VGGWeightsError(f"{source}: holds a {type(raw).__name__}, not a state dict. {WHERE_TO_GET}")
    wanted = {f"features.{i}.{p}" for i in conv_indices for p in ("weight", "bias")}
    state = {}
    for key, value in raw.items():
        name = key.removeprefix("module.")
        if not name.startswith("features."):
            name = f"features.{name}"
        if name in wanted and isinstance(value, torch.Tensor):
            state[name] = value.float()
    missing = sorted(wanted - set(state), key=lambda k: int(k.split(".")[1]))
    if missing:
        raise VGGWeightsError(f"{source}: not a torchvision VGG16 state dict: missing {len(missing)} "
                              f"keys (first: {', '.join(missing[:3])}). {WHERE_TO_GET}")
    return state


def vgg16_state_from_file(path: str | os.PathLike,
                          conv_indices: tuple[int, ...] = CONV_INDICES) -> dict[str, torch.Tensor]:
    path = Path(path).expanduser()
    if not path.is_file():
        raise VGGWeightsError(f"VGG weights file {str(path)!r} does not exist. {WHERE_TO_GET}")
    from .checkpoint import load_torch_file
    try:
        raw = load_torch_file(path, "VGG16 weights")
    except ValueError as exc:   # one line of our own, not torch's advice to load unsafely
        raise VGGWeightsError(f"{exc}. {WHERE_TO_GET}") from None
    return _torchvision_key_state(raw, str(path), conv_indices)


def _torchvision_state() -> dict[str, torch.Tensor]:
    try:
        from torchvision.models import vgg16
    except ImportError:
        raise VGGWeightsError(f"no --vgg-weights given and torchvision is not installed. {WHERE_TO_GET}") from None
    return _torchvision_key_state(vgg16(weights="IMAGENET1K_V1").state_dict(), "torchvision IMAGENET1K_V1")


def load_vgg16(weights: str | os.PathLike | None = None, device: str | torch.device = "cpu",
               dtype: torch.dtype = torch.float32) -> VGG16Features:
    """Frozen VGG16 features from a torchvision-key file, else torchvision's ImageNet weights."""
    state = vgg16_state_from_file(weights) if weights is not None else _torchvision_state()
    widths = tuple(state[f"features.{i}.weight"].shape[0] for i in (0, 5, 10, 17))
    model = VGG16Features(widths)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise VGGWeightsError(f"{weights}: weights do not fit the VGG16 layout ({exc})") from None
    return freeze(model, device, dtype)


def freeze(model: VGG16Features, device: str | torch.device = "cpu",
           dtype: torch.dtype = torch.float32) -> VGG16Features:
    """Eval mode, no parameter gradients, on `device` in `dtype` (channels_last on CUDA)."""
    memory_format = torch.channels_last if torch.device(device).type == "cuda" else torch.contiguous_format
    model = model.to(device=device, dtype=dtype, memory_format=memory_format)
    return model.eval().requires_grad_(False)
