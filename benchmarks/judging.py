"""Judging: false accepts and false rejects per check and per distribution, the extra judging time per
trial, and the input samplers' speed against numpy's own.

1. The shortcut suite (tests/shortcuts, must be wrong) and the honest sets (library candidates expected
   correct under hardened, tests/honest) are judged in this process exactly as hardened judges them
   (``kbench.core.judging`` on the grader's structured trial inputs, 5 trials, params cycling default +
   2 random sets, the float64 second opinion), on ``--seeds`` trial draws each. Per check: how many
   shortcuts it catches, how many would be accepted without it (every other check passing), how many
   honest kernels it rejects. Per distribution: shortcuts accepted, honest kernels rejected.
2. Judging time: the per-trial facts (computed once per trial) and the per-output judgement, against the
   previous compare() (``--old``: a git revision, by default the last before issue 17) and the trial's reference
   time; then whole hardened evaluations (timing on) with ``judging.judge``/``trial_facts`` clocked (a checked
   trial's facts, computed once per trial, and each timed output's own): judging's share of the wall time
   (target <= 10 %).
3. Samplers: ns per value of ``distributions.sample`` (two threads) and of numpy's own float32 samplers
   (one thread, as numpy runs), 2 M values, side by side.

    python benchmarks/judging.py [--seeds 2] [--quick] [--old REV]
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict

if __name__ == "__main__":
    from _common import ROOT, clocked, console, footer, header, verdict
    from rich.table import Table

TARGET_SHARE = 0.10
PLAN = [("default", -1), ("random", 0), ("random", 1), ("default", -1), ("random", 0)]


def _exact(task, x, params):  # noqa: ANN001, ANN202
    import numpy as np

    f = task.ref_fn()
    wide = {k: v.astype(np.float64) for k, v in x.items()}
    p64 = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v) for k, v in params.items()}
    with np.errstate(all="ignore"):
        return np.asarray(f(wide, p64, None), np.float64)


def judge_candidate(task, src: str, seed: int, exactness: list | None = None):  # noqa: ANN001, ANN201
    """[(dist, Comparison | error string)] for the 5 hardened trials of one draw, judged in this process.
    ``exactness``: gets, per trial, (the output's max error from the float64 answer, the float32 reference's)."""
    import numpy as np

    from kbench.core import judging
    from kbench.core.loader import load_candidate

    fwd, init, err = load_candidate(src, {"np": np, "math": math})
    if err:
        return [(d, f"load: {err}") for d in ("normal", "uniform", "laplace", "lognormal", "offset")]
    out = []
    params_cache: dict = {}
    for i, dist in enumerate(("normal", "uniform", "laplace", "lognormal", "offset")):
        kind, draw = PLAN[i]
        if (kind, draw) not in params_cache:
            params_cache[(kind, draw)] = task.make_params(np.random.default_rng([seed, 2, draw + 1]),
                                                          kind == "random", max(draw, 0))
        params = params_cache[(kind, draw)]
        x = task.for_trials().make_inputs(np.random.default_rng([seed, 1, i]), dist)
        ref = task.ref_fn()(x, params, None)
        try:
            p = init(dict(params)) if init else params
            with np.errstate(all="ignore"):
                y = fwd({k: v.copy() for k, v in x.items()}, p, lambda s, dt=np.float32: np.full(s, np.nan, dt))
        except Exception as e:  # noqa: BLE001 - a candidate may raise anything
            out.append((dist, f"raised {type(e).__name__}"))
            continue
        facts = judging.trial_facts(task, ref, x, params, predictors=False)
        out.append((dist, judging.judge(y, ref, facts, x, params, exact=lambda: _exact(task, x, params))))
        if exactness is not None:
            e = _exact(task, x, params)
            with np.errstate(all="ignore"):
                exactness.append((float(np.max(np.abs(np.asarray(y, np.float64) - e))),
                                  float(np.max(np.abs(ref.astype(np.float64) - e)))))
    return out


def _trick_silent(task, src: str, seed: int) -> bool:  # noqa: ANN001
    """Whether an accepted shortcut's outputs were as close to the float64 answer as the float32 reference's on
    every trial of the draw (within twice its error): its trick did not fire on these inputs, so accepting it
    accepted right answers. Measured, per draw: a trick that fired and slipped through stays a false accept."""
    err: list = []
    judge_candidate(task, src, seed, err)
    return bool(err) and all(mine <= 2 * theirs + 1e-30 for mine, theirs in err)


def accuracy_tables(seeds: int):  # noqa: ANN201
    import tomllib

    from kbench import LIBRARY, TASK

    import sys
    sys.path.insert(0, str(ROOT / "tests"))
    from library_expectations import EXPECTED  # noqa: E402
    import test_honest  # noqa: E402

    short = tomllib.loads((ROOT / "tests" / "shortcuts" / "cases.toml").read_text())
    sets = {
        "shortcut": [(n, TASK[c["task"]], (ROOT / "tests" / "shortcuts" / f"{n}.py").read_text()) for n, c in short.items()],
        "honest (library)": [(c.key, TASK[c.task], c.src) for c in LIBRARY if EXPECTED[c.key]["hardened"] == "correct"],
        "honest (tests/honest)": [(f, TASK[t], (ROOT / "tests" / "honest" / f).read_text()) for f, t in test_honest.CASES],
    }
    per_check = defaultdict(lambda: {"caught": 0, "alone": 0, "honest_rejects": 0})
    per_dist = defaultdict(lambda: {"short_acc": 0, "short_n": 0, "honest_rej": 0, "honest_n": 0})
    verdicts = defaultdict(lambda: [0, 0])  # set -> [wrong, correct]
    silent: list[str] = []  # shortcuts accepted whose outputs were as exact as the reference's (``_trick_silent``)
    errors: list[str] = []
    for label, cands in sets.items():
        shortcut = label == "shortcut"
        for name, task, src in cands:
            for seed in range(seeds):
                trials = judge_candidate(task, src, 1000 + seed)
                comps = [c for _, c in trials if not isinstance(c, str)]
                raised = [f"{name}: {d}: {c}" for d, c in trials if isinstance(c, str)]
                errors += raised
                ok = not raised and all(c.ok for c in comps)
                verdicts[label][1 if ok else 0] += 1
                if shortcut and ok and _trick_silent(task, src, 1000 + seed):
                    silent.append(f"{name} (draw {seed + 1})")
                names = {ch.name for c in comps for ch in c.checks}
                for n in names:
                    failed_somewhere = any(ch.name == n and ch.ok is False for c in comps for ch in c.checks)
                    if shortcut:
                        per_check[n]["caught"] += failed_somewhere
                        per_check[n]["alone"] += (not raised) and all(c.ok_without(n) for c in comps) and not ok
                    else:
                        per_check[n]["honest_rejects"] += failed_somewhere
                for d, c in trials:
                    key = "short" if shortcut else "honest"
                    passed = not isinstance(c, str) and c.ok
                    per_dist[d][f"{key}_n"] += 1
                    if shortcut:
                        per_dist[d]["short_acc"] += passed
                    else:
                        per_dist[d]["honest_rej"] += not passed
    n_short = verdicts["shortcut"][0] + verdicts["shortcut"][1]
    n_honest = sum(sum(v) for k, v in verdicts.items() if k != "shortcut")
    t1 = Table("check", "shortcuts it catches", "shortcuts accepted without it", "honest kernels it rejects",
               title=f"per check ({n_short} shortcut runs, {n_honest} honest runs; {seeds} draw(s) each)")
    for n in sorted(per_check, key=lambda k: (-per_check[k]["caught"], k)):
        v = per_check[n]
        t1.add_row(n, str(v["caught"]), str(v["alone"]), str(v["honest_rejects"]))
    t2 = Table("distribution", "shortcut trials accepted", "honest trials rejected", title="per distribution")
    for d, v in per_dist.items():
        t2.add_row(d, f"{v['short_acc']} of {v['short_n']}", f"{v['honest_rej']} of {v['honest_n']}")
    t3 = Table("set", "runs", "judged wrong", "judged correct", title="verdicts")
    for label, (w, c) in verdicts.items():
        t3.add_row(label, str(w + c), str(w), str(c))
    fa = verdicts["shortcut"][1] - len(silent)
    fr = sum(v[0] for k, v in verdicts.items() if k != "shortcut")
    quiet = (f" (and {len(silent)} accepted whose outputs were as close to the float64 answer as the reference's on "
             f"every trial: the trick did not fire on that draw: {', '.join(silent)})") if silent else ""
    return (t1, t2, t3, f"false accepts: {fa} of {n_short} shortcut runs{quiet}; false rejects: {fr} of {n_honest} "
                        f"honest runs {verdict(fa == 0 and fr == 0)}" + (f"; raised: {errors}" if errors else ""))


def time_tables(old_path: str | None, quick: bool):  # noqa: ANN201
    import importlib.util

    import numpy as np

    from kbench import TASKS
    from kbench.core import compare as new_compare
    from kbench.core import judging

    import subprocess
    import sys
    import types

    old = None
    if old_path:  # a git revision: its compare.py, loaded as a module of its own
        try:
            src = subprocess.run(["git", "-C", str(ROOT), "show", f"{old_path}:kbench/core/compare.py"],
                                 capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            src = None
        if src:
            old = types.ModuleType("kbench_old_compare")
            sys.modules[old.__name__] = old  # dataclasses look their module up there
            exec(compile(src, f"<{old_path}:compare.py>", "exec"), old.__dict__)  # noqa: S102 - our own history

    def best(f, k: int = 7) -> float:  # noqa: ANN001
        b = math.inf
        for _ in range(k):
            t = time.perf_counter()
            f()
            b = min(b, time.perf_counter() - t)
        return b

    t = Table("task", "reference (ms)", "trial facts, once (ms)", "judge per output (ms)",
              "previous compare (ms)" if old else "compare alone (ms)", "extra per trial vs reference",
              title="judging time per trial (one structured normal trial; medians of best-of-7)")
    for task in TASKS:
        rng = np.random.default_rng(3)
        x = task.for_trials().make_inputs(rng, "offset" if task.structure == "gelu" else "normal")
        params = task.make_params(rng, True, 1)
        f = task.ref_fn()
        t_ref = best(lambda: f(x, params, None), 3)
        ref = f(x, params, None)
        out = ref.copy()
        t_facts = best(lambda: judging.trial_facts(task, ref, x, params), 3)
        facts = judging.trial_facts(task, ref, x, params)
        t_judge = best(lambda: judging.judge(out, ref, facts, x, params))
        t_cmp = best(lambda: old.compare(out, ref)) if old else best(lambda: new_compare.compare(out, ref))
        t.add_row(task.name, f"{t_ref * 1e3:.2f}", f"{t_facts * 1e3:.1f}", f"{t_judge * 1e3:.2f}", f"{t_cmp * 1e3:.2f}",
                  f"{(t_judge - t_cmp) / t_ref:+.1%}")
    return t


def share_of_evaluation(quick: bool):  # noqa: ANN201
    import kbench
    from kbench import LIBRARY
    from kbench.core import judging
    from kbench.grading import pipeline

    spent = {"judge": 0.0, "facts": 0.0}
    # trial_facts, not facts_for: facts_for's are computed by it, and a timed output's facts (not cached: its
    # reference buffer is reused) come from it directly. This counts judging's CPU time, wherever it ran; the
    # engine's own result.overhead["judging_s"] counts what the run waited for (a checked trial's facts are
    # computed on another thread while the candidate's call runs: only the part the call did not cover counts).
    orig_judge, orig_facts = judging.judge, judging.trial_facts

    judging.judge, judging.trial_facts = clocked(orig_judge, spent, "judge"), clocked(orig_facts, spent, "facts")
    assert pipeline.judging is judging  # the pipeline calls them through the module: it sees the clocked ones
    g = kbench.Grader(seed=7)
    wall = waited = 0.0
    rows = []
    try:
        picks = [c for c in LIBRARY if c.name in ("row_scale", "inplace", "fused_centered", "cube_by_mult", "matvec",
                                                  "inplace_epilogue", "silu_tanh", "flash_tiled")]
        if quick:
            picks = picks[:3]
        for c in picks:
            before = dict(spent)
            t0 = time.perf_counter()
            r = kbench.evaluate(c.task, c.src, kbench.HARDENED, c.name, grader=g)
            w = time.perf_counter() - t0
            wall += w
            j = spent["judge"] - before["judge"] + spent["facts"] - before["facts"]
            crit = r.overhead.get("judging_s", math.nan)
            waited += crit
            rows.append((c.key, r.status, w, j, crit))
    finally:
        judging.judge, judging.trial_facts = orig_judge, orig_facts
        g.close()
    tab = Table("candidate", "status", "wall (s)", "judging CPU (s)", "its share", "judging waited for (s)",
                "share of wall", title="judging inside hardened evaluations (timing on; a fresh grader: every "
                "trial's facts computed in the run)")
    for key, st, w, j, crit in rows:
        tab.add_row(key, st, f"{w:.2f}", f"{j:.3f}", f"{j / w:.1%}", f"{crit:.3f}", f"{crit / w:.1%}")
    total_j = spent["judge"] + spent["facts"]
    return tab, (f"judging's CPU time {total_j:.2f} s = {total_j / wall:.1%} of {wall:.1f} s of evaluation wall "
                 f"(trial facts {spent['facts']:.2f} s, per-output judgements {spent['judge']:.2f} s)"), \
        f"judging on the runs' critical path (what they waited for) {waited:.2f} s of {wall:.1f} s = " \
        f"{waited / wall:.1%} (target <= {TARGET_SHARE:.0%}) {verdict(waited / wall <= TARGET_SHARE)}"


def sampler_table():  # noqa: ANN201
    import numpy as np

    from kbench.core import distributions

    n = 1 << 21
    rng = np.random.default_rng(0)
    buf = np.empty(n, np.float32)

    def best(f, k: int = 7) -> float:  # noqa: ANN001
        b = math.inf
        for _ in range(k):
            t0 = time.perf_counter()
            f()
            b = min(b, time.perf_counter() - t0)
        return b / n * 1e9

    own = {
        "normal": lambda: rng.standard_normal(dtype=np.float32, out=buf),
        "uniform": lambda: rng.random(dtype=np.float32, out=buf),
        "laplace": lambda: rng.standard_exponential(dtype=np.float32, out=buf),
        "lognormal": lambda: np.exp(rng.standard_normal(dtype=np.float32, out=buf), out=buf),
        "offset": lambda: np.add(rng.standard_normal(dtype=np.float32, out=buf), np.float32(1000), out=buf),
        "exponential": lambda: rng.standard_exponential(dtype=np.float32, out=buf),
    }
    t = Table("distribution", "kbench (ns/value, 2 threads)", "kbench, 1 thread", "numpy's own (ns/value)", "ratio",
              title=f"samplers, {n:,} float32 values (numpy's: its float32 sampler, one thread; laplace: "
                    "its exponential, the sign not counted)")
    for d, f in own.items():
        k2 = best(lambda: distributions.sample(rng, d, (n,)))
        one = distributions.get(d).fill
        k1 = best(lambda: one(rng, buf))
        o = best(f)
        t.add_row(d, f"{k2:.2f}", f"{k1:.2f}", f"{o:.2f}", f"{o / k2:.1f}x")
    return t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2, help="trial draws per candidate (default 2)")
    ap.add_argument("--old", default="92461e3", help="git revision whose compare.py to time against "
                                                     "(default: the last one before issue 17; '' for none)")
    ap.add_argument("--quick", action="store_true", help="fewer evaluations in the share table")
    args = ap.parse_args()
    t0 = header("Judging: false accepts/rejects, judging time, samplers",
                f"shortcut suite + honest sets judged in-process on structured trials ({args.seeds} draws each); "
                f"judging's share of hardened evaluations (target <= {TARGET_SHARE:.0%})")
    acc = accuracy_tables(args.seeds)
    times = time_tables(args.old, args.quick)
    share = share_of_evaluation(args.quick)
    samplers = sampler_table()
    return footer(t0, *acc, times, *share, samplers)


if __name__ == "__main__":
    raise SystemExit(main())
