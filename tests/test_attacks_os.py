"""Attacks on the machine and on the grading process itself (issue 8), each in a grading process of its own.

Every file in ``tests/adversarial/os/`` is written as an attacker would write it; its docstring's first
line names the trick: S sandbox escapes, P hostile replies (the grader trusting what the worker
controls), R resources, G static-gate evasions, D hostile sample folders (the grading process computing what
a model's folder controls: discovery), T candidate text reaching the terminal. They try to kill, hang or bloat the process that grades
them, so each evaluation runs in a fresh subprocess (``adversarial/os/_runner.py``) and this test only
reads what it printed and how it ended.

Each attack runs four times: naive, hardened, hardened with the static gate and the worker's audit hook
off (the OS layers and the grader must stop it on their own), and in the native harness (gate and audit
hook off, ``ctypes`` and raw syscalls in the candidate's namespace); a G file skips naive (``_runs``). Whatever the mode, the user's machine and the grading process are protected:
  * the grading process exits normally, within the evaluation's time-out plus a margin, still able to
    grade the reference afterwards, and its peak RSS stays under 1 GiB;
  * no file appears outside the sandbox (markers ``kbench_adv_*`` in /tmp, /var/tmp, /dev/shm);
  * the results database is byte-for-byte what it was (same rows, no trigger);
  * no secret of the grading process (its multiprocessing authkey, a canary on its command line) shows in the
    verdict;
  * a canary in the grading process's environment, and in a ``.env`` file beside the grading script (the
    user's project directory, on PYTHONPATH), never shows in anything the evaluation reports;
  * a sandbox directory holds no more than the candidate's memory limit;
  * hardened never judges a kernel that skips the work correct and faster than 1.3x, and the gate rejects
    every G file;
  * nothing of the run is left behind (issue 16): no process or thread of the grading process's session
    outlives it, no file lease appears, no page of the files every worker maps (numpy's core extension,
    ``os.py``, the worker's module) is evicted, and the grading process holds no descriptor a worker sent it;
  * what an attack learned stays with it: its verdict never says what ``must_not_say`` names (an attack
    reports a leak or an escape it managed in its own error message).
D files are not candidates: each builds a hostile model folder (``build``) that ``kbench grade`` must get
through (``test_hostile_folder_is_graded``). Files marked ``terminal`` are also run through ``kbench eval``
on a colour terminal (``test_candidate_text_cannot_drive_the_terminal``).
Naive keeps only KernelBench v0's *grading* weaknesses: it may be fooled, never escaped, crashed or hung.

A run an attack gets through today is marked ``xfail(strict=True, reason="open hole: <mechanism>")`` (the
table's ``hole``, or its class): the fixers see an XPASS once they close it, and must then delete the mark.
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

from tests import leftovers
from tests.attack_sources import bad_parts, graded_source

pytestmark = pytest.mark.slow

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
DISCOVERY, TERMINAL = "grading process computes what the candidate controls", "candidate text reaches the terminal"


CLASS_OF_LETTER = {"s": ESCAPE, "g": GATE, "p": REPLY, "r": RESOURCE, "d": DISCOVERY, "t": TERMINAL}


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
    hole: str = ""  # the mechanism an open hole gets through by (the xfail reason)
    kind: str = "candidate"  # or "folder": a hostile model folder for kbench grade (D files)
    setup: str = ""  # a SETUPS entry the test runs before grading (the state the attack probes)
    must_not_say: str = ""  # a regular expression the verdict message must not match
    #: Its verdict is a timing measurement: a stall of the machine can look once like what it looks for (S20: a
    #: first load waiting ~1-6 ms on a page another kbench process was locking or unlocking, seen in 2 of ~10
    #: full CI runs with the other core busy). Its setup makes what it looks for happen on every run; a stall
    #: does not come back to the same run twice. So a match is graded again, and only a second one fails.
    timed: bool = False
    terminal: bool = False  # also run through kbench eval on a colour terminal

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
CANDIDATES = [a for a in ATTACKS if a.kind == "candidate"]
FOLDERS = [a for a in ATTACKS if a.kind == "folder"]
ID_RE = r"^(S|P|R|G|D|T)\d+ [^:]+: \S"


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
    # A session of its own: whatever of this grading process outlives it is found by its session id.
    # The last argument is a canary of the grading process's command line (the runner counts it as a secret).
    argv_canary = "KBENCH_ADV_ARGV_" + secrets.token_hex(8)
    popen = subprocess.Popen([sys.executable, str(project / "grade_one.py"), json.dumps(spec), argv_canary], env=env,
                             cwd=project,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                             start_new_session=True)
    _SESSIONS.append(popen.pid)
    try:
        out, err = popen.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        leftovers.kill_all(leftovers.session_processes(popen.pid))
        popen.communicate()
        return None, None, canary, limit
    proc = subprocess.CompletedProcess(popen.args, popen.returncode, out, err)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("KBENCH_ADV_RESULT ")), None)
    result = json.loads(line.removeprefix("KBENCH_ADV_RESULT ")) if line else None
    return result, proc, canary, limit


#: The session of each grading process started (its pid: it leads the session), last one last.
_SESSIONS: list[int] = []


def _open_mark(a: Attack) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"open hole: {a.hole or a.cls}")


# ------------------------------------------------------------------ state an attack probes (``setup``)

def _stdlib(name: str) -> str:
    return os.path.join(os.path.dirname(os.__file__), *name.split("/"))


def _setup_page_cache() -> None:
    """S9: one stdlib file nobody uses out of the page cache, another just read into it."""
    fd = os.open(_stdlib("pydoc_data/topics.py"), os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    Path(_stdlib("tabnanny.py")).read_bytes()


def _setup_module_evicted() -> None:
    """S21: a stdlib module nobody imports, its source and its compiled files out of the page cache."""
    for path in [_stdlib("pydoc_data/topics.py"), *Path(_stdlib("pydoc_data/__pycache__")).glob("topics.*")]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _setup_libraries_evicted() -> None:
    """S20: every shared library this process maps (numpy's extensions, OpenBLAS, libpython) out of the page
    cache but for the pages some process maps: a worker's first load from any other page of them is then a disk
    read unless the sandbox made sure it is not (so a defence that fails shows many, not one or two)."""
    with open("/proc/self/maps") as f:
        paths = {p[5] for p in (ln.split(maxsplit=5) for ln in f) if len(p) == 6 and p[5].startswith("/")
                 and ".so" in p[5] and not p[5].rstrip().endswith("(deleted)")}
    for path in paths:
        try:
            fd = os.open(path.rstrip(), os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


PIP_CONF_CANARY = "KBENCH_ADV_PIPCONF_" + secrets.token_hex(8)


def _setup_prefix_config():
    """S18: a pip.conf in the virtualenv that holds only a comment with a canary (pip reads nothing from it),
    removed after the run."""
    path = Path(sys.prefix) / "pip.conf"
    if path.exists():
        pytest.skip(f"{path} exists: it is the user's, not the test's to replace")
    path.write_text(f"# {PIP_CONF_CANARY}\n")
    return path.unlink


#: State an attack probes, made before its run; a setup may return what undoes it.
SETUPS = {"page_cache": _setup_page_cache, "module_evicted": _setup_module_evicted,
          "libraries_evicted": _setup_libraries_evicted, "prefix_config": _setup_prefix_config}


def _runs(a: Attack) -> tuple[str, ...]:
    """The runs of one attack. A G file's payload is the same S1 write for every evasion: naive (no gate)
    runs it exactly as gate-off does, so its naive run tests nothing the S1 runs and its own gate-off and
    native runs do not (15 runs, ~30 s of CI)."""
    return tuple(r for r in RUNS if not (a.cls == GATE and r == "naive"))


def _params():
    out = []
    for a in CANDIDATES:
        for run in _runs(a):
            marks = []
            if run in a.open_in:
                marks.append(_open_mark(a))
            out.append(pytest.param(a, run, marks=marks, id=f"{a.file.removesuffix('.py')}-{run}"))
    return out


def test_every_attack_is_in_the_table_and_documented():
    files = sorted(p.name for p in OS_ADV.glob("*.py") if not p.name.startswith("_"))
    assert files == sorted(a.file for a in ATTACKS)
    for a in ATTACKS:
        first = (OS_ADV / a.file).read_text().lstrip().removeprefix('"""').splitlines()[0]
        assert re.match(ID_RE, first), (a.file, first)
        assert set(a.open_in) <= set(RUNS) | {"grade"} and a.why
        assert not bad_parts(OS_ADV, a.parts), a.parts
        assert a.kind in ("candidate", "folder") and (a.kind == "folder") == (a.cls == DISCOVERY), a.file
        assert not a.setup or a.setup in SETUPS, a.setup
    classes = {a.cls for a in ATTACKS}
    assert classes == {ESCAPE, GATE, REPLY, RESOURCE, DISCOVERY, TERMINAL}, classes


def _grade_again(attack: Attack, run: str, tmp: Path) -> tuple[dict | None, dict]:
    """``attack`` graded a second time under the same setup, its markers removed after it: (its result or None,
    the processes of its grading process that outlived it, killed)."""
    undo = SETUPS[attack.setup]() if attack.setup else None
    before = _markers()
    (tmp / "again").mkdir(exist_ok=True)
    result = None
    try:
        result, _, _, _ = _grade(attack, run, tmp / "again")
    finally:
        if undo is not None:
            undo()
        for p in _markers() - before:
            try:
                os.remove(p)
            except OSError:
                pass
        sid = _SESSIONS[-1] if _SESSIONS else -1
        outlived = leftovers.outliving(lambda: leftovers.session_processes(sid))
        leftovers.kill_all(outlived)
    return result, outlived


def _evicted_again(attack: Attack, run: str, tmp: Path) -> list[str]:
    """The watched files that lose their pages again when ``attack`` runs a second time.

    The VM's reclaim (DAMON) sweeps by physical address, so now and then a sweep takes every page of a
    10-page file and none of its control copy (seen once in CI, on an attack that evicts nothing); an
    attack that evicts does it on every run, a sweep does not come back to the same pages within seconds.
    """
    pages = leftovers.PageWatch()
    _grade_again(attack, run, tmp)
    return pages.evicted()


def _says_again(attack: Attack, run: str, tmp: Path) -> str | None:
    """``attack``'s forbidden sentence in a second run under the same setup (``Attack.timed``), or why that run
    cannot vouch for the first (no result, processes left behind); None when it is clean."""
    result, outlived = _grade_again(attack, run, tmp)
    if result is None or outlived:
        return f"the second run gave no result or left processes behind ({sorted(outlived.values())})"
    said = re.search(attack.must_not_say, result["msg"])
    return result["msg"][:300] if said else None


@pytest.mark.parametrize("attack,run", _params())
def test_attack_is_contained(attack: Attack, run: str, tmp_path: Path):
    before = _markers()
    db = _make_db(tmp_path / "data")
    db_before = _db_state(db)
    leases_before = leftovers.leases()
    pages = leftovers.PageWatch()
    undo = SETUPS[attack.setup]() if attack.setup else None
    proc = None
    try:
        result, proc, canary, limit = _grade(attack, run, tmp_path)
    finally:
        if undo is not None:
            undo()
        left = _markers() - before
        for p in left:
            try:
                os.remove(p)
            except OSError:
                pass
        sid = _SESSIONS[-1] if _SESSIONS else -1
        outlived = leftovers.outliving(lambda: leftovers.session_processes(sid))
        leftovers.kill_all(outlived)
    where = f"{attack.file} ({run})"
    assert not left, f"{where}: a candidate wrote outside its sandbox: {sorted(left)}"
    assert proc is not None, f"{where}: the grading process hung (killed after {limit:g} s)"
    assert not outlived, f"{where}: processes of the grading process outlived it: {sorted(outlived.values())}"
    new_leases = leftovers.leases() - leases_before
    assert not new_leases, f"{where}: a lease was left behind: {sorted(new_leases)}"
    evicted = pages.evicted()
    if evicted:
        evicted = _evicted_again(attack, run, tmp_path)
    assert not evicted, f"{where}: pages every worker maps were evicted, twice in a row: {evicted}"
    assert proc.returncode == 0 and result is not None, (
        f"{where}: the grading process died (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    assert canary not in proc.stdout + proc.stderr, f"{where}: the grader's environment leaked: {result['msg'][:200]}"
    reported = json.dumps({k: result[k] for k in ("msg", "trials")})
    for secret in result.get("secrets", []):
        assert secret not in reported, f"{where}: a secret of the grading process leaked: {result['msg'][:120]}"
    assert _db_state(db) == db_before, f"{where}: the results database changed"
    handed = [t for t in result.get("fds", []) if t == "/dev/urandom" or t.endswith(".so")]
    assert not handed, f"{where}: the grading process holds descriptors a worker sent it: {handed}"
    if attack.must_not_say:
        said = re.search(attack.must_not_say, result["msg"])
        again = _says_again(attack, run, tmp_path) if said and attack.timed else None
        assert not said or (attack.timed and again is None), (
            f"{where}: {result['msg'][:300]}" + (f"; second run: {again}" if attack.timed else ""))
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


_TERMINAL = ["p6_terminal_escape.py"] + [a.file for a in ATTACKS if a.terminal]


@pytest.mark.parametrize("file", _TERMINAL)
@pytest.mark.parametrize("mode", ["naive", "hardened"])
def test_candidate_text_cannot_drive_the_terminal(mode: str, file: str, tmp_path: Path):
    """P6 (and every ``terminal`` attack): whatever the candidate puts in its error text or its source, ``kbench
    eval`` prints no control character it chose (no escape sequence reaches the user's terminal: no fake
    verdict, no hidden text, no clipboard write); on a colour terminal it emits no OSC sequence (a hyperlink,
    a window title) at all, and rich markup in candidate text stays text."""
    env = {**os.environ, "KBENCH_DATA_DIR": str(tmp_path / "data")}
    argv = [sys.executable, "-m", "kbench_cli.cli", "eval", GELU, str(OS_ADV / file), "--mode", mode]
    proc = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, errors="replace",
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr[-300:]
    out = proc.stdout + proc.stderr
    assert re.search("RuntimeError|rejected", out)  # the message is shown, made harmless
    bad = sorted({hex(ord(c)) for c in _CONTROL.findall(out)})
    assert not bad, f"kbench eval printed control characters the candidate chose: {bad}"
    colour = {**env, "FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "200"}
    proc = subprocess.run(argv, env=colour, cwd=tmp_path, capture_output=True, text=True, errors="replace",
                          timeout=60, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert "\x1b]" not in out, f"kbench eval emitted an OSC sequence on a colour terminal: {out[-300:]!r}"
    if "[link=" in (OS_ADV / file).read_text():
        assert "[link=" in out, "candidate markup was rendered instead of shown"


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


# ------------------------------------------------------------------ hostile model folders (D files)

def _folder_params():
    return [pytest.param(a, marks=[_open_mark(a)] if "grade" in a.open_in else [], id=a.file.removesuffix(".py"))
            for a in FOLDERS]


GRADE_LIMIT_S = 40.0
SCAN_LIMIT_S = 15.0
GRADE_AS_LIMIT = 3 << 30  # the grading process's address space: an unbounded read stops here, not at the machine's end


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (GRADE_AS_LIMIT, resource.RLIM_INFINITY))


def _bounded_run(argv: list[str], env: dict, cwd: Path, limit: float) -> tuple[str, bool, float, dict]:
    """Run ``argv`` in a session of its own under a 3 GiB soft address-space limit, behind a launcher that
    reports the peak RSS of every process under it; (output, hung, peak MB, processes that outlived it)."""
    launcher = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
                "print('KBENCH_ADV_PEAK_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
                "sys.exit(p.returncode)")
    proc = subprocess.Popen([sys.executable, "-c", launcher, *argv], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=_limit_memory)
    try:
        out_b, err_b = proc.communicate(timeout=limit)
        hung = False
    except subprocess.TimeoutExpired:
        hung = True
        leftovers.kill_all(leftovers.session_processes(proc.pid))
        out_b, err_b = proc.communicate()
    finally:
        outlived = leftovers.outliving(lambda: leftovers.session_processes(proc.pid))
        leftovers.kill_all(outlived)
    out = (out_b + err_b).decode("utf-8", "replace")
    peak = re.search(r"KBENCH_ADV_PEAK_KB (\d+)", out)
    return out, hung, (int(peak.group(1)) / 1024 if peak else 0.0), outlived


@pytest.mark.parametrize("attack", _folder_params())
def test_hostile_folder_is_graded(attack: Attack, tmp_path: Path):
    """A model's folder holding the attack's entries beside an honest sample: the explorer's folder scan and
    ``kbench grade`` each end within their limit with a peak under 1 GiB; the scan lists the honest sample and
    grade grades it (correct, in the store), prints no control character, and no secret of the project the
    folder sits in (a ``.env`` beside it) shows in its output or its store."""
    import importlib.util

    import kbench

    canary = "KBENCH_ADV_CANARY_" + secrets.token_hex(8)
    project = tmp_path / "project"
    task_dir = project / "model" / GELU
    task_dir.mkdir(parents=True)
    (project / ".env").write_text(f"API_TOKEN={canary}\n")
    (task_dir / "reference.py").write_text(kbench.TASK[GELU].ref_src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"_adv_{attack.file[:-3]}", OS_ADV / attack.file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.build(task_dir, project)
    data = tmp_path / "data"
    env = {**os.environ, "KBENCH_DATA_DIR": str(data), "KBENCH_ADV_CANARY": canary}
    scan = [sys.executable, "-c", "import sys; from pathlib import Path; from kbench_tui.folders import scan; "
            "found, skipped = scan(Path(sys.argv[1]), 'model'); print('KBENCH_ADV_SCANNED', *sorted(ascii(c.name) for c in found))",
            str(project / "model")]
    scan_out, scan_hung, scan_peak, scan_left = _bounded_run(scan, env, project, SCAN_LIMIT_S)
    where = attack.file
    assert not scan_hung, f"{where}: the explorer's folder scan hung (killed after {SCAN_LIMIT_S:g} s)"
    assert scan_peak < 1024, f"{where}: the explorer's folder scan peaked at {scan_peak:.0f} MB"
    assert re.search(r"KBENCH_ADV_SCANNED.* 'reference'", scan_out), f"{where}: the explorer's scan: {scan_out[-300:]}"
    assert not scan_left, f"{where}: processes outlived the scan: {sorted(scan_left.values())}"
    grade = [sys.executable, "-m", "kbench_cli.cli", "grade", str(project / "model"), "--correctness-only",
             "--workers", "1"]
    out, hung, peak_mb, outlived = _bounded_run(grade, env, project, GRADE_LIMIT_S)
    assert not hung, f"{where}: kbench grade hung (killed after {GRADE_LIMIT_S:g} s): {out[-300:]}"
    assert "Traceback" not in out, f"{where}: {out[-500:]}"
    assert peak_mb < 1024, f"{where}: a grading process peaked at {peak_mb:.0f} MB"
    bad = sorted({hex(ord(c)) for c in _CONTROL.findall(out)})
    assert not bad, f"{where}: kbench grade printed control characters: {bad}"
    assert not outlived, f"{where}: processes outlived kbench grade: {sorted(outlived.values())}"
    stored = "\n".join(line for db in data.glob("*.sqlite3") for line in _db_state(db))
    assert canary not in out and canary not in stored, f"{where}: the project's secret leaked: {out[-300:]}"
    assert re.search(r"reference hardened: correct", out), f"{where}: the honest sample was not graded: {out[-300:]}"
