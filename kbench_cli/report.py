"""``kbench report``: the lecture's four demos, measured in this run, in English.

Each demo first computes a facts object from this run's results (``*Facts``: plain data, tested on its
own), then renders it. Every observation sentence is chosen by those facts: a sentence whose premise did
not hold this time says what happened instead.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from kbench.core.distributions import DIST_NOTES, DISTS
from kbench.core.library import LIBRARY, find, library_for
from kbench.core.metrics import (K_VALUES, P_VALUES, fast_p, fast_p_at_k, fast_p_per_task, geomean_speedup,
                                 oracle_fast_p, outcome)
from kbench.core.modes import HARDENED, NAIVE, matrix_mode
from kbench.core.results import Event, Result
from kbench.core.status import look, speedup_phrase
from kbench.core.library import active as active_library
from kbench.core.tasks import TASK, TASKS, mode_for
from kbench.core.tasks import active as active_tasks
from kbench.grading.pipeline import evaluate
from kbench_cli.text import cell, line, markup
from kbench.timing import roofline

console = Console(highlight=False, emoji=False)
#: Achieved bandwidth at or above this share of the machine's copy bandwidth counts as "bandwidth-bound".
BANDWIDTH_BOUND_SHARE = 0.5
#: Per-distribution trials of demo 4's matrix, and normal draws of its all-or-nothing histogram.
MATRIX_TRIALS, HISTOGRAM_TRIALS = 5, 20


def fmt(r: Result) -> str:
    """A verdict in a cell or a sentence: ``13.2× [12.9–13.6]``, ``0.75× [0.46–1.72], within noise``."""
    if not r.correct:
        return look(r.status).text
    t = r.timing
    return (speedup_phrase(t.speedup, t.speedup_ci, t.noise) if t else "") or "correct"


def short(msg: str) -> str:
    """A verdict message without its element counts (the observation sentences quote many of them)."""
    return re.sub(r",? \d+ of \d+ elements out of tolerance( \([^)]*\))?", "", msg)


def observations(lines: list[str]) -> None:
    # the sentences quote verdict messages (candidate text): plain Text, one harmless line each
    body = Text("\n").join(Text(f"• {line(s)}") for s in lines)
    console.print(Panel(body, title="observed in this run", expand=True))


# ------------------------------------------------------------------------------------------- demo 1

@dataclass(frozen=True)
class AnatomyFacts:
    result: Result
    n: int
    ref_flops: float  # what the reference computes
    cand_flops: float  # the least arithmetic the task needs (what the candidate does)
    moved_bytes: float  # what the candidate must stream
    ref_gflops: float | None
    cand_gbs: float | None
    roof_gbs: float


def anatomy_facts(r: Result) -> AnatomyFacts:
    t = TASK["L1_diag_matmul"]
    n = t.inputs["B"][0]
    timed = r.correct and r.timing is not None
    return AnatomyFacts(r, n, t.flops, t.min_flops, t.min_bytes,
                        t.flops / r.t_ref / 1e9 if timed else None,
                        t.min_bytes / r.t_cand / 1e9 if timed else None, roofline.get().gbs)


def anatomy_lines(f: AnatomyFacts) -> list[str]:
    r = f.result
    if not (r.correct and r.timing):
        return [f"Verdict {r.status}: {r.msg}."]
    lo, hi = r.speedup_ci or (r.speedup, r.speedup)
    lines = [f"Verdict {r.status}: reference {r.t_ref * 1e3:.1f} ms, candidate {r.t_cand * 1e3:.2f} ms, "
             f"speedup {r.speedup:.1f}x (95% CI {lo:.1f}-{hi:.1f})."]
    less = f.ref_flops / max(f.cand_flops, 1.0)
    assert f.cand_gbs is not None and f.ref_gflops is not None
    share = f.cand_gbs / f.roof_gbs
    bound = (f"at {share:.0%} of this machine's {f.roof_gbs:.1f} GB/s copy bandwidth, so memory bandwidth, not "
             "arithmetic, bounds it" if share >= BANDWIDTH_BOUND_SHARE else
             f"only {share:.0%} of this machine's {f.roof_gbs:.1f} GB/s copy bandwidth, so neither arithmetic nor "
             "bandwidth bounds it here: per-call costs and temporaries do")
    lines.append(f"The reference computes {f.ref_flops / 1e9:.1f} GFLOP at {f.ref_gflops:.1f} GFLOP/s; the candidate "
                 f"does {less:.0f}x less arithmetic ({f.cand_flops / 1e6:.1f} M operations) but is {r.speedup:.0f}x "
                 f"faster: it streams {f.moved_bytes / 1e6:.0f} MB at {f.cand_gbs:.1f} GB/s, {bound}.")
    how = (f"here {less:.0f}x less arithmetic for the same answer" if less > 2 else
           "here the same arithmetic, done differently")
    lines.append(f"The grader checks only two things, agreement with the reference (atol = rtol = {HARDENED.atol:g}) "
                 f"and the time; how the speed was obtained ({how}) is not its business — which is also its weakness.")
    return lines


def demo1() -> None:
    t, c = TASK["L1_diag_matmul"], find("L1_diag_matmul", "row_scale")
    console.rule(f"[bold]Demo 1 — anatomy of a task: L1_diag_matmul, diag(a) @ B with N = {t.inputs['B'][0]}")
    console.print(Syntax(t.ref_src.strip(), "python", theme="ansi_dark"), "[dim]reference ↑   candidate ↓[/]",
                  Syntax(c.src.strip(), "python", theme="ansi_dark"))

    def show(e: Event) -> None:
        if e.step != "timing" or e.ok is not None:
            console.print(f"  [dim]{e.elapsed:5.2f}s {markup(e.step):<7}[/] {markup(e.message)}")

    observations(anatomy_lines(anatomy_facts(evaluate(t, c.src, HARDENED, c.name, on_event=show))))


# ------------------------------------------------------------------------------------------- demo 2

Results = dict[str, dict[tuple[str, str], Result]]


@dataclass(frozen=True)
class LibraryFacts:
    n_candidates: int
    hardened_speedups: list[float]
    slower: int
    flips: list[tuple[str, str]]  # naive correct, hardened not
    big_naive: list[tuple[str, str, float]]  # flips naive timed above 3x
    no_eps_default: Result | None
    no_eps_edge: Result | None


def library_facts(results: Results, no_eps_edge: Result | None) -> LibraryFacts:
    hard, naive = results["hardened"], results["naive"]
    flips = [k for k, r in naive.items() if r.correct and not hard[k].correct]
    sp = sorted(r.speedup for r in hard.values() if r.correct)
    return LibraryFacts(len(hard), sp, sum(s < 1 for s in sp), flips,
                        [(t, n, naive[(t, n)].speedup) for t, n in flips if naive[(t, n)].speedup > 3],
                        hard.get(("L1_layernorm", "no_eps")), no_eps_edge)


def library_lines(f: LibraryFacts, hard: dict[tuple[str, str], Result]) -> list[str]:
    lines = [f"Of {f.n_candidates} candidates the hardened grader accepts {len(f.hardened_speedups)}; {f.slower} of "
             f"those are slower than the reference, and their median speedup is "
             f"{statistics.median(f.hardened_speedups):.2f}x." if f.hardened_speedups else
             "The hardened grader accepted no candidate in this run."]
    if f.flips:
        lines.append(f"{len(f.flips)} candidates pass naive but not hardened: "
                     + "; ".join(f"{t}/{n} ({short(hard[(t, n)].msg)})" for t, n in f.flips) + ".")
    else:
        lines.append("No candidate passed naive and failed hardened in this run.")
    if f.big_naive:
        lines.append("Of these, " + ", ".join(f"{t}/{n} ({s:.0f}x under naive)" for t, n, s in f.big_naive)
                     + " looked like large wins to the naive grader.")
    d, e = f.no_eps_default, f.no_eps_edge
    if d is not None and e is not None:
        if d.correct and not e.correct:
            lines.append(f"L1_layernorm/no_eps is correct on the default distributions ({', '.join(d.dists)}) but "
                         f"{look(e.status).text} once the edge distribution is added: {short(e.msg)}.")
        else:
            lines.append(f"L1_layernorm/no_eps is {fmt(d)} on the default distributions and {fmt(e)} with edge added.")
    return lines


def demo2() -> Results:
    console.rule("[bold]Demo 2 — the library under the naive grader (KernelBench v0) and the hardened one")
    results: Results = {"naive": {}, "hardened": {}}
    table = Table("task", "candidate", "intent", "naive", "hardened", "hardened says", expand=True)
    with console.status("") as status:
        library = active_library()  # the lecture's library, and any registered task's (--task-set, --tasks)
        for i, c in enumerate(library, 1):
            status.update(f"evaluating {markup(c.key)} ({i}/{len(library)})")
            t = TASK[c.task]
            rn = evaluate(t, c.src, mode_for(t, NAIVE), c.name)
            rh = evaluate(t, c.src, mode_for(t, HARDENED), c.name)
            results["naive"][(c.task, c.name)], results["hardened"][(c.task, c.name)] = rn, rh
            table.add_row(c.task, cell(c.name), cell(c.intent), fmt(rn), fmt(rh),
                          cell("" if rh.correct else short(rh.msg)))
        status.update("L1_layernorm/no_eps with the edge distribution")
        no_eps = find("L1_layernorm", "no_eps")
        edge = evaluate(TASK["L1_layernorm"], no_eps.src, HARDENED.with_dists(DISTS + ("edge",)), no_eps.name)
    console.print(table)
    counts = Table("status", "naive", "hardened")
    for label, sts in (("compile / runtime error", ("compile_error", "runtime_error")), ("wrong", ("wrong",)),
                       ("rejected", ("rejected",)), ("correct", ("correct",))):
        counts.add_row(label, *(str(sum(r.status in sts for r in results[m].values())) for m in ("naive", "hardened")))
    console.print(counts)
    observations(library_lines(library_facts(results, edge), results["hardened"]))
    return results


# ------------------------------------------------------------------------------------------- demo 3

@dataclass(frozen=True)
class ScoreFacts:
    f0: float
    f1: float  # hardened, noise-aware
    f1_point: float
    naive_f1: float
    only_naive: list[str]  # tasks/candidates naive counts at p = 1 and hardened does not
    at10: float
    oracle1: float
    dead: list[str]  # tasks with no candidate counted at p = 1
    geomean: float


def _outcomes(res: dict[tuple[str, str], Result]) -> dict[str, list[tuple[bool, float | None, float | None]]]:
    return {t.name: [outcome(res[(t.name, c.name)]) for c in library_for(t.name)] for t in active_tasks()
            if library_for(t.name)}


def score_facts(results: Results) -> ScoreFacts:
    hard, naive = _outcomes(results["hardened"]), _outcomes(results["naive"])
    q1 = fast_p_per_task(hard, 1.0)
    only_naive = [f"{t}/{n}" for (t, n), r in results["naive"].items()
                  if fast_p({t: [outcome(r)]}, 1.0) and not fast_p({t: [outcome(results["hardened"][(t, n)])]}, 1.0)]
    return ScoreFacts(fast_p(hard, 0.0), fast_p(hard, 1.0), fast_p(hard, 1.0, point=True), fast_p(naive, 1.0),
                      only_naive, fast_p_at_k(q1.values(), 10), oracle_fast_p(hard, 1.0),
                      [t for t, v in q1.items() if v == 0],
                      geomean_speedup(r.speedup for r in results["hardened"].values() if r.correct))


def score_lines(f: ScoreFacts) -> list[str]:
    first = (f"Hardened fast_0 (correctness) is {f.f0:.2f} and fast_1 {f.f1:.2f} (a speedup counts only when its "
             f"95% interval lies above 1; by point estimates {f.f1_point:.2f}); naive fast_1 is {f.naive_f1:.2f}")
    if f.naive_f1 > f.f1 and f.only_naive:
        first += ", higher: it counts " + ", ".join(f.only_naive) + ", which hardened does not."
    else:
        first += ", no higher than hardened's in this run."
    return [first,
            f"Sampling k = 10 candidates per task lifts fast_1@k to {f.at10:.2f}, never above the oracle's "
            f"{f.oracle1:.2f}: {len(f.dead)} task(s) ({', '.join(f.dead) or 'none'}) have no correct candidate "
            "measurably faster than the reference, and no number of samples fixes that.",
            f"The geometric-mean speedup of the correct candidates is {f.geomean:.2f}x; fast_p counts a 1.01x and a "
            "100x win alike, which keeps one outlier from dominating but hides how much faster."]


def demo3(results: Results) -> None:
    console.rule("[bold]Demo 3 — fast_p: the score of a model that submits one library candidate per task")
    outs = {m: _outcomes(results[m]) for m in ("naive", "hardened")}
    table = Table("p", "naive fast_p", "hardened fast_p", "hardened, point estimates", "oracle (hardened)")
    for p in P_VALUES:
        table.add_row(f"{p:g}", *(f"{fast_p(outs[m], p):.2f}" for m in ("naive", "hardened")),
                      f"{fast_p(outs['hardened'], p, point=True):.2f}", f"{oracle_fast_p(outs['hardened'], p):.2f}")
    console.print(table)
    at_k = Table("k", *map(str, K_VALUES))
    for label, p in (("fast_1@k", 1.0), ("fast_0@k (correct)", 0.0)):
        q = fast_p_per_task(outs["hardened"], p)
        at_k.add_row(label, *(f"{fast_p_at_k(q.values(), k):.2f}" for k in K_VALUES))
    console.print(at_k)
    observations(score_lines(score_facts(results)))


# ------------------------------------------------------------------------------------------- demo 4

@dataclass(frozen=True)
class TestingFacts:
    cells: dict[str, dict[str, tuple[int, int]]]  # candidate -> dist -> (passed, run)
    histogram: dict[str, int] | None = None  # on HISTOGRAM_TRIALS normal draws: all-wrong, all-right, partial
    fails: dict[str, list[str]] = field(default_factory=dict)


def testing_facts(cells: dict[str, dict[str, tuple[int, int]]], histogram: dict[str, int] | None) -> TestingFacts:
    return TestingFacts(cells, histogram, {k: [d for d, (p, n) in v.items() if p < n] for k, v in cells.items()})


def testing_lines(f: TestingFacts) -> list[str]:
    lines = ["Where each bug shows: " + "; ".join(f"{k} fails on {', '.join(v) if v else 'nothing'}"
                                                 for k, v in f.fails.items()) + "."]
    split = [k for k, v in f.fails.items() if v and len(v) < len(f.cells[k])]
    if split:
        lines.append(f"{len(split)} of {len(f.cells)} candidates pass on some distributions and fail on others: "
                     "which inputs are tested decides whether the bug is seen.")
    if f.histogram is not None:
        h = f.histogram
        runs = sum(h.values())
        verdict = ("every candidate got the same verdict on all of them: within one distribution more trials "
                   "changed no verdict" if h["partial"] == 0 else
                   f"{h['partial']} got mixed results: within one distribution, more trials did change a verdict")
        lines.append(f"On {HISTOGRAM_TRIALS} normal draws, of the {runs} candidates that run, {h['all_wrong']} are "
                     f"all-wrong, {h['all_right']} all-right; {verdict}.")
    return lines


def demo4(quick: bool) -> None:
    console.rule(f"[bold]Demo 4 — what to test: one bug, {len(DISTS)} input distributions "
                 f"({MATRIX_TRIALS} trials each)")
    picks = [("L1_softmax", "no_max"), ("L1_layernorm", "one_pass_var"), ("L1_layernorm", "no_eps"),
             ("L1_gelu", "sigmoid_approx"), ("L1_softmax", "inplace")]
    mode = matrix_mode(DISTS, MATRIX_TRIALS)
    table = Table("candidate", *DISTS)
    cells: dict[str, dict[str, tuple[int, int]]] = {}
    for tn, cn in picks:
        r = evaluate(TASK[tn], find(tn, cn).src, mode, cn)
        cells[f"{tn}/{cn}"] = r.passes_by_dist()
        table.add_row(f"{tn}/{cn}", *(_cell(cells[f"{tn}/{cn}"].get(d)) for d in DISTS))
    console.print(table)
    console.print("[dim]" + "; ".join(f"{d}: {DIST_NOTES[d]}" for d in DISTS) + "[/]")
    hist = None
    if not quick:
        mode_n = matrix_mode(("normal",), HISTOGRAM_TRIALS)
        hist = {"all_wrong": 0, "all_right": 0, "partial": 0}
        for c in LIBRARY:
            r = evaluate(TASK[c.task], c.src, mode_n, c.name)
            if r.status in ("compile_error", "runtime_error", "rejected"):
                continue
            p = sum(t.ok for t in r.trials)
            hist["all_wrong" if p == 0 else "all_right" if p == len(r.trials) else "partial"] += 1
    observations(testing_lines(testing_facts(cells, hist)))


def _cell(pn: tuple[int, int] | None) -> str:
    return "—" if pn is None else f"{pn[0]}/{pn[1]}"


def run_report(quick: bool = False) -> int:
    demo1()
    res = demo2()
    demo3(res)
    demo4(quick)
    return 0


def run_calibrate(repeats: int = 3) -> int:
    """A/A: every task's reference graded as a candidate against itself, ``repeats`` times."""
    table = Table("task", "speedups", "max |s - 1|", "CI contains 1.0", "samples")
    worst, covered, total = 0.0, 0, 0
    for t in active_tasks():
        rs = [evaluate(t, t.ref_src, mode_for(t, HARDENED), "reference") for _ in range(max(1, repeats))]
        sp = [r.speedup for r in rs if r.correct]
        cov = sum(1 for r in rs if r.speedup_ci and r.speedup_ci[0] <= 1.0 <= r.speedup_ci[1])
        drift = max((abs(s - 1) for s in sp), default=float("nan"))
        worst, covered, total = max(worst, drift), covered + cov, total + len(rs)
        table.add_row(t.name, " ".join(f"{s:.3f}" for s in sp), f"{drift:.1%}", f"{cov}/{len(rs)}",
                      " ".join(str(r.timing.n_samples) for r in rs if r.timing))
    console.print(table)
    console.print(f"worst drift {worst:.1%}; intervals containing 1.0: {covered}/{total} ({covered / total:.0%})")
    return 0
