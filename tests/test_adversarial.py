"""The adversarial regression suite: every known way a kernel games a grader, against both graders.

Each kernel in ``tests/adversarial/`` is written as an attacker would write it; its docstring's first
line names the trick and its id in ``/work/shared/notes/exploits.md``. ``adversarial/cases.toml`` states,
per kernel, what the naive grader (KernelBench v0) says and what the hardened grader must say, and why.

Rules the hardened grader is held to (the issue's "done when"):
  * no kernel here is judged correct *and* faster than 1.3x;
  * every verdict has the expected status and a message naming the cause;
  * a kernel the AST gate rejects is evaluated a second time with the gate off, and the runtime
    defences must catch it on their own (the gate is a cheap first filter, never the defence);
  * a spinning kernel ends within its time-out plus 2 s, a memory bomb ends at its limit, a kernel that
    writes files leaves nothing behind, and the process calling ``kbench.evaluate`` survives them all.

Issue 16's attacks (``H`` ids) add: every evaluation's workers are gone once it ends (no process of this
session running as a worker's uid outlives its grader), and a kernel the table marks ``open`` is an open hole
(``xfail(strict=True)``, reason "open hole: <mechanism>"): the fixers see an XPASS once they close it.

Only deterministic facts are asserted. A naive verdict is marked ``fooled`` (correct and > 1.3x) only
where the exploit makes the speedup structural (hundreds of x), never where it rides on timing noise.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import kbench
from kbench import HARDENED, NAIVE, Grader
from kbench.grading import static_gate
from kbench.core.modes import Mode
from tests import leftovers
from tests.attack_sources import bad_parts, graded_source
from tests.sandbox_probe import harness as worker_harness

pytestmark = pytest.mark.slow

ADV = Path(__file__).parent / "adversarial"
FAST = 1.3  # "correct and faster": what no adversarial kernel may get from the hardened grader


@dataclass(frozen=True)
class V:
    """An expected verdict."""

    status: str  # "a|b": either status
    msg: str | None = None  # regular expression searched in Result.msg
    fooled: bool = False  # naive only: the exploit pays off (naive says correct; how fast: benchmarks/naive_fooled.py)
    dists: tuple[str, ...] | None = None  # naive only: correctness distributions (None: the mode's own)
    no_gate: "V | None" = None  # hardened only: the verdict with the AST gate switched off


GELU = "L1_gelu"
#: The static gate's messages, by the rule named in ``cases.toml`` (``hardened = { gate = ... }``).
GATE_PATTERNS = {
    "import": r"^rejected: line \d+ imports \w+ \[import\]",
    # a gate-evading kernel: rejected once the gate follows module aliases
    "alias": r"^rejected: line \d+ .*\[(module-patch|escape|private)\]$",
    "private": r"^rejected: line \d+ reaches private name _utils_impl \[private\]$",
}


def _verdict(row: dict, no_gate: V | None = None) -> V:
    if "gate" in row:
        return V("rejected", GATE_PATTERNS[row["gate"]], no_gate=no_gate)
    return V(row["status"], row.get("msg"), row.get("fooled", False),
             tuple(row["dists"]) if "dists" in row else None, no_gate)


def _load_cases() -> tuple[list[tuple[str, str, V, V, str]], dict[str, dict], dict[str, tuple[str, ...]]]:
    """``cases.toml`` as (file, task, naive expectation, hardened expectation, why), per-file limits and
    per-file shared parts."""
    with open(ADV / "cases.toml", "rb") as f:
        table = tomllib.load(f)
    cases, limits, parts = [], {}, {}
    for stem, row in table.items():
        gate_off = _verdict(row["gate_off"]) if "gate_off" in row else None
        cases.append((stem + ".py", row["task"], _verdict(row["naive"]), _verdict(row["hardened"], gate_off),
                      row["why"]))
        if "limits" in row:
            limits[stem + ".py"] = row["limits"]
        if "parts" in row:
            parts[stem + ".py"] = tuple(row["parts"])
    return cases, limits, parts


CASES, LIMITS, PARTS = _load_cases()
#: Verdicts the native harness gives where they differ from the gate-off ones (``native`` in cases.toml).
NATIVE: dict[str, V] = {stem + ".py": _verdict(row["native"]) for stem, row in
                        tomllib.loads((ADV / "cases.toml").read_text()).items() if "native" in row}

#: Hardened verdicts the engine cannot give yet: (file -> (reason, strict)); the table's ``open`` rows.
XFAIL_HARDENED: dict[str, tuple[str, bool]] = {
    stem + ".py": (f"open hole: {row['open']}", True)
    for stem, row in tomllib.loads((ADV / "cases.toml").read_text()).items() if "open" in row}

# Written by file_side_channel.py (and any other kernel that tries): must never outlive an evaluation.
LEFTOVER_GLOBS = ["/tmp/kbench_adv_sidechannel*", "/dev/shm/kbench_adv_sidechannel*",
                  os.path.join(tempfile.gettempdir(), "kbench_adv_sidechannel*"),
                  "/dev/shm/kbench-candidate-*/kbench_adv_sidechannel*",
                  os.path.join(tempfile.gettempdir(), "kbench-candidate-*", "kbench_adv_sidechannel*")]


def _leftovers() -> set[str]:
    return {p for g in LEFTOVER_GLOBS for p in glob.glob(g)}


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = _leftovers()
    try:
        yield
    finally:
        left = _leftovers() - before
        for p in left:  # clean up, then fail
            try:
                os.remove(p)
            except OSError:
                pass
    assert not left, f"a candidate left files behind: {sorted(left)}"


@pytest.fixture
def fresh_grader():
    """A grader with no cached reference outputs, as in a fresh ``kbench eval``."""
    g = Grader()
    yield g
    g.close()


def _src(file: str) -> str:
    """The kernel as graded: the file, then the shared parts (``_*.py``) its table names."""
    return graded_source(ADV, file, PARTS.get(file, ()))


def _mode(base: Mode, file: str, **extra) -> Mode:
    gate = extra.pop("gate", True)
    mode = dataclasses.replace(base, **{**LIMITS.get(file, {}), **extra})
    return mode if gate or not mode.has("gate") else mode.without("gate")


def _check(r: kbench.Result, want: V, elapsed: float, mode: Mode, label: str) -> None:
    where = f"{label}: got {r.status}: {r.msg!r}"
    assert r.status in want.status.split("|"), where
    if want.msg:
        assert re.search(want.msg, r.msg), where
    if mode.timeout_s < HARDENED.timeout_s:
        assert elapsed < mode.timeout_s + 2.0, f"{label}: took {elapsed:.1f} s with a {mode.timeout_s:g} s time-out"
    if mode.memory_limit_mb < HARDENED.memory_limit_mb:  # stopped at its limit, not after grinding the machine
        assert elapsed < 15.0, f"{label}: a memory-limited evaluation took {elapsed:.1f} s"


def _hardened(task: str, src: str, mode: Mode, name: str) -> tuple[kbench.Result, float]:
    """A hardened evaluation on a fresh grader (no cached reference outputs: a fresh ``kbench eval``).

    One run: "fooled" is judged as kbench's own scores judge speed, by the interval's lower bound (a
    kernel that is the reference in disguise reads 1.3x on a loaded machine only inside a wide interval)."""
    g = Grader()
    try:
        t0 = time.perf_counter()
        r = kbench.evaluate(task, src, mode, name, grader=g)
        return r, time.perf_counter() - t0
    finally:
        g.close()


def fooled(r: kbench.Result) -> bool:
    """Correct and measurably faster than FAST: the interval's lower bound is above it."""
    return r.correct and r.timing is not None and r.timing.speedup_ci[0] > FAST


def _ids(cases):
    return [c[0].removesuffix(".py") for c in cases]


def test_every_kernel_is_in_the_table_and_documented():
    files = sorted(p.name for p in ADV.glob("*.py") if not p.name.startswith("_"))
    assert files == sorted(c[0] for c in CASES)
    assert not bad_parts(ADV, (f for fs in PARTS.values() for f in fs)), PARTS
    assert len(files) >= 20
    for f in files:
        first = _src(f).lstrip().removeprefix('"""').splitlines()[0]
        assert re.match(r"^(A[1-7]|B[1-3]|C[1-5]|D[1-4]|E[1-3]|N1|R\d|T\d+|H\d+) [^:]+: \S", first), (f, first)
    for file, task, naive, hard, why in CASES:
        assert task in kbench.TASK and why and naive.no_gate is None and not hard.fooled


@pytest.mark.parametrize("file,task,naive,hard,why", CASES, ids=_ids(CASES))
def test_naive_verdict(file, task, naive, hard, why, grader):
    mode = _mode(NAIVE, file)
    t0 = time.perf_counter()
    r = kbench.evaluate(task, _src(file), mode, file, dists=naive.dists, grader=grader)
    _check(r, naive, time.perf_counter() - t0, mode, f"naive {file}")
    if naive.fooled:  # fooled into "correct"; how fast it then reads is measured in benchmarks/naive_fooled.py
        assert r.correct, f"naive {file}: expected to be fooled, got {r.status}"


def _hardened_params():
    out = []
    for case in CASES:
        reason, strict = XFAIL_HARDENED.get(case[0], (None, True))
        marks = [pytest.mark.xfail(strict=strict, reason=reason)] if reason else []
        out.append(pytest.param(*case, marks=marks, id=case[0].removesuffix(".py")))
    return out


@pytest.mark.parametrize("file,task,naive,hard,why", _hardened_params())
def test_hardened_verdict(file, task, naive, hard, why):
    """Three ways: as graded; with the gate and the worker's audit hook off (the OS and the grader alone); and
    in the native harness (gate and audit hook off, ``ctypes`` and raw syscalls in the candidate's namespace,
    as its own native code would have them). The verdict must hold in all three."""
    src = _src(file)
    off = hard.no_gate or hard
    runs = [("hardened", _mode(HARDENED, file), hard, None),
            ("hardened, gate and audit hook off", _mode(HARDENED, file, gate=False), off, "no_audit"),
            ("hardened, native harness", _mode(HARDENED, file, gate=False), NATIVE.get(file, off), "native")]
    sid, me = os.getsid(0), os.getpid()  # this test process's own workers only: another may run beside it
    for label, mode, want, harness in runs:
        before = leftovers.worker_processes(sid, me)
        with worker_harness(harness):
            r, elapsed = _hardened(task, src, mode, file)
        left = leftovers.outliving(lambda: {p: d for p, d in leftovers.worker_processes(sid, me).items() if p not in before})
        leftovers.kill_all(left)
        assert not left, f"{label} {file}: workers outlived their evaluation: {sorted(left.values())}"
        assert not fooled(r), f"{label} {file}: FOOLED, correct at {r.speedup:.2f}x {r.speedup_ci}"
        _check(r, want, elapsed, mode, f"{label} {file}")


def test_arena_snoop_cannot_pass_correctness_only_grading(fresh_grader):
    """The pass-count matrix (correctness only, hardened judging) must not credit a kernel that computes
    nothing: with the snoop it passes every trial on a fresh grader. (Gate off: this is about the runtime.)"""
    mode = dataclasses.replace(HARDENED.without("gate"), timing=None)
    r = kbench.evaluate(GELU, _src("arena_snoop.py"), mode, "arena_snoop", grader=fresh_grader)
    assert r.status == "wrong", f"got {r.status}: {r.msg}"


# Not strict: whether a gamble escapes depends on how many pairs the run takes (fooled in 3 of 8 runs at
# ~10 pairs; a loaded machine widens the interval, runs more pairs and samples more checks).
def test_gamble_on_sampled_checks_never_pays():
    """T5, repeated: one fooled evaluation in a few is a payoff for a policy sampled many times (fast_p@k).
    Every timed output is judged, so a gamble on half the calls escapes a 10-pair run with probability 2^-10:
    three runs (fresh workers, fresh timing draws, one grader's trial references) catch a change that lets the
    gamble pay even one time in two (7/8), and ``test_every_timed_output_is_checked`` asserts the mechanism
    itself without luck."""
    src = _src("t5_gamble_on_sampled_checks.py")
    g = Grader()
    try:
        for i in range(3):
            r = kbench.evaluate("L1_diag_matmul", src, HARDENED, "t5", grader=g)
            assert not fooled(r), f"run {i + 1}: FOOLED, correct at {r.speedup:.2f}x {r.speedup_ci}"
    finally:
        g.close()


def test_explorer_view_of_a_wrong_candidate_is_not_fast():
    """T6: the explorer grades on all seven distributions with time_wrong and derives the default view from
    that one run; a kernel that fails edge on purpose and then skips the work must not be correct-and-fast
    in the view without edge."""
    from kbench import ALL_DISTS, DISTS

    mode = dataclasses.replace(HARDENED, time_wrong=True).with_dists(ALL_DISTS)
    g = Grader()
    try:
        r = kbench.evaluate(GELU, _src("t6_fail_on_purpose.py"), mode, "t6", grader=g)
    finally:
        g.close()
    assert r.status == "wrong" and r.msg.endswith("on edge"), r.msg
    view = r.restricted(DISTS)
    assert view is None or not fooled(view), f"default view: {view.status} {view.msg}"


def test_every_timed_output_is_checked():
    """What T5 gambles on, asserted without luck: every timed output is compared with the reference (the
    timing step's last event counts pairs and checked outputs)."""
    events: list[str] = []
    g = Grader()
    try:
        r = kbench.evaluate(GELU, kbench.TASK[GELU].ref_src, HARDENED, "reference", grader=g,
                            on_event=lambda e: events.append(e.message))
    finally:
        g.close()
    assert r.status == "correct", r.msg
    found = [re.search(r"^(\d+) pairs .*?; (\d+) timed outputs checked", m) for m in events]
    pairs, checked = next((int(m.group(1)), int(m.group(2))) for m in reversed(found) if m)
    assert checked >= pairs, f"{checked} of {pairs} timed outputs checked"


def test_gate_follows_module_aliases():
    for f in ("allclose_patch_aliased.py", "arena_snoop.py", "timer_patch_subtle.py"):
        assert static_gate.check(_src(f)), f"{f} passes the gate"


# ------------------------------------------------------------------ the static gate passes ordinary Python

HONEST_GELU = '''
"""Honest GELU written with the constructs a real kernel uses."""
import math
import numpy as np
from numpy import tanh

_C = math.sqrt(2.0 / math.pi)


class Gelu:
    def __init__(self, k=0.044715):
        self.k = k
        self.__doc__ = "tanh GELU"

    def __call__(self, a, out):
        with np.errstate(over="ignore", invalid="ignore"):
            np.multiply(a, a, out=out)
            np.multiply(out, a, out=out)
            out *= self.k
            np.add(out, a, out=out)
            out *= _C
            tanh(out, out=out)
        out += 1.0
        np.multiply(out, a, out=out)
        out *= 0.5
        return out


class Tiled(Gelu):
    def __init__(self, rows=128):
        super().__init__()
        self.rows = rows


def make_kernel(rows):
    kern = Tiled(rows)

    def run(a, out):
        blocks = [(i, min(i + rows, a.shape[0])) for i in range(0, a.shape[0], rows)]
        sizes = {lo: hi - lo for lo, hi in blocks}
        assert sum(sizes.values()) == a.shape[0], f"bad tiling {sizes}"
        for lo, hi in blocks:
            kern(a[lo:hi], out[lo:hi])
        return out

    return run


_run = make_kernel(128)


def init(params):
    return dict(params)


def forward(x, params, alloc):
    a = x["x"]
    out = alloc(a.shape, np.float32)
    return _run(a, out)
'''


def test_gate_passes_classes_closures_comprehensions_errstate_and_out():
    assert static_gate.check(HONEST_GELU) == []


def test_honest_kernel_with_ordinary_python_is_correct(grader):
    r = kbench.evaluate(GELU, HONEST_GELU, dataclasses.replace(HARDENED, timing=None), "honest_classes", grader=grader)
    assert r.status == "correct", r.msg


@pytest.mark.parametrize("src,rule,line", [
    ("import numpy as np\nimport os\n", "import", 2),
    ("def forward(x, params, alloc):\n    np.allclose = None\n", "module-patch", 2),
    ("x = 1\n\ndef forward(x, params, alloc):\n    return open('f').read()\n", "builtin", 4),
    ("def forward(x, params, alloc):\n    return x.__dict__\n", "dunder", 2),
    ("def forward(x, params, alloc):\n    return np.lib._utils_impl.os\n", "escape", 2),
    ("def forward(x, params, alloc):\n    return getattr(np, 'allclose')\n", "module-reflection", 2),
], ids=["import", "module-patch", "builtin", "dunder", "escape", "module-reflection"])
def test_gate_rejections_name_rule_and_line(src, rule, line, grader):
    found = static_gate.check(src)
    assert found and found[0].rule == rule and found[0].line == line
    assert str(found[0]).startswith(f"line {line} ") and str(found[0]).endswith(f"[{rule}]")
    r = kbench.evaluate(GELU, src, HARDENED, "gate", grader=grader)
    assert r.status == "rejected" and r.msg == f"rejected: {found[0]}"


# ------------------------------------------------------------------ the caller survives (keep last)

def test_grading_process_survives_the_whole_suite(grader):
    ref = kbench.TASK[GELU].ref_src
    quick = dataclasses.replace(HARDENED, timing=None)
    assert kbench.evaluate(GELU, ref, quick, "reference", grader=grader).status == "correct"
    r = kbench.evaluate(GELU, ref, HARDENED, "reference")  # the default grader, full pipeline
    assert r.status == "correct", r.msg
