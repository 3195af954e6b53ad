"""The style network's shape contract and its pytorch/examples parameter names.

Names are listed here independently of the model code, from pytorch/examples
`fast_neural_style/neural_style/transformer_net.py`, so a renamed layer (which would stop its
checkpoints from loading) fails here. FLOPs are checked against hooks on the real convolutions.
"""
import pytest
import torch
from torch import nn

from styleforge.models import TransformerNet, count_flops


def pytorch_examples_names() -> list[str]:
    conv = lambda p: [f"{p}.conv2d.weight", f"{p}.conv2d.bias"]  # noqa: E731
    norm = lambda p: [f"{p}.weight", f"{p}.bias"]  # noqa: E731
    names = conv("conv1") + norm("in1") + conv("conv2") + norm("in2") + conv("conv3") + norm("in3")
    for i in range(1, 6):
        names += conv(f"res{i}.conv1") + norm(f"res{i}.in1") + conv(f"res{i}.conv2") + norm(f"res{i}.in2")
    names += conv("deconv1") + norm("in4") + conv("deconv2") + norm("in5") + conv("deconv3")
    return names


def test_parameter_names_match_pytorch_examples():
    assert sorted(TransformerNet().state_dict()) == sorted(pytorch_examples_names())


@pytest.mark.parametrize("batch,height,width", [(1, 16, 16), (1, 20, 36), (2, 32, 64), (1, 64, 16)],
                         ids=["B1-16x16", "B1-20x36", "B2-32x64", "B1-64x16"])
def test_output_size_equals_input_size_for_multiples_of_4(batch, height, width):
    with torch.inference_mode():
        out = TransformerNet().eval()(torch.rand(batch, 3, height, width) * 255)
    assert out.shape == (batch, 3, height, width)
    assert torch.isfinite(out).all()


def test_count_flops_matches_the_convolutions_run():
    model, counted = TransformerNet().eval(), []

    def hook(module, inputs, output):
        cin, k = module.in_channels, module.kernel_size[0]
        counted.append(2 * cin * k * k * output.numel())

    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            module.register_forward_hook(hook)
    with torch.inference_mode():
        model(torch.rand(2, 3, 24, 40))
    assert count_flops(24, 40, batch=2) == sum(counted)
