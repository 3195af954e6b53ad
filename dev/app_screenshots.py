"""Refresh docs/images/app_*.png from the browser test's screenshots (not by hand).

Runs `tests/app/test_app_browser.py::test_screenshots_of_the_app` with a known --basetemp, then
copies its PNGs into docs/images/, reduced to a 256-colour palette (and halved if still over
300 KB) so the repository stays small. Needs what the browser tests need (chromium, playwright).
Usage: python dev/app_screenshots.py
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 300 * 1024


def shrink(source: Path, target: Path) -> int:
    image = Image.open(source).convert("RGB")
    while True:
        image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)
        if target.stat().st_size <= LIMIT or image.width < 400:
            return target.stat().st_size
        image = image.resize((image.width * 3 // 4, image.height * 3 // 4), Image.LANCZOS)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sf-shots-") as tmp:
        test = "tests/app/test_app_browser.py::test_screenshots_of_the_app"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", test, f"--basetemp={tmp}/t"], cwd=ROOT)
        if done.returncode:
            return done.returncode
        for shot in sorted((Path(tmp) / "t" / "screenshots").glob("app_*.png")):
            size = shrink(shot, ROOT / "docs" / "images" / shot.name)
            sys.stdout.write(f"docs/images/{shot.name}: {size / 1024:.0f} KB\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
