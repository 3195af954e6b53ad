"""On CUDA, the arbitrary-style model's attention and FFN run on styleforge's kernels (not the
twins), and its bf16 output stays close to the fp32 reference path. Skipped without CUDA."""
from __future__ import annotations

import pytest
import torch
from conftest import cuda_kernel_names
from torch.profiler import ProfilerActivity, profile

from styleforge import kernels
from styleforge.bench.arbitrary import random_model


@pytest.mark.gpu
def test_arbitrary_attention_and_ffn_kernels_run(loaded):
    model = random_model().cuda().to(torch.bfloat16)
    x = (torch.rand(1, 3, 272, 208, device="cuda") * 255).to(torch.bfloat16)
    s = (torch.rand(1, 3, 256, 320, device="cuda") * 255).to(torch.bfloat16)
    with torch.inference_mode():
        code = model.encode_style(s)
        run = lambda: model.stylize(x, [(code, 1.0)])  # noqa: E731
        run()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run()
        ops = [e.name for e in prof.events()]
        assert ops.count("styleforge::attention") == 2 and ops.count("styleforge::ffn") == 2
        names = " ".join(cuda_kernel_names(run))
        assert "attention" in names                                     # our flash kernel
        assert "softmax" not in names.lower()                          # not the twin's matmul–softmax
        with kernels.using("reference"):
            twin = random_model().cuda().float()
            ref = twin.stylize(x.float(), [(twin.encode_style(s.float()), 1.0)])
        out = run().float()
    err = float((out - ref).norm() / ref.norm())
    assert err < 3e-2, f"bf16 kernels vs fp32 reference: relative error {err:.3g}"


@pytest.mark.gpu
def test_paintings_go_through_the_pipelines_cuda_path(loaded, tmp_path):
    # A painting style must take the media pipeline's CUDA path (device-resident results, the
    # whole frame as one graph), and give what the engine gives one image at a time.
    import numpy as np
    from PIL import Image

    from styleforge.engine.arbitrary import ArbitraryStylizer
    from styleforge.engine.options import StylizeOptions
    from styleforge.media.engine_stage import EngineStage
    from styleforge.media.images import ImageJob, stylize_images
    from styleforge.models.arbitrary import save_arbitrary
    weights = save_arbitrary(tmp_path / "w.safetensors", random_model())
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (96, 128, 3), dtype=np.uint8)).save(tmp_path / "painting.png")
    photos = []
    for i in range(3):
        photos.append(tmp_path / f"in{i}.png")
        Image.fromarray(rng.integers(0, 255, (80, 112, 3), dtype=np.uint8)).save(photos[-1])
    options = StylizeOptions(arbitrary_weights=str(weights), device="cuda", overwrite=True)
    bound = ArbitraryStylizer(options).bind([(str(tmp_path / "painting.png"), 1.0)])
    assert EngineStage(bound).cuda
    records = list(stylize_images([ImageJob(p, tmp_path / f"out{i}.png") for i, p in enumerate(photos)],
                                  bound, options))
    assert not [r.error for r in records if r.error]
    for i, photo in enumerate(photos):
        x = torch.from_numpy(np.asarray(Image.open(photo))).permute(2, 0, 1)[None].float()
        want = bound(x)[0].round().clamp(0, 255).permute(1, 2, 0).numpy()
        got = np.asarray(Image.open(tmp_path / f"out{i}.png")).astype(np.float32)
        assert np.abs(got - want).max() <= 2, "pipeline output differs from the engine's"
