"""The fused engine's plan as data (engine/plan.py, engine/steps.py) on the CPU.

The description is read off `TransformerNet` (layer order, roles, pads, strides, upsampling, the
norms' ReLU and skips); the "reference" steps run it in float64 and must equal the model's own
forward; every real plan variant, with the 9×9 layers on our op or on cuDNN (the ops' twins on the
CPU), stays within 2× the eager bf16 error and leaves its sums states zero.
"""
from __future__ import annotations

import pytest
import torch
from conftest import random_net, rel_error

from styleforge.engine.autotune import LayerChoice
from styleforge.engine.plan import VARIANTS, build_steps, describe
from styleforge.engine.runner import FusedRunner
from styleforge.engine.steps import IMPLS
from styleforge.models import TransformerNet


def test_description_is_read_off_the_model():
    layers = describe(TransformerNet())
    assert [layer.name for layer in layers][:4] == ["conv1", "conv2", "conv3", "res1.conv1"]
    assert [layer.role for layer in layers] == ["image", "conv", "conv", *["block"] * 10, "conv", "conv", "head"]
    assert [layer.stride for layer in layers[:3]] == [1, 2, 2]
    assert [layer.upsample for layer in layers[-3:]] == [2, 2, 1]
    assert [layer.pad for layer in layers] == [4, *[1] * 14, 4]
    blocks = layers[3:13]
    assert [b.block_start for b in blocks] == [True, False] * 5 and [b.skip for b in blocks] == [False, True] * 5
    assert [b.relu for b in blocks] == [True, False] * 5
    assert all(layer.relu for layer in layers[:3] + layers[13:15]) and layers[-1].norm is None


def test_description_refuses_an_unknown_module():
    model = TransformerNet()
    model.extra = torch.nn.Dropout()
    with pytest.raises(TypeError, match="extra"):
        describe(model)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("choice", [{}, {"conv1": "conv9x9", "deconv3": "conv9x9"}, {"conv1": "cudnn"}],
                         ids=["unchosen", "ops", "cudnn"])
def test_every_step_has_a_function_and_covers_every_layer_once(variant, choice):
    layers = describe(TransformerNet())
    steps = build_steps(layers, variant, choice)
    assert all((s.kind, s.impl) in IMPLS for s in steps)
    assert [i for s in steps for i in s.layers] == list(range(len(layers)))


@pytest.mark.parametrize("shape", [(1, 3, 8, 12), (2, 3, 8, 8)], ids=["8x12", "batch2-8x8"])
def test_reference_steps_equal_the_model_in_float64(shape):
    model = random_net(0)
    x = torch.rand(shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 255
    with torch.inference_mode():
        got = FusedRunner(model, torch.device("cpu"), torch.float64).forward(x, "reference")
        want = model.double()(x)
    assert got.dtype == torch.float32 and got.shape == shape
    assert rel_error(got, want) <= 1e-6   # got is float32; the dropped conv biases change nothing in float64


# bf16 on a CPU without native bf16 is emulated, seconds a case: two cases, between them every
# provider and two variants, stay in the default tier
QUICK_VARIANTS = {("styleforge", "cudnn"), ("cudnn", "hybrid")}


@pytest.mark.parametrize("provider,variant", [
    pytest.param(provider, variant, marks=() if (provider, variant) in QUICK_VARIANTS else pytest.mark.slow)
    for provider in ("styleforge", "cudnn") for variant in ("cudnn", "conv3x3", "conv3x3_links", "hybrid")])
def test_every_variant_and_nine_by_nine_choice_within_twice_eager_bf16(provider, variant):
    model = random_net(2)
    shape = (1, 3, 16, 16)
    x = torch.rand(shape, generator=torch.Generator().manual_seed(2)) * 255
    runner = FusedRunner(model, torch.device("cpu"), torch.bfloat16)
    runner.layer_choices[("conv1", shape)] = LayerChoice(provider, "test")
    runner.layer_choices[("deconv3", (1, 32, 16, 16))] = LayerChoice(provider, "test")
    with torch.inference_mode():
        out = runner.forward(x, variant)
        ref = model(x)
        eager = model.to(torch.bfloat16)(x.to(torch.bfloat16)).float()
    assert out.shape == shape and rel_error(out, ref) <= 2 * rel_error(eager, ref)
    assert not any(s.any() for s in runner.context.sum_states()), "a consumer must leave its sums state zero"
