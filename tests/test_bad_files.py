"""Bad candidate files get clear verdicts from ``kbench eval``: a specific status and message each, exit
code 0 (correct), 1 (evaluated, not correct) or 2 (bad input), never a hang and never a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbench.core.library import MAX_SOURCE_BYTES, CandidateFileError, read_source
from kbench.core.tasks import TASK

REPO = Path(__file__).resolve().parent.parent
TASK_NAME = "L1_gelu"
CLI_TIMEOUT = 90  # a hang fails the test instead of the suite

OK_BODY = 'def forward(x, params, alloc):\n    return x["x"] * 1.0\n'

# name -> (file bytes, exit code, status, message regex)
EVALUATED: dict[str, tuple[bytes, int, str, str]] = {
    "empty": (b"", 1, "compile_error", r"^no forward\(\) defined$"),
    "whitespace_only": (b"\n\n   \n# nothing here\n", 1, "compile_error", r"^no forward\(\) defined$"),
    "syntax_error": (b'def forward(x, params, alloc):\n    return (x["x"]\n', 1, "compile_error",
                     r"^SyntaxError: .+ \(line 2\)$"),
    "no_forward": (b'def fwd(x, params, alloc):\n    return x["x"]\n', 1, "compile_error", r"^no forward\(\) defined$"),
    "forward_not_callable": (b"forward = 3\n", 1, "compile_error", r"^forward is not callable$"),
    "forward_wrong_arity": (b'def forward(x):\n    return x["x"]\n', 1, "compile_error",
                            r"^forward\(\) must accept 3 positional arguments$"),
    "init_raises": (b'def init(params):\n    raise ValueError("weights file missing")\n\n' + OK_BODY.encode(), 1,
                    "runtime_error", r"^init failed: ValueError: weights file missing \(line 2\)$"),
    "raises_at_import": (b'import numpy as np\nraise RuntimeError("no GPU found")\n' + OK_BODY.encode(), 1,
                         "compile_error", r"^RuntimeError: no GPU found \(line 2\)$"),
    "prints_100mb_in_forward": (b'def forward(x, params, alloc):\n'
                                b'    for i in range(1_000_000):\n'
                                b'        print("debug", i, "x" * 100)\n'
                                b'    return x["x"] * 1.0\n', 1, "runtime_error",
                                r"^printed more than 1 MB to stdout$"),
    "prints_100mb_at_once": (b'def forward(x, params, alloc):\n'
                             b'    print("x" * (100 << 20))\n'
                             b'    return x["x"] * 1.0\n', 1, "runtime_error", r"^printed more than 1 MB to stdout$"),
    # At import time the flood is caught by the loader, so it reads as a load failure; still one clear line.
    "prints_100mb_at_import": (b'print("x" * (100 << 20))\n\n' + OK_BODY.encode(), 1, "compile_error|runtime_error",
                               r"printed more than 1 MB to stdout"),
}

# name -> (file bytes, message regex on the one stderr line)
UNREADABLE: dict[str, tuple[bytes, str]] = {
    "non_utf8": (b'def forward(x, params, alloc):\n    return x["x"]  # caf\xe9\n',
                 r"is not UTF-8 text \(byte \d+: b'\\xe9'\)$"),
    "utf16": ("def forward(x, params, alloc):\n    return x['x']\n".encode("utf-16"), r"is not UTF-8 text"),
    "ten_megabytes": (b"# padding to make a large file\n" * (10_000_000 // 31 + 1) + OK_BODY.encode(),
                      r"is 10\.0 MB; candidate files are limited to 1 MB$"),
}


def _cli(*args: str, timeout: float = CLI_TIMEOUT) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "eval", *args], capture_output=True, timeout=timeout,
                       cwd=REPO, text=True, errors="replace")
    return p, time.perf_counter() - t0


def _no_traceback(p: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr[-2000:]


def _json_result(p: subprocess.CompletedProcess) -> dict:
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1, p.stdout[-2000:]
    return json.loads(lines[0])


@pytest.mark.parametrize("name", EVALUATED)
def test_evaluated_bad_file(name, tmp_path):
    data, code, status, msg = EVALUATED[name]
    path = tmp_path / f"{name}.py"
    path.write_bytes(data)
    p, _ = _cli(TASK_NAME, str(path), "--json")
    _no_traceback(p)
    assert p.returncode == code, (p.returncode, p.stderr[-2000:])
    res = _json_result(p)
    assert res["status"] in status.split("|"), res
    assert re.search(msg, res["msg"]), res["msg"]
    assert len(p.stdout) < 64 << 10  # a candidate's prints never reach the terminal


@pytest.mark.parametrize("name", UNREADABLE)
def test_unreadable_file_is_one_line_exit_2(name, tmp_path):
    data, msg = UNREADABLE[name]
    path = tmp_path / f"{name}.py"
    path.write_bytes(data)
    p, _ = _cli(TASK_NAME, str(path))
    _no_traceback(p)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbench: error: "), p.stderr
    assert re.search(msg, lines[0]), lines[0]


def test_missing_file_and_directory_are_one_line_exit_2(tmp_path):
    for target, msg in ((tmp_path / "nope.py", r"cannot read .*nope\.py"), (tmp_path, r"is a directory")):
        p, _ = _cli(TASK_NAME, str(target))
        _no_traceback(p)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
        assert re.search(msg, p.stderr), p.stderr


def test_nul_bytes_get_a_clean_message(tmp_path):
    path = tmp_path / "nul.py"
    path.write_bytes(OK_BODY.encode() + b"\x00\n")
    p, _ = _cli(TASK_NAME, str(path), "--json")
    _no_traceback(p)
    assert p.returncode == 1
    res = _json_result(p)
    assert res["status"] == "compile_error" and "null bytes" in res["msg"]
    assert "line None" not in res["msg"], res["msg"]


def test_streamed_log_has_the_verdict_and_no_traceback(tmp_path):
    path = tmp_path / "init_raises.py"
    path.write_bytes(EVALUATED["init_raises"][0])
    p, _ = _cli(TASK_NAME, str(path))
    _no_traceback(p)
    assert p.returncode == 1
    assert "init failed: ValueError: weights file missing (line 2)" in p.stdout
    assert "verdict ! runtime error: init failed" in p.stdout


def test_spinning_candidate_ends_at_its_timeout(tmp_path):
    path = tmp_path / "spin.py"
    path.write_text("def forward(x, params, alloc):\n    while True:\n        pass\n")
    p, wall = _cli(TASK_NAME, str(path), "--json", "--timeout", "2")
    _no_traceback(p)
    assert p.returncode == 1
    res = _json_result(p)
    assert res["status"] == "runtime_error" and res["msg"] == "timed out after 2 s"
    assert res["elapsed"] < 2 + 2
    assert wall < 2 + 2 + 8  # plus interpreter start-up and imports


def test_correct_candidate_exits_0(tmp_path):
    path = tmp_path / "reference.py"
    path.write_text(TASK[TASK_NAME].ref_src)
    p, _ = _cli(TASK_NAME, str(path), "--json", "--dist", "normal")
    _no_traceback(p)
    assert p.returncode == 0, p.stdout[-2000:]
    assert _json_result(p)["status"] == "correct"


# ------------------------------------------------------------------ read_source directly

def test_read_source_messages_are_one_line(tmp_path):
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (MAX_SOURCE_BYTES + 1))
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"\xff\xfe\x00x")
    for path in (big, bad, tmp_path / "missing.py", tmp_path):
        with pytest.raises(CandidateFileError) as e:
            read_source(path)
        assert "\n" not in str(e.value) and str(path) in str(e.value)
    ok = tmp_path / "ok.py"
    ok.write_text(OK_BODY)
    assert read_source(ok) == OK_BODY



# ------------------------------------------------------------------ sources that attack the grader (issue 16, class 4)

@pytest.mark.parametrize("name", ["deep", "aliases", "megabyte"])
def test_a_hostile_source_ends_in_one_verdict_line_never_a_traceback(name, tmp_path):
    """A 7000-deep expression (ast.parse raises MemoryError), 10 000 aliases, a file just under 1 MB: the
    log ends in one verdict line and a documented exit code (0 correct, 1 not, 3 the grader failed and
    said so in that line); --json prints one object either way."""
    from tests.sample_model.generate import HOSTILE_SOURCES

    path = tmp_path / f"{name}.py"
    path.write_text(HOSTILE_SOURCES[name](TASK[TASK_NAME].ref_src))
    p, _ = _cli(TASK_NAME, str(path), "--dist", "normal")
    _no_traceback(p)
    assert p.returncode in (0, 1, 3), (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    last = p.stdout.strip().splitlines()[-1].split(None, 2)
    assert last[1] == "verdict", p.stdout[-2000:]
    if p.returncode == 3:
        assert last[2].startswith("no verdict: the grader failed (") and "\n" not in last[2]
    j, _ = _cli(TASK_NAME, str(path), "--dist", "normal", "--json")
    _no_traceback(j)
    assert j.returncode == p.returncode
    res = _json_result(j)
    assert (res["status"] is None and res["error"]) if j.returncode == 3 else res["status"] in (
        "correct", "wrong", "rejected", "compile_error", "runtime_error")
