"""`dev/device/common.sh`, the functions the device scripts share, run in bash here with the GPU
machine's tools (nvidia-smi, git, compute-sanitizer, date, python where named) replaced by stubs
that print what they were given; and every device script parses and sources it before its cd."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DEVICE = Path(__file__).resolve().parents[2] / "dev" / "device"
COMMON = DEVICE / "common.sh"
SOURCE_LINE = '. "$(dirname "$0")/common.sh"'
PYTHON_DIR = Path(sys.executable).parent   # the real python, for the helpers that run one

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def sh(tmp_path):
    """Runs a bash snippet after sourcing common.sh, in tmp_path, with tmp_path/bin first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub(bin_dir, "nvidia-smi", 'echo "H200, 550.1"')
    stub(bin_dir, "git", 'echo 0123abcd')
    stub(bin_dir, "date", 'echo 1007')
    stub(bin_dir, "compute-sanitizer", 'echo "$* cache=${PYTORCH_NO_CUDA_MEMORY_CACHING-unset}"')

    def run(script: str, env: dict | None = None) -> subprocess.CompletedProcess:
        env = {"PATH": f"{bin_dir}:{PYTHON_DIR}:/usr/bin:/bin", "HOME": str(tmp_path), **(env or {})}
        return subprocess.run(["bash", "-c", f"set -uo pipefail\n. {COMMON}\n{script}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
    run.bin = bin_dir
    return run


def test_every_script_using_the_helpers_sources_them_before_any_cd():
    names = set(re.findall(r"^([a-z_]+)\(\) ?\{", COMMON.read_text(), re.M)) | {"TEMPORAL_VGG", "TEMPORAL_PAINTING"}
    wrong = []
    for script in sorted(DEVICE.glob("*.sh")):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, script.name
        if script == COMMON:
            continue
        lines = script.read_text().splitlines()
        code = [line.split(" # ")[0] for line in lines]   # a trailing comment's words are not calls
        uses = [i for i, line in enumerate(code) if not line.startswith("#")
                and any(re.search(rf"(^|[\s$({{\"]){n}\b", line) for n in names)]
        if not uses:
            continue
        first_cd = next((i for i, line in enumerate(lines) if line.startswith("cd ")), len(lines))
        source = lines.index(SOURCE_LINE) if SOURCE_LINE in lines else len(lines)
        if not source < min(first_cd, *uses):
            wrong.append(script.name)
    assert wrong == []


def test_start_in_repo_enters_the_root_from_any_folder(tmp_path):
    repo = tmp_path / "repo"
    (repo / "dev" / "device").mkdir(parents=True)
    shutil.copy(COMMON, repo / "dev" / "device")
    (repo / "dev" / "device" / "x.sh").write_text(
        f'set -uo pipefail\n{SOURCE_LINE}\nOUT=out/o\nstart_in_repo\necho "$PWD $PYTHONPATH"\n')
    for cwd, path in ((tmp_path, "repo/dev/device/x.sh"), (repo / "dev" / "device", "x.sh")):
        done = subprocess.run(["bash", path], cwd=cwd, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "/p"},
                              capture_output=True, text=True)
        assert done.stdout == f"{repo} {repo}:/p\n"
        assert (repo / "out" / "o").is_dir()


def test_gpu_header_writes_the_gpu_the_versions_and_the_commit(sh, tmp_path):
    assert sh('gpu_header g.txt "print(\'torch 2\')"; echo rc=$?').stdout == "rc=0\n"
    assert (tmp_path / "g.txt").read_text() == "H200, 550.1\ntorch 2\n0123abcd\n"
    stub(sh.bin, "git", 'echo "fatal: not a git repository" >&2; exit 128')
    sh('gpu_header g.txt || echo "no git here" >> g.txt')
    assert (tmp_path / "g.txt").read_text() == "H200, 550.1\nfatal: not a git repository\nno git here\n"
    sh("gpu_versions v.txt")
    assert (tmp_path / "v.txt").read_text() == "H200, 550.1\n"


def test_need_pyav_exits_2_and_says_why(sh, tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "av.py").write_text("raise ImportError('no av here')\n")
    done = sh("OUT=.; need_pyav; echo went on", {"PYTHONPATH": str(tmp_path / "broken")})
    assert (done.returncode, done.stdout) == (2, "PyAV is not importable: join it first\n")
    text = (tmp_path / "pyav.txt").read_text()
    assert "no av here" in text and text.endswith("PyAV is not importable: join it first\n")
    (tmp_path / "fine").mkdir()
    (tmp_path / "fine" / "av.py").write_text("")
    done = sh("OUT=.; need_pyav; echo went on", {"PYTHONPATH": str(tmp_path / "fine")})
    assert (done.returncode, done.stdout) == (0, "went on\n")


def test_pyav_from_whl_installs_a_carried_wheel_into_tmp_site(sh, tmp_path):
    stub(sh.bin, "python", '[ "$1" = -c ] && exit 1; echo "python $*"')
    assert sh('pyav_from_whl; echo "[$PYTHONPATH]"', {"PYTHONPATH": "/p"}).stdout == "[/p]\n"
    (tmp_path / ".whl").mkdir()
    (tmp_path / ".whl" / "av-14.whl").write_text("")
    assert sh('pyav_from_whl; echo "[$PYTHONPATH]"', {"PYTHONPATH": "/p"}).stdout == (
        "python -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/av-14.whl\n"
        "[/tmp/site]\n")


def test_clock_budget_and_log_lines(sh, tmp_path):
    done = sh('START=1000; BUDGET_S=100; LOG=l.txt; echo "$(elapsed) $(left)"; say "step: exit 0"')
    assert done.stdout == "7 93\n[7 s] step: exit 0\n"
    assert (tmp_path / "l.txt").read_text() == "[7 s] step: exit 0\n"


def test_sanitize_runs_memcheck_uncached_and_racecheck_quick(sh):
    done = sh("for t in memcheck racecheck; do sanitize 5 $t python s.py\n"
              '  echo "after ${PYTORCH_NO_CUDA_MEMORY_CACHING-unset}"; done')
    assert done.stdout == ("--tool memcheck --print-limit 20 python s.py cache=1\nafter 1\n"
                           "--tool racecheck --print-limit 20 python s.py --quick cache=unset\nafter unset\n")


def test_bench_temporal_writes_name_md_and_log(sh, tmp_path):
    stub(sh.bin, "python", 'echo "$*"; echo warned >&2; exit 3')
    (tmp_path / "o").mkdir()
    assert sh('OUT=o; bench_temporal 5 bench_x --style candy; echo rc=$?').stdout == "rc=3\n"
    assert (tmp_path / "o" / "bench_x.md").read_text() == "-m styleforge bench --temporal --style candy --output o\n"
    assert (tmp_path / "o" / "bench_x.log").read_text() == "warned\n"


def test_temporal_data_needs_both_files(sh, tmp_path):
    assert sh("temporal_data").returncode == 1
    (tmp_path / ".data" / "temporal").mkdir(parents=True)
    (tmp_path / ".data" / "temporal" / "vgg16_relu4_3.fp16.pth").write_text("")
    assert sh("temporal_data").returncode == 1
    (tmp_path / ".data" / "temporal" / "candy.jpg").write_text("")
    assert sh("temporal_data").returncode == 0


def test_boxed_keeps_the_log_of_a_step_killed_at_its_limit_with_its_stacks(sh, tmp_path):
    (tmp_path / "o").mkdir()
    code = "import time; print('started', flush=True); time.sleep(30)"
    done = sh(f'OUT=o; boxed slow 1 python -X faulthandler -c "{code}"; '
              'boxed quick 5 python -c "print(1)"; echo went on')
    assert done.stdout.startswith("slow: rc 124 after 0 s (box 1 s)\n") and done.stdout.endswith(
        "quick: rc 0 after 0 s (box 5 s)\n1\nwent on\n")
    log = (tmp_path / "o" / "slow.log").read_text()
    assert log.startswith("started\n") and "Fatal Python error: Aborted" in log and "line 1 in <module>" in log
    assert (tmp_path / "o" / "steps.txt").read_text() == ("slow: rc 124 after 0 s (box 1 s)\n"
                                                          "quick: rc 0 after 0 s (box 5 s)\n")
