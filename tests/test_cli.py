"""Bad command lines: one line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

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
