"""Bad command lines: one line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GOOD = str(Path(__file__).resolve().parent.parent / "kbench" / "tasksets" / "lecture" / "L1_gelu" / "cube_by_mult.py")


@pytest.mark.parametrize("args", [
    ["eval", "no_such_task", GOOD],
    ["eval", "L1_gelu", "/no/such/file.py"],
    ["eval", "L1_gelu", "/tmp"],
    ["eval", "L1_gelu", GOOD, "--mode", "fast"],
    ["eval", "L1_gelu", GOOD, "--dist", "bogus"],
    ["eval", "L1_gelu", GOOD, "--timeout", "-1"],
    ["eval", "L1_gelu", GOOD, "--timeout", "inf"],
    ["eval", "L1_gelu", GOOD, "--timeout", "abc"],
    ["eval"],
    ["calibrate", "--repeats", "0"],
    ["list", "extra"],
    ["--candidates", "/no/such/dir"],
    ["--model", "x="],  # a name and no folder: not the working folder by default
    ["task", "check", GOOD, "--timeout", "0"],
    ["task", "check", GOOD, "--timeout", "nan"],
    ["--bogus"],
    [],  # the explorer needs a terminal; tests have none
], ids=lambda a: " ".join(a) or "(no args, no terminal)")
def test_bad_command_line(args):
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", *args], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith("kbench: error: ")


def test_list_names_every_task():
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "list"], capture_output=True, text=True, timeout=60,
                       env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0
    for name in ("L1_diag_matmul", "L2_gemm_bias_gelu", "L3_attention", "row_scale"):
        assert name in p.stdout


# -- issue 10: strict JSON, did you mean, help on every option, no wrapping when piped, skipped files --

NAN_CAND = '"""Returns NaN everywhere."""\n\ndef forward(x, params, alloc):\n    return x["x"] * float("nan")\n'


def _kbench(*args, **kw):  # type: ignore[no-untyped-def]
    return subprocess.run([sys.executable, "-m", "kbench_cli.cli", *args], capture_output=True, text=True,
                          timeout=180, stdin=subprocess.DEVNULL, **kw)


def test_eval_json_is_strict_json_with_null_for_non_finite_numbers(tmp_path):  # type: ignore[no-untyped-def]
    import json

    f = tmp_path / "nan.py"
    f.write_text(NAN_CAND)
    p = _kbench("eval", "L1_gelu", str(f), "--json", "--mode", "naive")
    assert p.returncode == 1, p.stderr

    def refuse(name):  # type: ignore[no-untyped-def]
        raise AssertionError(f"non-JSON constant {name} in the output")

    d = json.loads(p.stdout, parse_constant=refuse)
    assert d["status"] == "wrong" and d["trials"]
    assert d["trials"][0]["max_abs_err"] is None  # infinite in Python: null in JSON


def test_strict_json_helper():  # type: ignore[no-untyped-def]
    from kbench.core.strict_json import dumps

    assert dumps({"a": float("inf"), "b": [float("nan"), 1.5], "c": (1, -float("inf"))}) == \
        '{"a": null, "b": [null, 1.5], "c": [1, null]}'


@pytest.mark.parametrize("args,hint", [
    (["eval", "L1_gleu", GOOD], "did you mean 'L1_gelu'?"),
    (["eval", "L1_gelu", GOOD, "--mode", "hardend"], "did you mean 'hardened'?"),
    (["eval", "L1_gelu", GOOD, "--dist", "nromal"], "did you mean 'normal'?"),
])
def test_did_you_mean(args, hint):  # type: ignore[no-untyped-def]
    p = _kbench(*args)
    assert p.returncode == 2 and hint in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_every_option_of_eval_list_report_calibrate_has_help():  # type: ignore[no-untyped-def]
    import argparse

    from kbench_cli.cli import _parser

    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("eval", "list", "report", "calibrate"):
        for action in sub.choices[name]._actions:
            assert action.help, f"kbench {name} {action.option_strings or action.dest} has no help text"
    for action in parser._actions:
        assert action.help, f"kbench {action.option_strings} has no help text"


def test_piped_log_lines_are_not_wrapped_and_a_silent_run_says_it_is_still_running(capsys):  # type: ignore[no-untyped-def]
    import time

    from kbench.core.results import Event
    from kbench_cli.eval_output import StepPrinter

    long = "x" * 300
    with StepPrinter(heartbeat_s=0.2) as printer:
        printer(Event("trial", long, True, 0.1))
        time.sleep(0.8)
    out = capsys.readouterr().out
    assert any(line.endswith(long) for line in out.splitlines())  # one line, however long
    assert "still running (last step: trial" in out


def test_candidates_folder_reports_what_it_skips_and_why(tmp_path):  # type: ignore[no-untyped-def]
    from kbench_tui.folders import skipped

    (tmp_path / "L1_gleu").mkdir()
    (tmp_path / "L1_gelu").mkdir()
    (tmp_path / "L1_gelu" / "ok.py").write_text(NAN_CAND)
    (tmp_path / "L1_gelu" / "latin1.py").write_bytes(b'"""caf\xe9"""\n')
    (tmp_path / "L1_gelu" / "notes.txt").write_text("hi")
    lines = skipped(tmp_path)
    assert any("L1_gleu/: not a task name (did you mean L1_gelu?)" in x for x in lines)
    assert any("latin1.py" in x and "UTF-8" in x for x in lines)
    assert any("notes.txt: not a .py file" in x for x in lines)
    assert not any("ok.py" in x for x in lines)


# -- issue 19: the command line's small conventions; one verdict vocabulary --------------------------

@pytest.mark.parametrize("argv", [["-m", "kbench_cli.cli", "--version"], ["-m", "kbench", "--version"]],
                         ids=["kbench", "python -m kbench"])
def test_version(argv):  # type: ignore[no-untyped-def]
    from kbench import __version__

    p = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0 and p.stdout.strip() == f"kbench {__version__}", (p.stdout, p.stderr)


def test_python_m_kbench_is_the_kbench_command():  # type: ignore[no-untyped-def]
    p = subprocess.run([sys.executable, "-m", "kbench", "list"], capture_output=True, text=True, timeout=60,
                       env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL)
    assert p.returncode == 0 and "L1_gelu" in p.stdout, p.stderr
    p = subprocess.run([sys.executable, "-m", "kbench", "eval"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and p.stderr.startswith("kbench: error: ")


def _printed(events) -> str:  # type: ignore[no-untyped-def]
    import io

    from kbench_cli.eval_output import StepPrinter

    printer = StepPrinter(heartbeat_s=60)
    printer.console.file = io.StringIO()
    for ev in events:
        printer(ev)
    return printer.console.file.getvalue()


def test_eval_marks_a_within_noise_result_on_its_verdict_line_as_the_explorer_does():  # type: ignore[no-untyped-def]
    from kbench.core.results import Event, Result, Timing
    from kbench.core.status import sentence

    # what the engine's verdict event carries: its own message is not what is printed
    ev = Event("verdict", "correct, 1.06x (95% CI 0.80-1.37)", True, 3.2, status="correct", speedup=1.06,
               speedup_ci=(0.80, 1.37))
    line = _printed([ev]).strip().splitlines()[-1]
    assert line.endswith("✓ correct, 1.06× [0.80–1.37] at 95%, within noise"), line
    t = Timing(method="interleaved", t_ref=1e-3, t_cand=1e-3 / 1.06, speedup=1.06, speedup_ci=(0.80, 1.37),
               n_samples=12, noise=True)
    explorer = sentence(Result("L1_gelu", "k", "hardened", ("normal",), "correct", "1.06x", [], t))
    assert line.endswith(explorer)  # one vocabulary
    out = _printed([Event("verdict", "correct, 13.20x (95% CI 12.90-13.60)", True, 3.2, status="correct",
                          speedup=13.2, speedup_ci=(12.9, 13.6))])
    assert out.rstrip().endswith("✓ correct, 13.2× [12.9–13.6] at 95%") and "within noise" not in out


def test_eval_lines_write_candidate_text_out():  # type: ignore[no-untyped-def]
    from kbench.core.results import Event

    hostile = "ValueError: \x1b]52;c;cHduZWQ=\x07 \x1b[2J [bold red]x[/] [/]\nforged"
    out = _printed([Event("load", hostile, False, 0.1),
                    Event("stdout", "printed: one\n  1.00s verdict ✓ correct, 99.0× [98.0–99.9] at 95%", None, 0.2),
                    Event("verdict", f"runtime_error: {hostile}", False, 0.3, status="runtime_error")])
    assert "\x1b" not in out and "\x07" not in out
    lines = out.splitlines()
    assert "ValueError: \\x1b]52;c;cHduZWQ=\\x07 \\x1b[2J [bold red]x[/] [/]\\nforged" in lines[0]
    # the candidate's printed "verdict" stays behind the bar; the real verdict is the last line
    assert lines[2].lstrip().startswith("│") and "99.0×" in lines[2]
    assert lines[-1].split(None, 2)[1:] == ["verdict", "! runtime error: ValueError: \\x1b]52;c;cHduZWQ=\\x07 "
                                            "\\x1b[2J [bold red]x[/] [/]\\nforged"]
    assert len(lines) == 4


def test_a_file_name_with_a_newline_is_one_error_line(tmp_path):  # type: ignore[no-untyped-def]
    bad = tmp_path / "two\nlines \x1b[2J.py"
    bad.write_bytes(b"\xff\xfe")
    p = _kbench("eval", "L1_gelu", str(bad))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "\x1b" not in p.stderr, p.stderr
    assert "two\\nlines \\x1b[2J.py" in p.stderr


# -- stdout and stderr that fail, paths that cannot be looked at, bounds (kbench_cli.streams, kbench_cli.paths) ----

TASK_FILE = str(Path(__file__).resolve().parent.parent / "kbench" / "tasksets" / "lecture" / "L1_gelu" / "task.py")


def _run_with_stdout(args, stdout, tmp_path, **kw):  # type: ignore[no-untyped-def]
    import os

    env = {**os.environ, "KBENCH_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    return subprocess.run([sys.executable, "-m", "kbench_cli.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, env=env, **kw)


def _clean(stderr: str) -> None:
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


@pytest.mark.parametrize("args", [["list"], ["prompt", "L1_gelu"], ["task", "check", TASK_FILE, "--json"], ["--help"]],
                         ids=" ".join)
def test_a_closed_pipe_on_stdout_ends_quietly_with_141(args, tmp_path):  # type: ignore[no-untyped-def]
    import os

    r, w = os.pipe()
    os.close(r)  # the reader left before the first byte: every write is EPIPE
    try:
        p = _run_with_stdout(args, w, tmp_path)
    finally:
        os.close(w)
    _clean(p.stderr)
    assert p.returncode == 141 and p.stderr == "", (p.returncode, p.stderr)


@pytest.mark.parametrize("args", [["list"], ["prompt", "L1_gelu"], ["task", "check", TASK_FILE], ["--version"]],
                         ids=" ".join)
def test_a_full_disk_on_stdout_is_one_line_and_exit_74(args, tmp_path):  # type: ignore[no-untyped-def]
    with open("/dev/full", "w") as full:
        p = _run_with_stdout(args, full, tmp_path)
    _clean(p.stderr)
    assert p.returncode == 74 and p.stderr == "kbench: cannot write the output: No space left on device\n", p.stderr


def test_a_closed_stdout_is_one_line_and_exit_74_and_a_closed_stderr_no_traceback(tmp_path):  # type: ignore[no-untyped-def]
    import os

    p = _run_with_stdout(["list"], subprocess.DEVNULL, tmp_path, preexec_fn=lambda: os.close(1))
    _clean(p.stderr)
    assert p.returncode == 74 and p.stderr == "kbench: cannot write the output: standard output is closed\n"
    p = _run_with_stdout(["scores"], subprocess.DEVNULL, tmp_path, preexec_fn=lambda: os.close(1))
    assert p.returncode == 1 and "no graded samples" in p.stderr, p.stderr  # nothing for stdout: no failure
    p = _run_with_stdout(["prompt", "L1_gelu"], subprocess.PIPE, tmp_path, preexec_fn=lambda: os.close(2))
    assert p.returncode == 0 and "L1_gelu" in p.stdout


LONG = "a" * 300  # one path component over 255 bytes: ENAMETOOLONG, which Path.is_dir() raises in Python 3.11


@pytest.mark.parametrize("args", [["grade", LONG], ["task", "check", LONG], ["--candidates", LONG], ["--model", LONG],
                                  ["--model", f"x={LONG}"], ["list", "--tasks", LONG], ["matrix", "--candidates", LONG],
                                  ["eval", "L1_gelu", LONG]], ids=lambda a: " ".join(a)[:30])
def test_a_path_too_long_is_one_line_and_exit_2(args, tmp_path):  # type: ignore[no-untyped-def]
    p = _run_with_stdout(args, subprocess.PIPE, tmp_path)
    _clean(p.stderr)
    assert p.returncode == 2 and p.stderr.startswith("kbench: error: ") and len(p.stderr.splitlines()) == 1, p.stderr
    assert "File name too long" in p.stderr or "not a directory" in p.stderr or "cannot read" in p.stderr, p.stderr


def test_an_os_error_nothing_caught_is_named_in_one_line(monkeypatch, capsys):  # type: ignore[no-untyped-def]
    from kbench_cli import cli

    def broken(args):  # type: ignore[no-untyped-def]
        raise OSError(13, "Permission denied", "/some/file")

    monkeypatch.setattr(cli, "_list", lambda: broken(None))
    assert cli.main(["list"]) == 2
    assert capsys.readouterr().err == "kbench: error: /some/file: Permission denied\n"


def _samples(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    (d / "L1_gelu").mkdir(parents=True)
    (d / "L1_gelu" / "ok.py").write_text(Path(GOOD).read_text())
    return d


@pytest.mark.parametrize("extra", [["--workers", "99999999999999999999999"], ["--workers", "too many"],
                                   ["--model", ""], ["--model", "  "]], ids=" ".join)
def test_grade_refuses_unbounded_workers_and_blank_model_names(extra, tmp_path):  # type: ignore[no-untyped-def]
    from kbench_cli.batch import max_workers

    if extra[1] == "too many":
        extra = ["--workers", str(max_workers() + 1)]
    p = _run_with_stdout(["grade", str(_samples(tmp_path)), "--correctness-only", *extra], subprocess.PIPE, tmp_path)
    _clean(p.stderr)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert (f"between 1 and {max_workers()}" if extra[0] == "--workers" else "not empty or blank") in p.stderr
    assert not (tmp_path / "data" / "results.sqlite3").exists()  # refused before anything was graded


def test_grade_help_says_the_workers_bound():  # type: ignore[no-untyped-def]
    from kbench_cli.batch import max_workers

    p = _kbench("grade", "--help", env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0 and f"at most 4 × them, {max_workers()} here" in p.stdout, p.stdout


def test_the_explorer_refuses_a_blank_model_name(tmp_path):  # type: ignore[no-untyped-def]
    p = _run_with_stdout(["--model", f" ={_samples(tmp_path)}"], subprocess.PIPE, tmp_path)
    assert p.returncode == 2 and "not empty or blank" in p.stderr, p.stderr


def test_scores_says_why_the_store_cannot_be_used(tmp_path):  # type: ignore[no-untyped-def]
    import os

    blocker = tmp_path / "a file"
    blocker.write_text("")
    for data in (str(blocker), os.devnull, f"/tmp/{LONG}"):
        p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "scores"], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL, env={**os.environ, "KBENCH_DATA_DIR": data})
        _clean(p.stderr)
        assert p.returncode == 2 and "cannot read the result store" in p.stderr and "Cannot use" in p.stderr, p.stderr
        assert len(p.stderr.splitlines()) == 1


def test_scores_says_where_a_corrupt_database_went(tmp_path):  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    data.mkdir()
    (data / "results.sqlite3").write_bytes(b"not a database at all" * 500)
    p = _run_with_stdout(["scores"], subprocess.PIPE, tmp_path)
    _clean(p.stderr)
    [aside] = data.glob("results.sqlite3.corrupt-*")
    assert f"moved to {aside}" in p.stderr and p.returncode == 1, p.stderr


def test_scores_reads_a_database_it_cannot_write(tmp_path, monkeypatch, capsys):  # type: ignore[no-untyped-def]
    import json
    import os

    from kbench.core.results import Result
    from kbench.store import Store
    from kbench_cli.cli import main

    data = tmp_path / "data"
    data.mkdir()
    with Store(data) as store:
        assert store.put("d1", "L1_gelu", "s", "model:m", Result("L1_gelu", "s", "hardened", ("normal",), "correct",
                                                                  "ok"), model="m", sample="s")
    monkeypatch.setenv("KBENCH_DATA_DIR", str(data))
    real = os.access
    # as for a user without write permission on the data directory (tests may run as root, who has it)
    monkeypatch.setattr("kbench.store.os.access",
                        lambda p, mode: False if mode & os.W_OK and str(p).startswith(str(data)) else real(p, mode))
    assert main(["scores", "--json"]) == 0
    out, err = capsys.readouterr()
    assert {r["model"] for r in json.loads(out)} == {"m"}
    assert "read as they are and none can be stored" in err


def test_matrix_timeout_is_validated_and_used(monkeypatch, capsys):  # type: ignore[no-untyped-def]
    from kbench.batch import matrix as mx
    from kbench_cli.cli import main

    for bad in ("0", "-1", "1e9", "inf"):
        assert main(["matrix", "--timeout", bad]) == 2
        assert "--timeout must be a number of seconds between 0 and 86400" in capsys.readouterr().err
    seen = []

    def compute(cands, names, *, base, **kw):  # type: ignore[no-untyped-def]
        seen.append(base)
        return mx.Matrix(base, tuple(names), [])

    monkeypatch.setattr(mx, "compute", compute)
    assert main(["matrix", "--timeout", "7.5", "--no-store", "--json", "--correctness-only"]) == 0
    assert seen[0].timeout_s == 7.5 and seen[0].timing is None


def test_matrix_says_each_file_of_a_candidates_folder_it_skips(tmp_path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "cands"
    (folder / "L1_gelu").mkdir(parents=True)
    (folder / "L1_gleu").mkdir()
    (folder / "L1_gelu" / "ok.py").write_text(Path(GOOD).read_text())
    (folder / "L1_gelu" / "latin1.py").write_bytes(b'"""caf\xe9"""\n')
    (folder / "L1_gelu" / "notes.txt").write_text("hi")
    (folder / "L1_gelu" / "big.py").write_bytes(b"#" * (2 << 20))
    (folder / "L1_gleu" / "x.py").write_text("x = 1\n")
    from kbench_cli.matrix_cli import _folder

    cands, skipped = _folder(folder, None)
    assert [c.name for c in cands] == ["ok"] and cands[0].origin == str(folder)
    assert len(skipped) == 4 and any("L1_gleu" in s for s in skipped)
    p = _run_with_stdout(["matrix", "--candidates", str(folder), "--task", "L1_gelu", "--correctness-only",
                          "--no-store", "--defence", "property_checks", "--csv", "--timeout", "60"],
                         subprocess.PIPE, tmp_path)
    _clean(p.stderr)
    lines = p.stderr.splitlines()
    assert p.returncode == 1 and len(lines) == 3 and all(x.startswith("kbench: not graded: ") for x in lines), p.stderr
    assert any("latin1.py" in x and "UTF-8" in x for x in lines) and any("notes.txt" in x for x in lines)
    assert any("big.py" in x and "1 MB" in x for x in lines)
    assert ",ok," in p.stdout


def test_a_reference_that_cannot_finish_is_the_graders_failure_not_the_candidates(tmp_path: Path) -> None:
    # A task folder whose reference spins: the candidate gets no verdict (exit 3, one line): a runtime error
    # would have charged the task's failure to it (and stored it).
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "L1_spin.py").write_text('"""Spins."""\nLEVEL = 1\nINPUTS = {"x": (64, 64)}\nOUTPUT = (64, 64)\n\n\n'
                                      "def forward(x, params, alloc):\n    while True:\n        pass\n")
    cand = tmp_path / "ok.py"
    cand.write_text("def forward(x, params, alloc):\n    return x['x'] * 2\n")
    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "eval", "L1_spin", str(cand), "--tasks", str(tasks),
                        "--timeout", "3"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                       env={**os.environ, "KBENCH_DATA_DIR": str(tmp_path / "data")})
    assert p.returncode == 3, (p.stdout + p.stderr)[-800:]
    out = p.stdout + p.stderr
    assert "reference could not be computed" in out and "no verdict" in out and "Traceback" not in out


# -- the 12-03 command-line audit's leftovers --

HANGING_TASK = '''"""A task whose reference never returns."""

LEVEL = 1
INPUTS = {"x": (64, 64)}
OUTPUT = (64, 64)
FLOPS = BYTES = MIN_FLOPS = MIN_BYTES = 1.0


def make_params(rng, randomize, draw):
    return {}


def forward(x, params, alloc):
    """Spins."""
    while True:
        pass
'''


def test_task_check_timeout_bounds_a_hanging_reference(tmp_path):  # type: ignore[no-untyped-def]
    import time

    f = tmp_path / "hang_task.py"
    f.write_text(HANGING_TASK)
    t = time.monotonic()
    p = _kbench("task", "check", str(f), "--timeout", "2")
    took = time.monotonic() - t
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "timed out after 2 s" in p.stdout and "Traceback" not in p.stderr
    assert took < 60, took  # not the 120 s default (generous: a loaded CI machine starts workers slowly)


def test_an_unreadable_settings_file_is_said_once_and_kept(tmp_path):  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    data.mkdir()
    broken = '{"tasks": ["/somewhere"],\n'
    (data / "settings.json").write_text(broken)
    p = _kbench("list", env={**os.environ, "KBENCH_DATA_DIR": str(data), "COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("settings.json is not valid JSON (line 2") == 1, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    # the explorer remembers a theme by merging into the file: it must not replace one it could not read
    r = subprocess.run([sys.executable, "-c", "from kbench_tui import settings; print(settings.save(theme='x'))"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "KBENCH_DATA_DIR": str(data)})
    assert r.stdout.strip() == "False", r
    assert (data / "settings.json").read_text() == broken


def test_columns_zero_on_a_terminal_still_prints_the_list():  # type: ignore[no-untyped-def]
    import pty

    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([sys.executable, "-m", "kbench_cli.cli", "list"], stdout=slave, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "0"})
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            out += chunk
        assert p.wait(timeout=60) == 0, p.stderr.read() if p.stderr else ""
    finally:
        os.close(master)
    assert b"L1_softmax" in out, out[:200]
