"""The explorer's state, headless: candidates, the results known for them, the current mode and
distribution toggles, and everything derived from those (badges, fast_p, the matrix).

No Textual here: the screens read this model and the tests can drive it directly.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Hashable, Iterable, TypeVar

from kbench.batch import matrix as defence_views
from kbench.core import defences as catalogue
from kbench.core.distributions import ALL_DISTS, DISTS
from kbench.core.library import Candidate
from kbench.core.metrics import K_VALUES, P_VALUES, fast_p, fast_p_at_k, fast_p_per_task, oracle_fast_p
from kbench.core.modes import HARDENED, NAIVE, Mode
from kbench.core.results import Result
from kbench.core.status import badge_text
from kbench.core.tasks import active as active_tasks

#: What ``e`` runs in hardened mode: every distribution, and wrong candidates timed too, so any
#: subset of distributions can be read off one evaluation (``Result.restricted``).
EXPLORER_HARDENED: Mode = dataclasses.replace(HARDENED, time_wrong=True).with_dists(ALL_DISTS)
MODE_NAMES = ("naive", "hardened")
_T = TypeVar("_T")
_UNSET = object()


def hardened_for(dists: Iterable[str]) -> Mode:
    """Hardened on exactly ``dists`` (what runs when the all-7 result cannot answer a toggle set)."""
    return dataclasses.replace(HARDENED, time_wrong=True).with_dists(tuple(dists))


def mode_for(name: str) -> Mode:
    return NAIVE if name == "naive" else EXPLORER_HARDENED


def cid(c: Candidate) -> str:
    """A candidate's identity in the explorer (names can repeat across folders)."""
    return f"{c.origin}:{c.task}/{c.name}"


def ordered(dists: Iterable[str]) -> tuple[str, ...]:
    s = set(dists)
    return tuple(d for d in ALL_DISTS if d in s)


@dataclass(frozen=True)
class Known:
    """A result the explorer knows, and when it was stored (None: evaluated in this session)."""

    result: Result
    stored_at: datetime | None = None


def badge(result: Result | None) -> tuple[str, str]:
    """(text, status key) for a tree badge; the key names a ``kbench.core.status`` look."""
    return badge_text(result)


class Model:
    def __init__(self, candidates: Iterable[Candidate], enabled: Iterable[str] = DISTS, mode: str = "hardened") -> None:
        self.candidates: list[Candidate] = []
        self.mode = mode
        self.enabled: tuple[str, ...] = ordered(enabled)
        # (digest, task) -> {(mode name, dists): Known}
        self._known: dict[tuple[str, str], dict[tuple[str, tuple[str, ...]], Known]] = {}
        self.candidates = list({cid(c): c for c in candidates}.values())  # a later duplicate replaces
        self.scope = "library"  # which candidates the scores count: a name from ``scopes()``
        #: Defences switched off (hardened mode): its verdicts are hardened-without-these, derived from the one
        #: hardened run where the record allows, else from a run of its own (``defence_run``).
        self.off: frozenset[str] = frozenset()
        #: Views derived from a candidate's results (restricted to a distribution set, without some defences),
        #: per (digest, task), keyed by what they depend on besides the results: a switch flipped back and forth
        #: derives each view once. A recorded result drops its candidate's entries (``record``).
        self._views: dict[tuple[str, str], dict[Hashable, object]] = {}
        self._sort()

    # -- candidates -------------------------------------------------------------------------------

    def _sort(self) -> None:
        """Task order, then the library, the user's own, each folder; by name."""
        tasks = {t.name: i for i, t in enumerate(active_tasks())}
        self.candidates.sort(key=lambda x: (tasks.get(x.task, 99), x.origin != "library", x.origin != "user",
                                            x.origin, x.name))

    def add(self, c: Candidate) -> Candidate:
        """Add (or replace, by identity) a candidate."""
        self.candidates = [x for x in self.candidates if cid(x) != cid(c)] + [c]
        self._sort()
        return c

    def get(self, ident: str) -> Candidate | None:
        return next((c for c in self.candidates if cid(c) == ident), None)

    def for_task(self, task: str) -> list[Candidate]:
        return [c for c in self.candidates if c.task == task]

    # -- results ----------------------------------------------------------------------------------

    def record(self, digest: str, task: str, result: Result, stored_at: datetime | None = None) -> None:
        self._known.setdefault((digest, task), {})[(result.mode, tuple(result.dists))] = Known(result, stored_at)
        self._views.pop((digest, task), None)

    def _memo(self, c: Candidate, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per candidate's results and ``key`` (what the view depends on besides them)."""
        views = self._views.setdefault((c.digest, c.task), {})
        value = views.get(key, _UNSET)
        if value is _UNSET:
            value = views[key] = compute()
        return value  # type: ignore[return-value]

    def known(self, c: Candidate, mode: str, dists: tuple[str, ...] | None = None) -> Known | None:
        """The known result for this exact key (naive: its own distribution set)."""
        key = (mode, NAIVE.dists if mode == "naive" else (dists or ALL_DISTS))
        return self._known.get((c.digest, c.task), {}).get(key)

    def verdict(self, c: Candidate, mode: str | None = None) -> Known | None:
        """The verdict in ``mode`` (default: the current one); hardened under the enabled distributions and
        without the defences switched off."""
        mode = mode or self.mode
        if mode == "naive":
            return self.known(c, "naive")
        if self.off:
            return self.defence_view(c, self.off)
        return self.hardened_verdict(c, self.enabled)

    # -- defences ---------------------------------------------------------------------------------

    def defence_view(self, c: Candidate, off: Iterable[str]) -> Known | None:
        """Hardened-without-``off`` on the enabled distributions: derived from the hardened run, or from the
        run without the defences that change the run (None: that run has not landed yet)."""
        off = frozenset(off)
        return self._memo(c, ("defence_view", self.enabled, off), lambda: self._defence_view(c, off))

    def _defence_view(self, c: Candidate, off: frozenset[str]) -> Known | None:
        base = self.hardened_verdict(c, self.enabled)
        if base is None:
            return None
        need = defence_views.run_needed(base.result, off)
        if need:
            ran = self._variant(c, need)
            r = defence_views.view(base.result, off, ran.result, timed=True) if ran is not None else None
            if r is not None:
                return Known(r, ran.stored_at)  # type: ignore[union-attr]
        else:
            r = catalogue.derive(base.result, off, timed=True)
            if r is not None:
                return Known(r, base.stored_at)
        # the record cannot give it (e.g. correct without them, but its speed never measured): a run without all
        return self._variant(c, off) if need != off else None

    def _variant(self, c: Candidate, off: frozenset[str]) -> Known | None:
        name = defence_views.variant(EXPLORER_HARDENED, off).name
        rs = self._known.get((c.digest, c.task), {})
        for (m, ds), k in sorted(rs.items(), key=lambda x: -len(x[0][1])):
            if m == name:
                r = k.result.restricted(self.enabled)
                if r is not None:
                    return Known(r, k.stored_at)
        return None

    def defence_run(self, c: Candidate) -> Mode | None:
        """The run the current defence toggles still need for ``c`` (None: known, or no hardened run yet)."""
        if not self.off:
            return None
        return self._memo(c, ("defence_run", self.enabled, self.off), lambda: self._defence_run(c))

    def _defence_run(self, c: Candidate) -> Mode | None:
        base = self.hardened_verdict(c, self.enabled)
        if base is None or self.verdict(c, "hardened") is not None:
            return None
        need = defence_views.run_needed(base.result, self.off)
        for names in ([need] if need else []) + [self.off]:
            if self._variant(c, names) is None:
                return defence_views.variant(EXPLORER_HARDENED, names)
        return None  # every run it could use has landed and none answers: nothing more to run

    def effective_off(self) -> frozenset[str]:
        """The defences not in force: naive has none (it is KernelBench v0's own procedure)."""
        return frozenset(catalogue.NAMES) if self.mode == "naive" else self.off

    def toggle_defence(self, name: str) -> None:
        """Flip one defence. From naive (every defence off) this is hardened's procedure with only it on."""
        catalogue.BY_NAME[name]  # KeyError for an unknown name
        if self.mode == "naive":
            self.mode, self.off = "hardened", frozenset(catalogue.NAMES) - {name}
        else:
            self.off = self.off ^ {name}

    def preset(self, which: str) -> None:
        """``naive``: every defence off, which is KernelBench v0's own procedure (the naive mode);
        ``hardened``: every defence on (the hardened mode)."""
        self.mode = "naive" if which == "naive" else "hardened"
        self.off = frozenset()  # naive's "every defence off" is its procedure; ``m`` back is the full hardened

    def hardened_verdict(self, c: Candidate, dists: tuple[str, ...]) -> Known | None:
        """Hardened on exactly ``dists``: the run on them, or read off a wider run (None: neither tells)."""
        dists = tuple(dists)
        return self._memo(c, ("hardened", dists), lambda: self._hardened_verdict(c, dists))

    def _hardened_verdict(self, c: Candidate, dists: tuple[str, ...]) -> Known | None:
        rs = self._known.get((c.digest, c.task), {})
        exact = rs.get(("hardened", dists))
        if exact is not None:
            return exact
        wider = sorted(((ds, k) for (m, ds), k in rs.items() if m == "hardened"), key=lambda x: -len(x[0]))
        for _, k in wider:
            r = k.result.restricted(dists)
            if r is not None:
                return Known(r, k.stored_at)
        return None

    def full(self, c: Candidate) -> Result | None:
        """The widest hardened result (for the matrix and for per-distribution detail)."""
        return self._memo(c, "full", lambda: self._full(c))

    def _full(self, c: Candidate) -> Result | None:
        rs = self._known.get((c.digest, c.task), {})
        wider = sorted(((ds, k) for (m, ds), k in rs.items() if m == "hardened"), key=lambda x: -len(x[0]))
        return wider[0][1].result if wider else None

    def missing(self, c: Candidate, mode: str) -> Mode | None:
        """The evaluation that would make ``c``'s verdict in ``mode`` known (and toggles instant), if any."""
        if mode == "naive":
            return None if self.known(c, "naive") else NAIVE
        if self.known(c, "hardened") is None:
            return EXPLORER_HARDENED
        if self.hardened_verdict(c, self.enabled) is None:
            return hardened_for(self.enabled)
        return self.defence_run(c)

    def unresolved(self) -> list[Candidate]:
        """Candidates evaluated in hardened mode whose verdict under the current toggles is unknown."""
        return [c for c in self.candidates
                if self.full(c) is not None and (self.hardened_verdict(c, self.enabled) is None
                                                 or self.defence_run(c) is not None)]

    # -- toggles ----------------------------------------------------------------------------------

    def toggle(self, dist: str) -> bool:
        """Flip one distribution; the last enabled one stays on. Returns whether anything changed."""
        if dist in self.enabled:
            if len(self.enabled) == 1:
                return False
            self.enabled = tuple(d for d in self.enabled if d != dist)
        else:
            self.enabled = ordered(self.enabled + (dist,))
        return True

    # -- scores -----------------------------------------------------------------------------------

    def scopes(self) -> list[str]:
        """The sets the scores can count: the library, your own (``mine``), each folder, everything."""
        origins = list(dict.fromkeys(c.origin for c in self.candidates))
        out = ["library"] + (["mine"] if "user" in origins else [])
        out += [o for o in origins if o not in ("library", "user")]
        return out + ["all"] if len(out) > 1 else out

    def in_scope(self, c: Candidate, scope: str | None = None) -> bool:
        scope = scope or self.scope
        if scope == "all":
            return True
        if scope == "mine":
            return c.origin == "user"
        return c.origin == scope

    def scoped(self) -> list[Candidate]:
        return [c for c in self.candidates if self.in_scope(c)]

    def next_scope(self) -> str:
        """Cycle the scores to the next set; returns it."""
        scopes = self.scopes()
        i = scopes.index(self.scope) if self.scope in scopes else -1
        self.scope = scopes[(i + 1) % len(scopes)]
        return self.scope

    def scope_label(self) -> str:
        n = len(self.scoped())
        name = {"library": "the library", "mine": "your own (✎)", "all": "everything loaded"}.get(
            self.scope, f"folder {self.scope}")
        return f"{name}, {n} candidate{'s' if n != 1 else ''}"

    def outcomes(self, mode: str) -> dict[str, list[tuple[bool, float | None]]]:
        """Per task, (correct, speedup) for every candidate in scope with a known verdict in ``mode``."""
        out: dict[str, list[tuple[bool, float | None]]] = {}
        for c in self.scoped():
            k = self.verdict(c, mode)
            if k is not None:
                r = k.result
                out.setdefault(c.task, []).append((r.correct, r.speedup if r.timing else None))
        return out

    def evaluated(self, mode: str) -> int:
        return sum(self.verdict(c, mode) is not None for c in self.scoped())

    def scores(self) -> "Scores":
        naive, hard = self.outcomes("naive"), self.outcomes("hardened")
        rows = [(p, fast_p(naive, p) if naive else None, fast_p(hard, p) if hard else None,
                 oracle_fast_p(hard, p) if hard else None) for p in P_VALUES]
        qn = list(fast_p_per_task(naive, 1.0).values())
        qh = list(fast_p_per_task(hard, 1.0).values())
        at_k = [(k, fast_p_at_k(qn, k) if qn else None, fast_p_at_k(qh, k) if qh else None) for k in K_VALUES]
        return Scores(rows, at_k, self.evaluated("naive"), self.evaluated("hardened"), len(self.scoped()),
                      naive, hard, self.scope_label())


@dataclass
class Scores:
    rows: list[tuple[float, float | None, float | None, float | None]]  # p, naive, hardened, oracle
    at_k: list[tuple[int, float | None, float | None]]  # k, naive, hardened (fast_1@k)
    n_naive: int
    n_hardened: int
    n_total: int
    naive: dict[str, list[tuple[bool, float | None]]]
    hardened: dict[str, list[tuple[bool, float | None]]]
    counts: str = "the library"  # which candidates these scores count

    def curve(self, mode: str, ps: list[float]) -> list[float] | None:
        out = self.naive if mode == "naive" else self.hardened
        return [fast_p(out, p) for p in ps] if out else None
