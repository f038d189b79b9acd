"""Speedup repeat spread: max/min of the speedup over 3 hardened evaluations of every library candidate.

Target: max/min <= 1.05 for every candidate that is correct in all repeats and whose kernel runs >= 1 ms
(median candidate time). The repeats are done in rounds (the whole library, then again, then again), so
each candidate's evaluations lie minutes apart, as a user's re-runs would; ``--back-to-back`` repeats
each candidate immediately instead.

    python benchmarks/repeat_spread.py [--repeats 3] [--back-to-back]
"""

from __future__ import annotations

import argparse

# Heavy imports only in the parent: sandbox workers start through multiprocessing's fork server, which
# re-imports the parent's main module (as __mp_main__) in every worker; importing rich there would add
# ~20 ms to every worker start and distort what is measured.
if __name__ == "__main__":
    from _common import console, footer, header, progress, verdict
    from rich.table import Table


SPREAD_TARGET = 1.05
MIN_KERNEL_S = 1e-3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--back-to-back", action="store_true", help="repeat each candidate immediately")
    args = ap.parse_args()

    from kbench.grading.pipeline import Grader, evaluate
    from kbench.core.library import LIBRARY
    from kbench.core.modes import HARDENED
    from kbench.core.tasks import TASK

    t0 = header("Speedup repeat spread (hardened)",
                f"{args.repeats} hardened evaluations of each of {len(LIBRARY)} library candidates "
                f"({'back to back' if args.back_to_back else 'in rounds over the library'}); target max/min <= "
                f"{SPREAD_TARGET:.2f} for correct candidates whose kernel runs >= {MIN_KERNEL_S * 1e3:g} ms.")
    grader = Grader()
    results: dict[str, list] = {c.key: [] for c in LIBRARY}
    order = ([(c, i) for c in LIBRARY for i in range(args.repeats)] if args.back_to_back
             else [(c, i) for i in range(args.repeats) for c in LIBRARY])
    try:
        for k, (c, _) in enumerate(order, 1):
            progress(f"{k}/{len(order)} {c.key}")
            results[c.key].append(evaluate(TASK[c.task], c.src, HARDENED, c.name, grader=grader))
    finally:
        grader.close()

    table = Table("candidate", "statuses", "t_cand (median)", "speedups", "max/min", "target", title="per candidate")
    spreads_in, spreads_small, flaky, misses = [], [], [], []
    for c in LIBRARY:
        rs = results[c.key]
        statuses = sorted({r.status for r in rs})
        if statuses != ["correct"]:
            if "correct" in statuses:
                flaky.append(c.key)
                table.add_row(c.key, "[yellow]" + " / ".join(r.status for r in rs) + "[/]", "", "", "",
                              "[yellow]verdict not stable[/]")
            continue
        sp = [r.speedup for r in rs]
        spread = max(sp) / min(sp)
        t_cand = sorted(r.t_cand for r in rs)[len(rs) // 2]
        if t_cand >= MIN_KERNEL_S:
            spreads_in.append(spread)
            ok = spread <= SPREAD_TARGET
            if not ok:
                misses.append((c.key, spread))
            target = verdict(ok) + ("" if ok else f" by {(spread - SPREAD_TARGET) * 100:.1f} pts")
        else:
            spreads_small.append(spread)
            target = "[dim]n/a (< 1 ms)[/]"
        table.add_row(c.key, "correct", f"{t_cand * 1e3:.3f} ms", " ".join(f"{s:.3f}" for s in sp), f"{spread:.3f}",
                      target)
    console.print(table)
    summary = Table("metric", "target", "measured", "met?", title="summary")
    if spreads_in:
        summary.add_row(f"worst max/min, kernels >= 1 ms ({len(spreads_in)} candidates)", f"<= {SPREAD_TARGET:.2f}",
                        f"{max(spreads_in):.3f}", verdict(max(spreads_in) <= SPREAD_TARGET))
        summary.add_row("median max/min, kernels >= 1 ms", "", f"{sorted(spreads_in)[len(spreads_in) // 2]:.3f}", "")
        summary.add_row("candidates over target", "0", str(len(misses)), verdict(not misses))
    if spreads_small:
        summary.add_row(f"worst max/min, kernels < 1 ms ({len(spreads_small)}, not targeted)", "—",
                        f"{max(spreads_small):.3f}", "")
    summary.add_row("candidates whose verdict changed between repeats", "0", str(len(flaky)), verdict(not flaky))
    console.print(summary)
    if misses:
        console.print("over target: " + ", ".join(f"{k} ({s:.3f})" for k, s in misses))
    if flaky:
        console.print("verdict not stable: " + ", ".join(flaky))
    footer(t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
