"""Judging's share of hardened evaluations, an earlier revision's judging against this one, side by side in one
run (the machine's load is the same for both: the ratio holds where the absolute figures do not).

The earlier ``kbench/core/judging.py`` and ``compare.py`` (``--old``, a git revision) are loaded as modules of
their own; the pipeline is pointed at one or the other for each evaluation (it calls them through its
``judging`` module). Two fresh graders with the same seed, one per side, so every trial's facts are computed
on both; each library candidate of ``judging.py``'s share table is evaluated under both, the order
alternating. Clocked: ``judge`` (every judged output) and ``trial_facts`` (a checked trial's facts, once per
trial, and every timed output's own).

    python benchmarks/judging_ab.py [--old REV] [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from collections import defaultdict

if __name__ == "__main__":
    from _common import ROOT, clocked, footer, header, verdict
    from rich.table import Table

TARGET_SHARE = 0.10
PICKS = ("row_scale", "inplace", "fused_centered", "cube_by_mult", "matvec", "inplace_epilogue", "silu_tanh",
         "flash_tiled")
CLOCKED = ("judge", "trial_facts")


def old_judging(rev: str) -> types.ModuleType:
    """``rev``'s judging module, importing ``rev``'s compare module (both registered under names of their own)."""
    def source(path: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True,
                              check=True).stdout

    cmp = types.ModuleType("kbench_old_compare")
    sys.modules[cmp.__name__] = cmp  # dataclasses look their module up there
    exec(compile(source("kbench/core/compare.py"), f"<{rev}:compare.py>", "exec"), cmp.__dict__)  # noqa: S102
    js = source("kbench/core/judging.py").replace("from kbench.core.compare import", "from kbench_old_compare import")
    jud = types.ModuleType("kbench_old_judging")
    sys.modules[jud.__name__] = jud
    exec(compile(js, f"<{rev}:judging.py>", "exec"), jud.__dict__)  # noqa: S102 - our own history
    return jud


def clock(mod: types.ModuleType, side: str, spent: dict) -> None:
    """Wrap the module's clocked functions in place (``facts_for`` calls ``trial_facts`` through the module)."""
    for name in CLOCKED:
        setattr(mod, name, clocked(getattr(mod, name), spent, (side, name)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="b46224a", help="git revision of the earlier judging (default: before the "
                                                     "judging-cost work)")
    ap.add_argument("--quick", action="store_true", help="the first three candidates only")
    args = ap.parse_args()
    t0 = header("Judging's share, earlier revision vs this one, side by side",
                f"hardened evaluations, fresh graders; old = {args.old}'s judging.py + compare.py")
    import kbench
    from kbench import LIBRARY
    from kbench.core import judging as new
    from kbench.grading import pipeline

    try:
        old = old_judging(args.old)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"judging_ab: cannot load revision {args.old!r}: {e}", file=sys.stderr)
        return 2
    spent: dict = defaultdict(float)
    clock(old, "old", spent)
    clock(new, "new", spent)
    sides = {"old": old, "new": new}
    graders = {s: kbench.Grader(seed=7) for s in sides}
    picks = [c for c in LIBRARY if c.name in PICKS][: 3 if args.quick else None]
    tab = Table("candidate", "side", "status", "wall (s)", "per-output judging (s)", "trial facts (s)", "share",
                title="judging inside hardened evaluations (timing on; the order alternates per candidate)")
    wall: dict = defaultdict(float)
    try:
        for i, c in enumerate(picks):
            for side in ("old", "new") if i % 2 == 0 else ("new", "old"):
                pipeline.judging = sides[side]
                before = dict(spent)
                t1 = time.perf_counter()
                r = kbench.evaluate(c.task, c.src, kbench.HARDENED, c.name, grader=graders[side])
                w = time.perf_counter() - t1
                wall[side] += w
                j, f = (spent[side, n] - before.get((side, n), 0.0) for n in CLOCKED)
                tab.add_row(c.key, side, r.status, f"{w:.2f}", f"{j:.3f}", f"{f:.3f}", f"{(j + f) / w:.1%}")
    finally:
        pipeline.judging = new
        for g in graders.values():
            g.close()
    lines = []
    for side in sides:
        j, f = spent[side, "judge"], spent[side, "trial_facts"]
        lines.append(f"{side}: judging {j + f:.2f} s of {wall[side]:.1f} s of evaluation wall = "
                     f"{(j + f) / wall[side]:.1%} (trial facts {f:.2f} s, per-output judgements {j:.2f} s)")
    o = spent["old", "judge"] + spent["old", "trial_facts"]
    n = spent["new", "judge"] + spent["new", "trial_facts"]
    share = n / wall["new"]
    lines.append(f"judging time new / old: {n / o:.2f} (trial facts {spent['new', 'trial_facts'] / spent['old', 'trial_facts']:.2f}, "
                 f"per-output {spent['new', 'judge'] / spent['old', 'judge']:.2f}); new share {share:.1%} "
                 f"(target <= {TARGET_SHARE:.0%}) {verdict(share <= TARGET_SHARE)}")
    return footer(t0, tab, *lines)


if __name__ == "__main__":
    raise SystemExit(main())
