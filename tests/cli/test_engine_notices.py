"""A style's first use on OpenVINO (export + INT8 calibration, tens of seconds) is said on the
command's output: the engine logs it at INFO, which Python's default logging hides."""
import logging

import pytest

from styleforge.cli import main
from styleforge.notices import NOTICE_LOGGERS, engine_notices

RUNNER = logging.getLogger("styleforge.engine.openvino_runner")


def test_forwards_info_and_warnings_then_restores_the_logger():
    assert RUNNER.name in NOTICE_LOGGERS
    before = (RUNNER.level, RUNNER.propagate, list(RUNNER.handlers))
    said = []
    with engine_notices(said.append):
        RUNNER.info("preparing the OpenVINO %s model", "int8")
        RUNNER.debug("not for users")
        RUNNER.warning("could not cache it")
    RUNNER.info("after the block")
    assert said == ["preparing the OpenVINO int8 model", "warning: could not cache it"]
    assert (RUNNER.level, RUNNER.propagate, list(RUNNER.handlers)) == before


def test_overlapping_blocks_from_threads_restore_the_logger_once_all_end():
    """Web requests overlap: each sees its own thread's lines, and the logger comes back as it was
    whichever block ends first."""
    import threading
    before = (RUNNER.level, RUNNER.propagate, list(RUNNER.handlers))
    mine, everything = [], []
    outer = engine_notices(everything.append)
    outer.__enter__()
    with engine_notices(mine.append, this_thread_only=True):
        worker = threading.Thread(target=RUNNER.info, args=("another request's build",))
        worker.start()
        worker.join()
        RUNNER.info("this request's build")
        outer.__exit__(None, None, None)            # the first block ends inside the second
        assert RUNNER.propagate is False            # still forwarding for the open one
        RUNNER.info("still mine")
    assert mine == ["this request's build", "still mine"]
    assert everything == ["another request's build", "this request's build"]
    assert (RUNNER.level, RUNNER.propagate, list(RUNNER.handlers)) == before


def test_a_failing_say_does_not_break_the_engine(capsys):
    def broken(message):
        raise OSError("stderr closed")
    with engine_notices(broken):
        RUNNER.info("preparing")     # reported by logging's handleError; nothing raises here
    err = capsys.readouterr().err
    assert "Logging error" in err and "stderr closed" in err


def test_stylize_says_the_preparation(styles_env, tmp_path, capsys, monkeypatch):
    """The CLI forwards what the engine logs while it builds the stylizer (here a stand-in for
    the OpenVINO export, so the test needs neither openvino nor its minutes)."""
    from PIL import Image

    import styleforge.api as api
    real = api.get_stylizer

    def logging_build(options):
        RUNNER.info("preparing the OpenVINO int8 model for this style (once; cached in %s)", tmp_path)
        return real(options)

    monkeypatch.setattr(api, "get_stylizer", logging_build)
    Image.new("RGB", (20, 16), (90, 120, 200)).save(tmp_path / "a.png")
    code = main(["stylize", str(tmp_path / "a.png"), "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 0
    assert f"preparing the OpenVINO int8 model for this style (once; cached in {tmp_path})" in err
    assert err.index("preparing the OpenVINO") < err.index("1 done")


@pytest.mark.slow
def test_the_real_export_is_said_once_then_cached(styles_env, tmp_path, capsys, monkeypatch):
    """With OpenVINO installed: the runner's own lines on the first run, none on the second."""
    pytest.importorskip("openvino")
    from PIL import Image

    import styleforge.api as api
    monkeypatch.setenv("STYLEFORGE_CACHE_DIR", str(tmp_path / "cache"))
    Image.new("RGB", (24, 20), (200, 120, 40)).save(tmp_path / "a.png")
    argv = ["stylize", str(tmp_path / "a.png"), "--device", "cpu", "--backend", "openvino",
            "--precision", "fp32", "--overwrite"]
    assert main(argv) == 0
    first = capsys.readouterr().err
    assert "preparing the OpenVINO fp32 model for this style (once; cached in " in first
    assert "OpenVINO fp32 model for this style ready in" in first
    api.clear_cache()                       # a new process, as far as the stylizer goes
    assert main(argv) == 0
    assert "preparing the OpenVINO" not in capsys.readouterr().err


def test_quieted_holds_back_lower_records_then_restores_the_level(caplog):
    from styleforge.notices import quieted
    chatty = logging.getLogger("styleforge.test.chatty")
    chatty.setLevel(logging.DEBUG)
    with caplog.at_level(logging.DEBUG, logger="styleforge.test.chatty"):
        with quieted("styleforge.test.chatty"):
            chatty.info("a note for nobody")
            chatty.warning("worth seeing")
        chatty.info("after")
    assert [r.getMessage() for r in caplog.records] == ["worth seeing", "after"]
    assert chatty.level == logging.DEBUG
