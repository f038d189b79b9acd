"""The hack × defence matrix: for each candidate and each defence, the verdict of hardened with that one
defence switched off — which defence catches which hack, and what gets through without it.

One hardened run per candidate answers every *derived* defence (``kbench.core.defences.derive`` reads the
view off its record). A defence that changes the run itself needs a run of its own, hardened without it
(``variant``). Rule for those runs: a variant is run only where the cell can differ from what is known —
not when the hardened run already says the gate passed (then no gate is the same run), and not when the
candidate already gets through with every defence on (correct and faster: a defence fewer cannot catch
more; that cell is reported as ``skipped``, never filled in).

The explorer's defence toggles use the same views (``view``, ``run_needed``, ``variant``) for any set of
defences switched off, not only one.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

from kbench.core import defences as catalogue
from kbench.core import tasks as tasks_mod
from kbench.core.library import Candidate
from kbench.core.modes import HARDENED, Mode
from kbench.core.results import Result
from kbench.core.taskfile import expected_verdicts
from kbench.store import Store

How = Literal["derived", "same", "run", "stored", "skipped"]

#: Timed matrices time wrong candidates too, so a view without a judging defence has a speed to show.
TIMED_BASE: Mode = dataclasses.replace(HARDENED, time_wrong=True)
#: Correctness only: cheap, enough for every cell whose question is "is it judged correct".
CORRECTNESS_BASE: Mode = dataclasses.replace(HARDENED, timing=None)


def run_needed(hardened: Result, off: Iterable[str]) -> frozenset[str]:
    """The defences in ``off`` that hardened-without-``off`` needs a run of its own for (empty: derived from
    ``hardened``). The gate counts only when it rejected: a gate that passed never touched the run."""
    off = set(off)
    if "gate" in off and "gate" not in hardened.breaches:
        off.discard("gate")
    return frozenset(off - catalogue.DERIVED)


def variant(base: Mode, off: Iterable[str]) -> Mode:
    """``base`` with ``off`` switched off, under a name of its own (stored results and the explorer keep it
    apart from ``base``'s). Without exact_output its float64 second opinion goes too (it re-checks those)."""
    off = set(off)
    if not off:
        return base
    if "exact_output" in off:
        off.add("float64_recheck")
    names = sorted(off)
    return dataclasses.replace(base.without(*names), name=f"{base.name}-without-{'+'.join(names)}")


def view(hardened: Result, off: Iterable[str], ran: Result | None, timed: bool) -> Result | None:
    """Hardened-without-``off`` for one candidate: derived from ``hardened``, or from ``ran`` (the result of
    ``variant(base, run_needed(hardened, off))``) with the rest of ``off`` derived. None: not known yet."""
    off = set(off)
    need = run_needed(hardened, off)
    if not need:
        return catalogue.derive(hardened, off, timed)
    if ran is None:
        return None
    return catalogue.derive(ran, off - need, timed)


def through(result: Result | None, timed: bool = True) -> bool:
    """The hack gets through: correct and, when timed, faster than the reference beyond noise (the 95 %
    interval of the speedup above 1.0)."""
    if result is None or not result.correct:
        return False
    if not timed:
        return True
    return result.timing is not None and result.timing.speedup_ci[0] > 1.0


def caught_by(result: Result | None) -> str | None:
    """The defence that decided a not-correct verdict, when the run recorded it (a breach)."""
    if result is None or result.correct or not result.breaches:
        return None
    return next(iter(result.breaches))


def library_hacks() -> list[Candidate]:
    """The library's reward hacks: the candidates their task folder's ``expected.toml`` marks ``hack``."""
    from kbench.core.library import active

    out, marks = [], {}
    for c in active():
        if c.path is None:
            continue
        folder = c.path.parent
        if folder not in marks:
            marks[folder] = expected_verdicts(folder)
        if marks[folder].get(c.name, {}).get("hack"):
            out.append(c)
    return out


@dataclass(frozen=True)
class Cell:
    defence: str
    result: Result | None  # None: skipped (see ``how``)
    how: How  # derived from the hardened run, the same run, a run of its own (or stored), skipped

    def to_dict(self, timed: bool) -> dict[str, Any]:
        return {"how": self.how, **_verdict(self.result, timed)}


@dataclass
class Row:
    candidate: Candidate
    hardened: Result
    hardened_how: How
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass
class Matrix:
    base: Mode
    defences: tuple[str, ...]
    rows: list[Row]
    runs: int = 0  # evaluations run for this matrix
    stored: int = 0  # evaluations read from the store instead

    @property
    def timed(self) -> bool:
        return self.base.timing is not None

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.base.name, "timed": self.timed, "defences": list(self.defences),
                "runs": self.runs, "stored": self.stored,
                "rows": [{"task": r.candidate.task, "candidate": r.candidate.name, "origin": r.candidate.origin,
                          "hardened": {"how": r.hardened_how, **_verdict(r.hardened, self.timed)},
                          "cells": {d: r.cells[d].to_dict(self.timed) for d in self.defences}} for r in self.rows]}


def _verdict(r: Result | None, timed: bool) -> dict[str, Any]:
    if r is None:
        return {"status": None, "msg": None, "speedup": None, "speedup_ci": None, "through": False,
                "caught_by": None}
    t = r.timing
    return {"status": r.status, "msg": r.msg, "speedup": t.speedup if t else None,
            "speedup_ci": list(t.speedup_ci) if t else None, "through": through(r, timed), "caught_by": caught_by(r)}


@dataclass(frozen=True)
class MatrixEvent:
    """Progress: ``done`` of ``total`` evaluations (an upper bound: skipped variants count as done)."""

    done: int
    total: int
    candidate: str
    defence: str | None  # None: the hardened run
    how: How
    status: str | None


class MatrixCancelled(Exception):
    """``cancel`` was set: the matrix stops between (or inside) evaluations."""


def compute(cands: Iterable[Candidate], defences: Iterable[str] = catalogue.NAMES, *, base: Mode = TIMED_BASE,
            store: Store | None = None, grader: Any = None, evaluate: Callable[..., Result] | None = None,
            on_event: Callable[[MatrixEvent], None] | None = None,
            cancel: threading.Event | None = None) -> Matrix:
    """The matrix for ``cands`` over ``defences``: one ``base`` run per candidate, plus a run of
    ``variant(base, {d})`` for each non-derived defence ``d`` where it can differ (module docstring).
    Results are read from and written to ``store`` (keyed on the full mode, so variants never mix)."""
    from kbench.grading.pipeline import Cancelled
    from kbench.grading.pipeline import evaluate as engine_evaluate

    evaluate = evaluate or engine_evaluate
    cands, names = list(cands), tuple(defences)
    for d in names:
        if d not in catalogue.BY_NAME:
            raise KeyError(f"unknown defence {d!r} (known: {', '.join(catalogue.NAMES)})")
    timed = base.timing is not None
    m = Matrix(base, names, [])
    total = len(cands) * (1 + sum(d not in catalogue.DERIVED for d in names))
    done = 0

    def grade(c: Candidate, mode: Mode) -> tuple[Result, How]:
        if cancel is not None and cancel.is_set():
            raise MatrixCancelled()
        mode = tasks_mod.mode_for(tasks_mod.get(c.task), mode)  # what evaluate applies: the stored key
        if store is not None:
            s = store.get(c.digest, c.task, mode, mode.dists)
            if s is not None:
                m.stored += 1
                return s.result, "stored"
        kw = {"grader": grader} if grader is not None else {}
        try:
            r = evaluate(c.task, c.src, mode, c.name, cancel=cancel, **kw)
        except Cancelled:
            raise MatrixCancelled() from None
        m.runs += 1
        if store is not None:
            store.put(c.digest, c.task, c.name, c.origin, r, mode=mode)
        return r, "run"

    def tick(c: Candidate, d: str | None, how: How, r: Result | None) -> None:
        nonlocal done
        done += 1
        if on_event is not None:
            on_event(MatrixEvent(done, total, c.key, d, how, r.status if r else None))

    for c in cands:
        hard, how = grade(c, base)
        row = Row(c, hard, how)
        tick(c, None, how, hard)
        for d in names:
            need = run_needed(hard, {d})
            if not need:
                r = catalogue.derive(hard, {d}, timed)
                if r is not None:
                    row.cells[d] = Cell(d, r, "same" if r is hard else "derived")
                    if d not in catalogue.DERIVED:
                        tick(c, d, row.cells[d].how, r)
                    continue
            if through(hard, timed):
                row.cells[d] = Cell(d, None, "skipped")
                if d not in catalogue.DERIVED:
                    tick(c, d, "skipped", None)
                continue
            if not need:
                total += 1  # a derived view the record cannot give (e.g. a speed never measured): run it
            ran, how = grade(c, variant(base, need or {d}))
            r = view(hard, {d}, ran, timed) if need else ran
            row.cells[d] = Cell(d, r if r is not None else ran, how)
            tick(c, d, how, ran)
        m.rows.append(row)
    return m


def cell_text(result: Result | None, how: How = "derived", narrow: bool = False) -> tuple[str, str]:
    """(text, status key) of a matrix cell for every face: the badge (``✓ 3.20×``, ``✗ wrong``), and for a
    verdict a recorded breach decided, the defence that still caught it (``⊘ roofline_floor``)."""
    from kbench.core.status import badge_text

    if result is None:
        return ("– through" if how == "skipped" else "·"), "not_evaluated"
    text, key = badge_text(result, narrow=narrow)
    by = caught_by(result)
    return (f"{text.split()[0]} {by}" if by else text), key


def defence_table() -> str:
    """The README's table of defences, generated from the catalogue (a test checks the README holds exactly
    this)."""
    rows = ["| defence | switch | catches | enforced in | off is | needed by |", "|---|---|---|---|---|---|"]
    for d in catalogue.DEFENCES:
        cases = ", ".join(f"`{c}`" for c in d.cases)
        rows.append(f"| `{d.name}` | {d.title} | {d.catches} | {d.enforced} | "
                    f"{'derived' if d.derived else 'own run'} | {cases} |")
    return "\n".join(rows)
