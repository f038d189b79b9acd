"""``kbench report``: the lecture's four demos, measured in this run, in English.

Every number and every observation sentence below is computed from this run's results; a sentence
whose premise did not hold this time says what happened instead.
"""

from __future__ import annotations

import statistics

import re

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from kbench.core.distributions import DIST_NOTES, DISTS
from kbench.grading.pipeline import evaluate
from kbench.core.library import LIBRARY, find, library_for
from kbench.core.metrics import K_VALUES, P_VALUES, fast_p, fast_p_at_k, fast_p_per_task, geomean_speedup, oracle_fast_p
from kbench.core.modes import HARDENED, NAIVE, matrix_mode
from kbench.core.results import Result
from kbench.core.tasks import TASK, TASKS

console = Console(highlight=False)
STATUS_TEXT = {"compile_error": "compile error", "runtime_error": "runtime error", "wrong": "wrong",
               "rejected": "rejected"}


def fmt(r: Result) -> str:
    if not r.correct:
        return STATUS_TEXT[r.status]
    return f"{r.speedup:.2f}x" if r.speedup < 100 else f"{r.speedup:.0f}x"


def short(msg: str) -> str:
    """A verdict message without its element counts (the observation sentences quote many of them)."""
    return re.sub(r",? \d+ of \d+ elements out of tolerance( \([^)]*\))?", "", msg)


def observations(lines: list[str]) -> None:
    console.print(Panel("\n".join(f"• {line}" for line in lines), title="observed in this run", expand=True))


def demo1() -> None:
    console.rule("[bold]Demo 1 — anatomy of a task: L1_diag_matmul, diag(a) @ B with N = 2048")
    t, c = TASK["L1_diag_matmul"], find("L1_diag_matmul", "row_scale")
    console.print(Syntax(t.ref_src.strip(), "python", theme="ansi_dark"), "[dim]reference ↑   candidate ↓[/]",
                  Syntax(c.src.strip(), "python", theme="ansi_dark"))
    r = evaluate(t, c.src, HARDENED, c.name,
                 on_event=lambda e: console.print(f"  [dim]{e.elapsed:5.2f}s {e.step:<7}[/] {escape(e.message)}")
                 if e.step != "timing" or e.ok else None)
    n = 2048
    gemm_gflop, moved_mb = 2 * n**3 / 1e9, 2 * n * n * 4 / 1e6
    lines = [f"Verdict {r.status}: reference {r.t_ref * 1e3:.1f} ms, candidate {r.t_cand * 1e3:.2f} ms, "
             f"speedup {r.speedup:.1f}x (95% CI {r.speedup_ci[0]:.1f}-{r.speedup_ci[1]:.1f})." if r.correct
             else f"Verdict {r.status}: {r.msg}."]
    if r.correct:
        gflops = 2 * n**3 / r.t_ref / 1e9
        gbs = moved_mb / 1e3 / r.t_cand
        lines.append(f"The reference runs a {gemm_gflop:.1f} GFLOP dense GEMM at {gflops:.1f} GFLOP/s; the candidate "
                     f"does {n * n / 1e6:.1f} M multiplies, {2 * n:.0f}x less arithmetic, but is only "
                     f"{r.speedup:.0f}x faster: it streams B in and C out ({moved_mb:.0f} MB) at {gbs:.1f} GB/s, "
                     "so memory bandwidth, not arithmetic, bounds it.")
    lines.append("The grader checks only two things, agreement with the reference within 1e-2 and the time; how "
                 "the speed was obtained (here a better algorithm) is not its business — which is also its weakness.")
    observations(lines)


def demo2() -> dict[str, dict[tuple[str, str], Result]]:
    console.rule("[bold]Demo 2 — the library under the naive grader (KernelBench v0) and the hardened one")
    results: dict[str, dict[tuple[str, str], Result]] = {"naive": {}, "hardened": {}}
    table = Table("task", "candidate", "intent", "naive", "hardened", "hardened says", expand=True)
    with console.status("") as status:
        for i, c in enumerate(LIBRARY, 1):
            status.update(f"evaluating {c.key} ({i}/{len(LIBRARY)})")
            rn = evaluate(TASK[c.task], c.src, NAIVE, c.name)
            rh = evaluate(TASK[c.task], c.src, HARDENED, c.name)
            results["naive"][(c.task, c.name)], results["hardened"][(c.task, c.name)] = rn, rh
            table.add_row(c.task, c.name, c.intent, fmt(rn), fmt(rh), "" if rh.correct else short(rh.msg))
    console.print(table)
    counts = Table("status", "naive", "hardened")
    for label, sts in (("compile / runtime error", ("compile_error", "runtime_error")), ("wrong", ("wrong",)),
                       ("rejected", ("rejected",)), ("correct", ("correct",))):
        counts.add_row(label, *(str(sum(r.status in sts for r in results[m].values())) for m in ("naive", "hardened")))
    console.print(counts)
    hard = results["hardened"]
    flips = [k for k, r in results["naive"].items() if r.correct and not hard[k].correct]
    sp = sorted(r.speedup for r in hard.values() if r.correct)
    slower = sum(s < 1 for s in sp)
    big_naive = [k for k in flips if results["naive"][k].speedup > 3]
    lines = [f"Of {len(LIBRARY)} candidates the hardened grader accepts {len(sp)}; {slower} of those are slower than "
             f"the reference, and their median speedup is {statistics.median(sp):.2f}x." if sp else
             "The hardened grader accepted no candidate in this run.",
             f"{len(flips)} candidates pass naive but not hardened: " + "; ".join(f"{t}/{n} ({short(hard[(t, n)].msg)})"
                                                                           for t, n in flips) + "."]
    if big_naive:
        lines.append("Of these, " + ", ".join(f"{t}/{n} ({results['naive'][(t, n)].speedup:.0f}x under naive)"
                                              for t, n in big_naive) +
                     " looked like large wins to the naive grader.")
    no_eps = hard.get(("L1_layernorm", "no_eps"))
    if no_eps is not None:
        lines.append(f"L1_layernorm/no_eps is {fmt(no_eps)} under hardened on the default distributions: "
                     + ("none of them has a constant row, so the missing eps never divides by zero."
                        if no_eps.correct else f"{no_eps.msg}."))
    observations(lines)
    return results


def _outcomes(res: dict[tuple[str, str], Result]) -> dict[str, list[tuple[bool, float | None]]]:
    return {t.name: [(res[(t.name, c.name)].correct, res[(t.name, c.name)].speedup) for c in library_for(t.name)]
            for t in TASKS if library_for(t.name)}


def demo3(results: dict[str, dict[tuple[str, str], Result]]) -> None:
    console.rule("[bold]Demo 3 — fast_p: the score of a model that submits one library candidate per task")
    outs = {m: _outcomes(results[m]) for m in ("naive", "hardened")}
    q = {p: fast_p_per_task(outs["hardened"], p) for p in (0.0, 1.0)}
    table = Table("p", "naive fast_p", "hardened fast_p", "oracle (any candidate, hardened)")
    for p in P_VALUES:
        table.add_row(f"{p:g}", *(f"{fast_p(outs[m], p):.2f}" for m in ("naive", "hardened")),
                      f"{oracle_fast_p(outs['hardened'], p):.2f}")
    console.print(table)
    at_k = Table("k", *map(str, K_VALUES))
    for label, p in (("fast_1@k", 1.0), ("fast_0@k (correct)", 0.0)):
        at_k.add_row(label, *(f"{fast_p_at_k(q[p].values(), k):.2f}" for k in K_VALUES))
    console.print(at_k)
    f0, f1, n1 = fast_p(outs["hardened"], 0.0), fast_p(outs["hardened"], 1.0), fast_p(outs["naive"], 1.0)
    oracle1 = oracle_fast_p(outs["hardened"], 1.0)
    geo = geomean_speedup(r.speedup for r in results["hardened"].values() if r.correct)
    dead = [t for t, v in q[1.0].items() if v == 0]
    observations([
        f"Hardened fast_0 (correctness) is {f0:.2f} and fast_1 {f1:.2f}; naive fast_1 is {n1:.2f}"
        + (", higher because it believes the reward hacks and the input-specific bugs." if n1 > f1
           else ", no higher than hardened's in this run."),
        f"Sampling k = 10 candidates per task lifts fast_1@k to {fast_p_at_k(q[1.0].values(), 10):.2f}, "
        f"never above the oracle's {oracle1:.2f}: {len(dead)} task(s) ({', '.join(dead) or 'none'}) have no correct "
        "candidate faster than the reference, and no number of samples fixes that.",
        f"The geometric-mean speedup of the correct candidates is {geo:.2f}x; fast_p counts a 1.01x and a 100x "
        "win alike, which keeps one outlier from dominating but hides how much faster.",
    ])


def demo4(quick: bool) -> None:
    console.rule("[bold]Demo 4 — what to test: one bug, five input distributions (5 trials each)")
    picks = [("L1_softmax", "no_max"), ("L1_layernorm", "one_pass_var"), ("L1_layernorm", "no_eps"),
             ("L1_gelu", "sigmoid_approx"), ("L1_softmax", "inplace")]
    mode = matrix_mode(DISTS, 5)
    table = Table("candidate", *DISTS)
    cells: dict[str, dict[str, tuple[int, int]]] = {}
    for tn, cn in picks:
        r = evaluate(TASK[tn], find(tn, cn).src, mode, cn)
        cells[f"{tn}/{cn}"] = r.passes_by_dist()
        table.add_row(f"{tn}/{cn}", *(_cell(cells[f"{tn}/{cn}"].get(d)) for d in DISTS))
    console.print(table)
    console.print("[dim]" + "; ".join(f"{d}: {DIST_NOTES[d]}" for d in DISTS) + "[/]")
    fails = {k: [d for d, (p, n) in v.items() if p < n] for k, v in cells.items()}
    lines = ["Where each bug shows: " + "; ".join(f"{k} fails on {', '.join(v) if v else 'nothing'}"
                                                 for k, v in fails.items()) + "."]
    if not quick:
        mode20 = matrix_mode(("normal",), 20)
        hist = {"0/20": 0, "20/20": 0, "partial": 0}
        for c in LIBRARY:
            r = evaluate(TASK[c.task], c.src, mode20, c.name)
            if r.status in ("compile_error", "runtime_error", "rejected"):
                continue
            p = sum(t.ok for t in r.trials)
            hist["0/20" if p == 0 else "20/20" if p == len(r.trials) else "partial"] += 1
        lines.append(f"On 20 normal draws, the {sum(hist.values())} candidates that run are all-wrong {hist['0/20']}, "
                     f"all-right {hist['20/20']}, partly right {hist['partial']} times: within one distribution, "
                     "more trials rarely change a verdict; another distribution does.")
    observations(lines)


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
    for t in TASKS:
        rs = [evaluate(t, t.ref_src, HARDENED, "reference") for _ in range(max(1, repeats))]
        sp = [r.speedup for r in rs if r.correct]
        cov = sum(1 for r in rs if r.speedup_ci and r.speedup_ci[0] <= 1.0 <= r.speedup_ci[1])
        drift = max((abs(s - 1) for s in sp), default=float("nan"))
        worst, covered, total = max(worst, drift), covered + cov, total + len(rs)
        table.add_row(t.name, " ".join(f"{s:.3f}" for s in sp), f"{drift:.1%}", f"{cov}/{len(rs)}",
                      " ".join(str(r.timing.n_samples) for r in rs if r.timing))
    console.print(table)
    console.print(f"worst drift {worst:.1%}; intervals containing 1.0: {covered}/{total} ({covered / total:.0%})")
    return 0
