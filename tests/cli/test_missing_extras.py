"""Commands whose optional dependency is missing say which extra to install, in one line, and
`help(styleforge.api)` works after a plain `import styleforge`."""
from __future__ import annotations

import subprocess
import sys

import pytest

from styleforge.cli import main


@pytest.mark.parametrize("module, argv, extra", [
    ("av", ["video", "in.mp4", "-o", "out.mp4"], "styleforge[video]"),
    ("cv2", ["webcam", "--no-window", "--max-frames", "1"], "styleforge[webcam]"),
])
def test_a_missing_extra_is_one_line_naming_it(monkeypatch, capsys, module, argv, extra):
    monkeypatch.setitem(sys.modules, module, None)         # import fails as if not installed
    monkeypatch.delitem(sys.modules, "styleforge.media.camera", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f'pip install "{extra}"' in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


@pytest.mark.slow   # 0.5-2.5 s: keeps `-m "not slow"` under a minute on the 2-core CI machine
def test_help_of_a_submodule_after_import_styleforge():
    probe = "import styleforge, pydoc; print(pydoc.render_doc(styleforge.api).splitlines()[0])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "styleforge.api" in done.stdout
    import styleforge
    with pytest.raises(AttributeError):
        styleforge.no_such_thing  # noqa: B018
