"""INT8 against fp32 per built-in style, for several NNCF quantization variants side by side.

For each style: PyTorch fp32 on the three asset photos at 512 px (the reference), then each
variant's OpenVINO INT8 model (exported and quantized here, not read from the cache) on the same
photos; prints and writes (JSON) per variant the PSNR against fp32 (min over the photos, clamped
0–255, as `bench.cpu`) and the style ratio (geometric mean over the photos, as `bench.cpu`, the
shared `style_metrics.py`), with fp32's ratio beside it, and the weights' digest: a style whose
`equalized` variant (the `int8` form of `engine.style_int8`) stays within the margin there joins
`style_int8.INT8_MEASURED`; `no_mvn_inputs` is the `int8-float-norm-inputs` form. A dev
diagnostic, not a bench row:

    python dev/diag/openvino_int8_styles.py --metrics .data/tools/style_metrics.py \
        --paintings DIR [DIR ...] --styles al_sufi candy --variants default no_mvn_inputs --json OUT
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from styleforge.bench.cpu import load_metrics, photos, to_tensor
from styleforge.engine import openvino_runner
from styleforge.engine.norm_equalize import equalize
from styleforge.models.checkpoint import build_model
from styleforge.models.registry import load_style
from styleforge.psnr import psnr
from styleforge.training.catalogue import BY_NAME

STYLES_DIR = Path(openvino_runner.__file__).resolve().parent.parent / "styles"
LAST = "__module.deconv3.conv2d/aten::_convolution/Convolution"
FIRST = "__module.conv1.conv2d/aten::_convolution/Convolution"


def variants() -> dict:
    """name → keyword arguments of `nncf.quantize` beyond the model and data."""
    import nncf
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters
    return {
        "default": {},
        "no_mvn_inputs": {"ignored_scope": nncf.IgnoredScope(types=["MVN"])},
        "fp32_last_conv": {"ignored_scope": nncf.IgnoredScope(names=[LAST])},
        "fp32_ends": {"ignored_scope": nncf.IgnoredScope(names=[FIRST, LAST])},
        "mixed": {"preset": nncf.QuantizationPreset.MIXED},
        "no_mvn_mixed": {"ignored_scope": nncf.IgnoredScope(types=["MVN"]),
                         "preset": nncf.QuantizationPreset.MIXED},
        "no_bias_correction": {"fast_bias_correction": False},
        "no_mvn_no_bc": {"ignored_scope": nncf.IgnoredScope(types=["MVN"]),
                         "advanced_parameters": AdvancedQuantizationParameters(disable_bias_correction=True)},
        "equalized": {},      # the network rescaled by `engine.norm_equalize` first: style_int8's `int8`
        "equalized_mixed": {"preset": nncf.QuantizationPreset.MIXED},
    }


def painting(style: str, folders: list[Path]) -> Path:
    name = BY_NAME[style].painting_file if style in BY_NAME else f"{style}.jpg"
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"no painting {name} for {style} in {folders}")


def run_ov(ov_model, inputs: list[torch.Tensor], threads: int) -> tuple[list[torch.Tensor], float]:
    import openvino as ov
    compiled = ov.Core().compile_model(ov_model, "CPU", openvino_runner.compile_config("int8", threads))
    request = compiled.create_infer_request()
    outs, cpu = [], []
    for x in inputs:
        request.infer({0: x.numpy()})
        start = time.process_time()
        result = request.infer({0: x.numpy()})
        cpu.append((time.process_time() - start) * 1e3)
        outs.append(torch.from_numpy(np.array(result[compiled.output(0)], copy=True)))
    return outs, float(np.median(cpu))


def ov_model_output(ov_model, x: torch.Tensor, threads: int) -> torch.Tensor:
    import openvino as ov
    compiled = ov.Core().compile_model(ov_model, "CPU", openvino_runner.compile_config("fp32", threads))
    return torch.from_numpy(compiled({0: x.numpy()})[compiled.output(0)]).clamp(0, 255)


def detail_snr(out: torch.Tensor, ref: torch.Tensor) -> float:
    """dB of the reference's detail (itself minus a 5×5 box blur) over the error's energy."""
    blur = torch.nn.functional.avg_pool2d(ref, 5, stride=1, padding=2, count_include_pad=False)
    return 10 * float(torch.log10(((ref - blur) ** 2).mean() / ((out - ref) ** 2).mean().clamp_min(1e-12)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", required=True)
    parser.add_argument("--paintings", nargs="+", type=Path, required=True)
    parser.add_argument("--styles", nargs="*", default=None)
    parser.add_argument("--variants", nargs="*", default=["default"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import nncf
    torch.set_num_threads(args.threads)
    metrics = load_metrics(args.metrics)
    table = variants()
    styles = args.styles or sorted(p.stem for p in STYLES_DIR.glob("*.safetensors"))
    # Cropped to multiples of 4, the network's own constraint (the pipeline pads instead).
    inputs = [to_tensor(p[:p.shape[0] // 4 * 4, :p.shape[1] // 4 * 4]) for p in photos(args.size)]
    calibration = openvino_runner.calibration_images()
    results = json.loads(args.json.read_text()) if args.json and args.json.is_file() else {}

    def ratio(outs):
        values = [metrics.metrics(x, o.clamp(0, 255).round(), target)[0] for x, o in zip(inputs, outs)]
        return float(np.exp(np.mean(np.log(values))))

    for style in styles:
        model = build_model(load_style(style)).eval()
        target = metrics.load(str(painting(style, args.paintings)), 512)
        with torch.no_grad():
            reference = [model(x).clamp(0, 255) for x in inputs]
        fp32_ratio = ratio(reference)
        exported = openvino_runner.export(model)
        for name in args.variants:
            start = time.perf_counter()
            source = exported
            if name.startswith("equalized"):
                source = openvino_runner.export(equalize(model, [torch.from_numpy(c) for c in calibration]))
                with torch.no_grad():
                    equal_db = min(psnr(ov_model_output(source, x, args.threads), r) for x, r in zip(inputs, reference))
                print(f"{style} equalized fp32 against the original: {equal_db:.1f} dB", flush=True)
            quantized = nncf.quantize(source, nncf.Dataset(calibration), subset_size=len(calibration),
                                      **{"fast_bias_correction": True, **table[name]})
            build_s = time.perf_counter() - start
            outs, cpu_ms = run_ov(quantized, inputs, args.threads)
            db = min(psnr(o.clamp(0, 255), r) for o, r in zip(outs, reference))
            detail = min(detail_snr(o.clamp(0, 255), r) for o, r in zip(outs, reference))
            int8_ratio = ratio(outs)
            row = {"style": style, "digest": openvino_runner.weights_digest(model)[:16], "variant": name,
                   "psnr_min_db": round(db, 2), "detail_snr_min_db": round(detail, 2),
                   "fp32_ratio": round(fp32_ratio, 4), "int8_ratio": round(int8_ratio, 4),
                   "ratio_change": round(int8_ratio / fp32_ratio - 1, 4), "cpu_ms": round(cpu_ms, 1),
                   "build_s": round(build_s, 1)}
            results[f"{style}/{name}"] = row
            print(json.dumps(row), flush=True)
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
