"""The style network's INT8 recipe on OpenVINO: equalize, quantize, check against fp32, fall back.

1. `norm_equalize.equalize` rescales the convolutions ahead of each instance norm (their outputs
   are what INT8 quantizes per tensor; see that module), then the network is exported and NNCF
   quantizes it as `openvino_runner.quantize` does.
2. The check: the INT8 model and the (same, equalized) fp32 model stylize the three shipped photos
   at the largest calibration size; the score is the detail SNR, the fp32 output's own fine detail
   (itself minus a 5×5 box blur) over the INT8 error, in dB, the worst photo's. Plain PSNR does
   not rank the styles: a busy style keeps its look at 28 dB, a pale one loses it at 38 dB; the
   error set against the output's own texture does (docs/cpu.md, "INT8 against fp32").
3. Below `MIN_DETAIL_SNR_DB` the model is quantized again with the norms' inputs left in floating
   point (NNCF `ignored_scope` by type MVN: the convolutions keep INT8 weights and inputs, their
   outputs stay float); checked again, and below the bar still the style runs in fp32 OpenVINO.

The form taken and its score are logged and stored in the IR's runtime info (`form_of`), so a
cached model says what it is without the check running again. No VGG, no data beyond the
package's photos: the check costs two compiles and six 384-px inferences beside the calibration.
"""
from __future__ import annotations

import logging

import numpy as np
import torch

from .norm_equalize import equalize

log = logging.getLogger(__name__)

STYLE_INT8_RECIPE = 1        # joins the cache key: bump when anything below changes
MIN_DETAIL_SNR_DB = 20.0
FORMS = ("int8", "int8-float-norm-inputs", "fp32")
VARIANTS_PER_PHOTO = 4      # calibration_images: the photo, its mirror, a crop, a colour change
RT_PATH = ["styleforge", "int8_form"]
RT_SCORE = ["styleforge", "int8_detail_snr_db"]


def detail_snr(out: np.ndarray, ref: np.ndarray) -> float:
    """dB of `ref`'s detail (ref minus its 5×5 box blur, per channel) over the energy of out − ref.

    Both (N, 3, H, W) in 0–255, clamped here as a user sees them."""
    out, ref = (torch.from_numpy(np.clip(a, 0, 255)).double() for a in (out, ref))
    blur = torch.nn.functional.avg_pool2d(ref, 5, stride=1, padding=2, count_include_pad=False)
    detail = float(((ref - blur) ** 2).mean())
    error = float(((out - ref) ** 2).mean())
    return float("inf") if error == 0 else 10 * float(np.log10(max(detail, 1e-12) / error))


def check_photos(calibration: list[np.ndarray]) -> list[np.ndarray]:
    """The unaltered photos at the largest calibration size: `calibration_images` gives, per photo
    and size, the photo first and then `VARIANTS_PER_PHOTO - 1` changed copies."""
    largest = max(max(image.shape[2:]) for image in calibration)
    return [image for image in calibration[::VARIANTS_PER_PHOTO] if max(image.shape[2:]) == largest]


def outputs(ov_model, images: list[np.ndarray], precision: str) -> list[np.ndarray]:
    import openvino as ov
    from .openvino_runner import compile_config
    compiled = ov.Core().compile_model(ov_model, "CPU", compile_config(precision, torch.get_num_threads()))
    return [np.array(compiled({0: image})[compiled.output(0)], copy=True) for image in images]


def score(int8_model, reference: list[np.ndarray], images: list[np.ndarray]) -> float:
    return min(detail_snr(out, ref) for out, ref in zip(outputs(int8_model, images, "int8"), reference))


def mark(ov_model, form: str, snr: float):
    ov_model.set_rt_info(form, RT_PATH)
    ov_model.set_rt_info(f"{snr:.2f}", RT_SCORE)
    return ov_model


def form_of(ov_model) -> str:
    """The form a built model took (`FORMS`); `int8` for an IR built before the check existed."""
    return ov_model.get_rt_info(RT_PATH).astype(str) if ov_model.has_rt_info(RT_PATH) else "int8"


def build(model: torch.nn.Module, calibration: list[np.ndarray], export, quantize,
          min_snr: float | None = None):
    """The style network's OpenVINO model in the first form (`FORMS`) whose check passes
    (`min_snr`: the bar in dB, default `MIN_DETAIL_SNR_DB`)."""
    import nncf
    min_snr = MIN_DETAIL_SNR_DB if min_snr is None else min_snr
    fp32 = export(equalize(model, [torch.from_numpy(image) for image in calibration]))
    images = check_photos(calibration)
    reference = outputs(fp32, images, "fp32")
    snr = float("nan")
    for form, ignored in (("int8", None), ("int8-float-norm-inputs", nncf.IgnoredScope(types=["MVN"]))):
        candidate = quantize(fp32.clone(), calibration, ignored_scope=ignored)
        snr = score(candidate, reference, images)
        if snr >= min_snr:
            log.info("OpenVINO INT8 as %s: detail SNR %.1f dB against fp32 (bar %.1f)", form, snr, min_snr)
            return mark(candidate, form, snr)
        log.warning("OpenVINO INT8 as %s: detail SNR %.1f dB against fp32, under the bar of %.1f dB; "
                    "trying the next form", form, snr, min_snr)
    log.warning("this style runs in fp32 on OpenVINO: INT8 stayed under the %.1f dB bar", min_snr)
    return mark(fp32, "fp32", snr)
