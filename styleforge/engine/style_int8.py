"""The style network's INT8 recipe on OpenVINO: which layers stay float, per style, and a check.

Forms (`FORMS`), fastest first:
- `int8`: every convolution INT8, inputs and outputs, after `norm_equalize.equalize` rescaled
  the convolutions ahead of each instance norm (their outputs are what INT8 quantizes per tensor,
  and what the norms then magnify; see that module).
- `int8-float-norm-inputs`: the convolutions keep INT8 weights and inputs, but their outputs, the
  instance norms' inputs, stay float (NNCF `ignored_scope` by type MVN). About a tenth more CPU
  time per call on the development host; it keeps the style where `int8` does not.
- `fp32`: the whole network in fp32 on OpenVINO.

Which form a style gets is measured, not guessed at run time: the quantity that matters, the
style ratio against the painting, needs VGG and the painting, and no pixel measure available at
run time ranks the styles (docs/cpu.md: a style losing 40 % of its ratio shows 37.8 dB PSNR, one
losing none 28 dB). `dev/diag/openvino_int8_styles.py` measures each style's forms with the
shared metrics; weights whose `int8` form stays within 10 % of fp32's style ratio are listed in
`INT8_MEASURED` by weights digest (so a retrained style is measured again), unless the form
costs the CLI's files a bar of their own (primeros_memoriales: −2.9 % style ratio but a PNG grid
of 10.2 in `int8` against 9.2 in the other form, issue 44's bar 10; aratea's round-14 file:
+0.6 %, PNG grid 10.9 against 9.7). Every other weights file,
the user's own included, gets `int8-float-norm-inputs`.

Then a check catches a broken model, not a style's drift: the chosen form and the fp32 model
stylize the three shipped photos at the largest calibration size; below `MIN_PSNR_DB` the next
form is tried. The form taken and its PSNR are logged and stored in the IR's runtime info
(`form_of`), so a cached model says what it is without the check running again.
"""
from __future__ import annotations

import logging
import math

import numpy as np
import torch

from ..psnr import psnr
from .norm_equalize import equalize

log = logging.getLogger(__name__)

STYLE_INT8_RECIPE = 1        # joins the cache key: bump when anything below changes
FORMS = ("int8", "int8-float-norm-inputs", "fp32")
MIN_PSNR_DB = 22.0           # under every built-in style's measured INT8 PSNR (28–45 dB): breakage only
VARIANTS_PER_PHOTO = 4       # calibration_images: the photo, its mirror, a crop, a colour change
RT_FORM = ["styleforge", "int8_form"]
RT_PSNR = ["styleforge", "int8_psnr_db"]

# weights digest (`openvino_runner.weights_digest`, first 16 hex) → style: the `int8` form measured
# within 10 % of fp32's style ratio on the asset photos at 512 px, leaving a margin to the 15 % bar
# for other photos and sizes (docs/cpu.md, "INT8 against fp32").
INT8_MEASURED = {
    "0211d39209275001": "candy",
    "46d071508da881e1": "dendera",
    "c82b7e6ce58fb23a": "aratea",
    "f27f4feb19282ee0": "great_wave",
    "b867a1cf83d400ff": "rain_princess",
    "900eb8b4b27d130d": "shipwreck",
    "f59b8c6c09942c55": "starry_night",
    "5af599d891e0dcfa": "the_scream",
    "d83b839e5318f480": "udnie",
}


def first_form(digest: str) -> str:
    return "int8" if digest[:16] in INT8_MEASURED else "int8-float-norm-inputs"


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


def mark(ov_model, form: str, db: float):
    ov_model.set_rt_info(form, RT_FORM)
    ov_model.set_rt_info(f"{db:.2f}", RT_PSNR)
    return ov_model


def form_of(ov_model) -> str:
    """The form a built model took (`FORMS`); `int8` for an IR built before the forms existed."""
    return ov_model.get_rt_info(RT_FORM).astype(str) if ov_model.has_rt_info(RT_FORM) else "int8"


def build(model: torch.nn.Module, calibration: list[np.ndarray], export, quantize, digest: str,
          min_psnr: float | None = None):
    """The style network's OpenVINO model in its form (`first_form`), or the next one whose check
    passes (`min_psnr`: the bar in dB, default `MIN_PSNR_DB`)."""
    import nncf
    min_psnr = MIN_PSNR_DB if min_psnr is None else min_psnr
    start = FORMS.index(first_form(digest))
    images = check_photos(calibration)
    fp32 = export(model)
    reference = outputs(fp32, images, "fp32")
    db = math.nan
    for form in FORMS[start:-1]:
        if form == "int8":
            candidate = quantize(export(equalize(model, [torch.from_numpy(c) for c in calibration])), calibration)
        else:
            candidate = quantize(fp32.clone(), calibration, ignored_scope=nncf.IgnoredScope(types=["MVN"]))
        db = min(psnr(out, ref, clip=True) for out, ref in zip(outputs(candidate, images, "int8"), reference))
        if db >= min_psnr:
            log.info("OpenVINO INT8 as %s: %.1f dB against fp32 on the shipped photos", form, db)
            return mark(candidate, form, db)
        log.warning("OpenVINO INT8 as %s: %.1f dB against fp32, under the %.1f dB bar; trying the next form",
                    form, db, min_psnr)
    log.warning("this style runs in fp32 on OpenVINO: its INT8 forms stayed under the %.1f dB bar", min_psnr)
    return mark(fp32, "fp32", db)
