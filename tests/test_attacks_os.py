"""Attacks on the machine and on the grading process itself (issue 8), each in a grading process of its own.

Every file in ``tests/adversarial/os/`` is written as an attacker would write it; its docstring's first
line names the trick: S sandbox escapes, P hostile replies (the grader trusting what the worker
controls), R resources, G static-gate evasions. They try to kill, hang or bloat the process that grades
them, so each evaluation runs in a fresh subprocess (``adversarial/os/_runner.py``) and this test only
reads what it printed and how it ended.

Each attack runs four times: naive, hardened, hardened with the static gate and the worker's audit hook
off (the OS layers and the grader must stop it on their own), and in the native harness (gate and audit
hook off, ``ctypes`` and raw syscalls in the candidate's namespace). Whatever the mode, the user's machine and the grading process are protected:
  * the grading process exits normally, within the evaluation's time-out plus a margin, still able to
    grade the reference afterwards, and its peak RSS stays under 1 GiB;
  * no file appears outside the sandbox (markers ``kbench_adv_*`` in /tmp, /var/tmp, /dev/shm);
  * the results database is byte-for-byte what it was (same rows, no trigger);
  * no secret of the grading process (its multiprocessing authkey) shows in the verdict;
  * a canary in the grading process's environment, and in a ``.env`` file beside the grading script (the
    user's project directory, on PYTHONPATH), never shows in anything the evaluation reports;
  * a sandbox directory holds no more than the candidate's memory limit;
  * hardened never judges a kernel that skips the work correct and faster than 1.3x, and the gate rejects
    every G file.
Naive keeps only KernelBench v0's *grading* weaknesses: it may be fooled, never escaped, crashed or hung.

A run an attack gets through today is marked ``xfail(strict=True, reason="open hole: <class>")``: the
fixers see an XPASS once they close it, and must then delete the mark.
"""

from __future__ import annotations

import glob
import json
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.attack_sources import bad_parts, graded_source

OS_ADV = Path(__file__).parent / "adversarial" / "os"
RUNNER = OS_ADV / "_runner.py"
FAST = 1.3
MAX_RSS_MB = 1024
MARGIN_S = 20.0  # start-up, the reference re-check and a loaded machine, beyond the evaluation's own time-out
MARKERS = ["/tmp/kbench_adv_*", "/var/tmp/kbench_adv_*", "/dev/shm/kbench_adv_*"]
#: gate-off also runs without the worker's audit hook; native adds ctypes and raw syscalls to the candidate's hands.
RUNS = ("naive", "hardened", "gate-off", "native")

GELU = "L1_gelu"
ESCAPE, GATE, REPLY, RESOURCE = "sandbox escape", "static gate", "grader trusts the worker", "resources"


CLASS_OF_LETTER = {"s": ESCAPE, "g": GATE, "p": REPLY, "r": RESOURCE}


@dataclass(frozen=True)
class Attack:
    """One table of ``attacks.toml`` (its comments say what each field means)."""

    file: str
    why: str
    parts: tuple[str, ...] = ()
    computes: bool = False
    limits: dict = field(default_factory=dict)
    open_in: tuple[str, ...] = ()
    task: str = GELU

    @property
    def cls(self) -> str:
        return CLASS_OF_LETTER[self.file[0]]

    def source(self) -> str:
        """The candidate as graded: the attack file, then the shared parts it names."""
        return graded_source(OS_ADV, self.file, self.parts)


def _load_attacks() -> list[Attack]:
    with open(OS_ADV / "attacks.toml", "rb") as f:
        table = tomllib.load(f)
    return [Attack(file=stem + ".py", why=row.pop("why"), parts=tuple(row.pop("parts", ())),
                   open_in=tuple(row.pop("open_in", ())), **row) for stem, row in table.items()]


ATTACKS = _load_attacks()
ID_RE = r"^(S|P|R|G)\d+ [^:]+: \S"


def _markers() -> set[str]:
    return {p for g in MARKERS for p in glob.glob(g)}


def _db_state(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return list(con.iterdump())
    finally:
        con.close()


def _make_db(data_dir: Path) -> Path:
    from kbench.core.results import Result
    from kbench.store import FILENAME, Store

    data_dir.mkdir(parents=True, exist_ok=True)
    with Store(data_dir / FILENAME) as st:
        st.put("0" * 64, GELU, "stored_before", "library",
               Result(GELU, "stored_before", "hardened", ("normal",), "wrong", "max abs err 1 out of tolerance"))
    return data_dir / FILENAME


def _grade(attack: Attack, run: str, tmp: Path) -> tuple[dict | None, subprocess.CompletedProcess | None, str, float]:
    """Grade ``attack`` in a fresh grading process; (result or None, process or None, canary, time limit)."""
    mode = "naive" if run == "naive" else "hardened"
    replace = dict(attack.limits)
    gate = run not in ("gate-off", "native")
    harness = {"gate-off": "no_audit", "native": "native"}.get(run)
    canary = "KBENCH_ADV_CANARY_" + secrets.token_hex(8)
    env = {**os.environ, "KBENCH_DATA_DIR": str(tmp / "data"), "KBENCH_ADV_CANARY": canary}
    # The grading process is a script in the user's project directory, next to the project's secrets, run
    # as ``PYTHONPATH=. python grade_one.py``: the project is on sys.path from the interpreter's start.
    project = tmp / "project"
    project.mkdir(exist_ok=True)
    shutil.copy(RUNNER, project / "grade_one.py")
    (project / ".env").write_text(f"API_TOKEN={canary}\n")
    env["PYTHONPATH"] = os.pathsep.join([str(project)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    graded = tmp / attack.file
    graded.write_text(attack.source(), encoding="utf-8")
    spec = {"file": str(graded), "task": attack.task, "mode": mode, "name": attack.file,
            "replace": replace, "gate": gate, "harness": harness}
    limit = float(replace.get("timeout_s", 30.0)) + MARGIN_S
    try:
        proc = subprocess.run([sys.executable, str(project / "grade_one.py"), json.dumps(spec)], env=env, cwd=project,
                              capture_output=True, text=True, errors="replace", timeout=limit)
    except subprocess.TimeoutExpired:
        return None, None, canary, limit
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("KBENCH_ADV_RESULT ")), None)
    result = json.loads(line.removeprefix("KBENCH_ADV_RESULT ")) if line else None
    return result, proc, canary, limit


def _params():
    out = []
    for a in ATTACKS:
        for run in RUNS:
            marks = []
            if run in a.open_in:
                marks.append(pytest.mark.xfail(strict=True, reason=f"open hole: {a.cls}"))
            out.append(pytest.param(a, run, marks=marks, id=f"{a.file.removesuffix('.py')}-{run}"))
    return out


def test_every_attack_is_in_the_table_and_documented():
    files = sorted(p.name for p in OS_ADV.glob("*.py") if not p.name.startswith("_"))
    assert files == sorted(a.file for a in ATTACKS)
    for a in ATTACKS:
        first = (OS_ADV / a.file).read_text().lstrip().removeprefix('"""').splitlines()[0]
        assert re.match(ID_RE, first), (a.file, first)
        assert set(a.open_in) <= set(RUNS) and a.why
        assert not bad_parts(OS_ADV, a.parts), a.parts
    classes = {a.cls for a in ATTACKS}
    assert classes == {ESCAPE, GATE, REPLY, RESOURCE}, classes


@pytest.mark.parametrize("attack,run", _params())
def test_attack_is_contained(attack: Attack, run: str, tmp_path: Path):
    before = _markers()
    db = _make_db(tmp_path / "data")
    db_before = _db_state(db)
    try:
        result, proc, canary, limit = _grade(attack, run, tmp_path)
    finally:
        left = _markers() - before
        for p in left:
            try:
                os.remove(p)
            except OSError:
                pass
    where = f"{attack.file} ({run})"
    assert not left, f"{where}: a candidate wrote outside its sandbox: {sorted(left)}"
    assert proc is not None, f"{where}: the grading process hung (killed after {limit:g} s)"
    assert proc.returncode == 0 and result is not None, (
        f"{where}: the grading process died (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    assert canary not in proc.stdout + proc.stderr, f"{where}: the grader's environment leaked: {result['msg'][:200]}"
    reported = json.dumps({k: result[k] for k in ("msg", "trials")})
    for secret in result.get("secrets", []):
        assert secret not in reported, f"{where}: a secret of the grading process leaked: {result['msg'][:120]}"
    assert _db_state(db) == db_before, f"{where}: the results database changed"
    assert result["after"] == "correct", f"{where}: the grading process can no longer grade: {result['after']}"
    assert result["maxrss_mb"] < MAX_RSS_MB, f"{where}: the grading process peaked at {result['maxrss_mb']:.0f} MB"
    timeout = float(attack.limits.get("timeout_s", 30.0))
    assert result["elapsed"] < timeout + 2.0, f"{where}: the evaluation took {result['elapsed']:.1f} s"
    m = re.search(r"wrote (\d+) MiB", result["msg"])
    if m and "memory_limit_mb" in attack.limits:
        assert int(m.group(1)) < attack.limits["memory_limit_mb"], f"{where}: {result['msg']}"
    if run != "naive" and not attack.computes:
        assert not (result["correct"] and (result["speedup"] or 0) > FAST), f"{where}: FOOLED: {result['msg']}"
    if run == "hardened" and attack.cls == GATE:
        assert result["status"] == "rejected", f"{where}: passed the gate: {result['status']}: {result['msg'][:200]}"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")  # C0 controls but \t and \n, DEL, CSI


@pytest.mark.parametrize("mode", ["naive", "hardened"])
def test_candidate_text_cannot_drive_the_terminal(mode: str, tmp_path: Path):
    """P6: whatever the candidate puts in its error text, ``kbench eval`` prints no control character it chose
    (no escape sequence reaches the user's terminal: no fake verdict, no hidden text, no clipboard write)."""
    env = {**os.environ, "KBENCH_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "eval", GELU, str(OS_ADV / "p6_terminal_escape.py"),
                           "--mode", mode], env=env, cwd=tmp_path, capture_output=True, text=True, errors="replace",
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr[-300:]
    out = proc.stdout + proc.stderr
    assert "RuntimeError" in out  # the message is shown, made harmless
    bad = sorted({hex(ord(c)) for c in _CONTROL.findall(out)})
    assert not bad, f"kbench eval printed control characters the candidate chose: {bad}"


@pytest.mark.parametrize("mode", ["naive", "hardened"])
def test_candidate_text_cannot_become_a_spreadsheet_formula(mode: str, tmp_path: Path):
    """P8: a stored verdict exported to CSV (the explorer's ``x``) has no text cell a spreadsheet would run
    as a formula, whatever the candidate named its exception."""
    import csv

    import kbench
    from kbench.store import Store

    g = kbench.Grader()
    try:
        r = kbench.evaluate(GELU, (OS_ADV / "p8_csv_formula.py").read_text(), mode, "p8_csv_formula", grader=g)
    finally:
        g.close()
    assert r.status == "runtime_error", r.msg
    with Store(tmp_path / "results.sqlite3") as st:
        st.put("p8" + "0" * 62, GELU, "p8_csv_formula", "adversarial", r)
        _, csv_path = st.export(tmp_path / "export")
    with open(csv_path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows
    for row in rows:
        for col in ("msg", "status", "candidate"):
            assert not (row[col] or "").startswith(("=", "+", "-", "@", "\t", "\r")), f"{col}: {row[col][:80]!r}"
