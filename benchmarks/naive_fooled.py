"""How much faster the naive grader (KernelBench v0) believes each reward hack is: the speed half of "fooled".

The unit tests assert the verdict half only (naive says correct, hardened does not say correct and fast): a
speedup depends on the machine and its load, so it is measured here, never asserted in ``tests/``. Graded: the
library's and the ``extra`` set's reward hacks (written to read > 3x under naive), and the adversarial cases
``tests/adversarial/cases.toml`` marks ``fooled`` (> 1.3x, what no kernel may get from hardened).

    python benchmarks/naive_fooled.py
"""

from __future__ import annotations

import dataclasses
import sys
import tomllib
from pathlib import Path

if __name__ == "__main__":
    from _common import console, footer, header, progress, verdict
    from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
HACK_MIN, ADVERSARIAL_MIN = 3.0, 1.3


def main() -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    from attack_sources import graded_source
    from library_expectations import HACKS, HACKS_EXTRA

    from kbench import NAIVE, evaluate, usertasks
    from kbench.core import library, tasks
    from kbench.grading.truth import Grader

    done = usertasks.activate([], ["extra"])  # the extra set's tasks and candidates, as its tests register them
    if done.errors:
        print(f"the extra task set could not be registered: {done.errors}", file=sys.stderr)
        return 1

    t0 = header("Naive's speedups for the reward hacks", "the speed half of 'fooled', measured, never asserted")
    table = Table("candidate", "naive verdict", "naive speedup (95% CI)", "wanted", "met?")
    grader = Grader()
    rows: list[tuple[str, object, str, object, float]] = []
    by_key = {c.key: c for c in library.active()}
    for key in HACKS + HACKS_EXTRA:
        c = by_key[key]
        rows.append((key, c.task, c.src, tasks.mode_for(tasks.TASK[c.task], NAIVE), HACK_MIN))
    adv = ROOT / "tests" / "adversarial"
    for stem, row in tomllib.loads((adv / "cases.toml").read_text()).items():
        if row["naive"].get("fooled"):
            mode = dataclasses.replace(NAIVE, **row.get("limits", {}))
            rows.append((stem, row["task"], graded_source(adv, stem + ".py", tuple(row.get("parts", ()))), mode,
                         ADVERSARIAL_MIN, row["naive"].get("dists")))  # type: ignore[arg-type]
    try:
        for key, task, src, mode, want, *dists in rows:  # type: ignore[misc]
            progress(key)
            r = evaluate(task, src, mode, key, dists=tuple(dists[0]) if dists and dists[0] else None, grader=grader)
            ci = r.speedup_ci
            shown = f"{r.speedup:.2f}x ({ci[0]:.2f}-{ci[1]:.2f})" if r.speedup is not None and ci else "—"
            table.add_row(key, r.status, shown, f"> {want:g}x",
                          verdict(r.correct and r.speedup is not None and r.speedup > want))
    finally:
        grader.close()
        usertasks.deactivate()
    console.print(table)
    console.print(defences_off())
    footer(t0)
    return 0


def defences_off() -> "Table":
    """The speed half of the matrix's content-hash case (``tests/test_matrix.py`` asserts its verdicts): on fresh
    inputs hardened times it at the reference's speed; with fresh inputs off its cache hits read fast (the roofline
    floor rejects them), and with the floor off too it gets through."""
    from kbench.batch import matrix as mx
    from kbench.core import library
    from kbench.grading.truth import Grader

    c = next(c for c in library.active() if c.key == "L3_mlp_block/hack_content_hash")
    progress(f"{c.key}: hardened, then without fresh inputs")
    grader = Grader()
    try:
        row = mx.compute([c], ("fresh_inputs",), base=mx.TIMED_BASE, grader=grader).rows[0]
    finally:
        grader.close()
    ran = row.cells["fresh_inputs"].result
    views = (("hardened (fresh inputs)", row.hardened, "through: no"),
             ("without fresh inputs", ran, "through: no (the roofline floor)"),
             ("without fresh inputs and the roofline floor",
              mx.view(row.hardened, {"fresh_inputs", "roofline_floor"}, ran, timed=True), "through: yes"))
    table = Table("L3_mlp_block/hack_content_hash", "verdict", "speedup (95% CI)", "wanted", "met?",
                  title="defences off (the matrix's content-hash case)")
    for label, r, want in views:
        t = r.timing if r is not None else None
        shown = f"{t.speedup:.2f}x ({t.speedup_ci[0]:.2f}-{t.speedup_ci[1]:.2f})" if t is not None else "—"
        got = mx.through(r)
        table.add_row(label, r.status if r is not None else "—", shown, want,
                      verdict(got == want.startswith("through: yes")))
    return table


if __name__ == "__main__":
    raise SystemExit(main())
