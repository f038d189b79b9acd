"""Accuracy: kbench's hardened speedup against an independent in-process measurement of the same two
functions, for every library candidate the hardened grader judges correct.

The independent side is timeit/pyperf style and shares no code with kbench's timing: this process,
pinned to one core and one BLAS thread, the reference and the candidate loaded with plain ``exec``,
default parameters (``init`` applied once), a pool of 8 normal inputs drawn with numpy directly and
cycled, the two functions alternated call by call in random order, and the median of ``--calls`` timed
calls each. It runs twice: "staged", under kbench's conventions (each call gets a fresh copy of its pool
input made just before it, as kbench's worker does, and ``alloc`` hands out buffers NaN-filled before the
call, as hardened's pool is), and
"cycled", the pool's arrays passed as they are (each last touched 8 calls ago) and ``alloc`` = ``np.empty``.
Ratio = kbench / staged; target: within 5 % (0.95-1.05) for every candidate whose kernel runs >= 1 ms. The
cycled column shows how much the conventions alone move a speedup.

    python benchmarks/accuracy.py [--tasks L1_gelu,L1_softmax] [--calls 60]
"""

from __future__ import annotations

import argparse

# Heavy imports only in the parent (see README.md: the fork server re-imports the main module).
if __name__ == "__main__":
    from _common import console, footer, header, pin_blas, progress, verdict
    from rich.table import Table

TARGET = 0.05
MIN_KERNEL_S = 1e-3


def independent_speedup(task, src: str, calls: int, seed: int, staged: bool) -> tuple[float, float, float]:
    """(speedup, median reference s, median candidate s), measured in this process; ``staged``: every call
    gets a fresh copy of its input, made untimed just before it, and NaN-filled output blocks."""
    import math
    import random
    import time

    import numpy as np

    def load(text: str):
        ns = {"np": np, "math": math, "__name__": "bench"}
        exec(compile(text, "<bench>", "exec"), ns)  # noqa: S102 - our own library, run by hand
        return ns["forward"], ns.get("init")

    rng = np.random.default_rng(seed)
    ref_fn, _ = load(task.ref_src)
    cand_fn, cand_init = load(src)
    params = task.make_params(np.random.default_rng(seed + 1), False)
    cand_params = cand_init(dict(params)) if cand_init else params
    pool = [{k: rng.standard_normal(s, dtype=np.float32) for k, s in task.inputs.items()} for _ in range(8)]

    # Staged: as hardened's pool, NaN-filled before the call (the grader refills it between calls): the
    # shapes a function asked for in its warm-up are prepared untimed before each of its calls.
    asked: dict[str, list] = {"ref": [], "cand": []}
    ready: list = []

    def alloc(shape, dtype=np.float32):
        if not staged:
            return np.empty(shape, dtype)
        for i, a in enumerate(ready):
            if a.shape == tuple(np.atleast_1d(shape)) and a.dtype == np.dtype(dtype):
                return ready.pop(i)
        return np.full(shape, np.nan, dtype)

    def recording(name):
        def rec(shape, dtype=np.float32):
            asked[name].append((tuple(np.atleast_1d(shape)), np.dtype(dtype)))
            return alloc(shape, dtype)
        return rec

    order = random.Random(seed)
    ref_t, cand_t = [], []
    with np.errstate(all="ignore"):
        for x in pool[:2]:  # warm-up
            asked["ref"].clear()
            asked["cand"].clear()
            ref_fn(x, params, recording("ref"))
            cand_fn(x, cand_params, recording("cand"))
        for i in range(calls):
            x = pool[i % len(pool)]
            arms = [("ref", ref_fn, params), ("cand", cand_fn, cand_params)]
            order.shuffle(arms)
            for name, fn, p in arms:
                arg = {k: v.copy() for k, v in x.items()} if staged else x
                ready[:] = [np.full(s, np.nan, d) for s, d in asked[name]] if staged else []
                t0 = time.perf_counter()
                fn(arg, p, alloc)
                dt = time.perf_counter() - t0
                (ref_t if name == "ref" else cand_t).append(dt)
    r, c = float(np.median(ref_t)), float(np.median(cand_t))
    return r / c, r, c


def main() -> int:
    import os

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    ap.add_argument("--calls", type=int, default=60, help="timed calls per function, independent side")
    args = ap.parse_args()

    from kbench import HARDENED, LIBRARY, TASK, Grader, evaluate

    pin_blas(1)
    t0 = header("Accuracy: kbench hardened speedup vs an independent in-process measurement",
                f"every correct library candidate; independent side: this process, one core, one BLAS thread, "
                f"{args.calls} alternated calls per function, median; target ratio within ±{TARGET:.0%} for "
                f"kernels >= {MIN_KERNEL_S * 1e3:.0f} ms.")
    wanted = set(args.tasks.split(",")) if args.tasks else None
    grader = Grader()
    table = Table("candidate", "kbench", "95% interval", "stop", "staged", "t_cand", "ratio", "within 5%",
                  "cycled", "ratio (cycled)", title="kbench / independent (staged: the target; cycled: for contrast)")
    misses, counted, ratios, long_enough = [], 0, [], []
    try:
        for c in LIBRARY:
            if wanted and c.task not in wanted:
                continue
            progress(f"{c.task}/{c.name}")
            r = evaluate(TASK[c.task], c.src, HARDENED, c.name, grader=grader)
            if not r.correct or r.timing is None:
                continue
            cpus = os.sched_getaffinity(0)
            os.sched_setaffinity(0, {max(cpus)})  # one core, like the sandbox's timing, only while measuring
            try:
                seed = len(ratios) + 1
                ind, _, t_cand = independent_speedup(TASK[c.task], c.src, args.calls, seed, staged=True)
                cyc, _, _ = independent_speedup(TASK[c.task], c.src, args.calls, seed, staged=False)
            finally:
                os.sched_setaffinity(0, cpus)
            ratio = r.speedup / ind
            ratios.append(ratio)
            applies = t_cand >= MIN_KERNEL_S
            long_enough.append(applies)
            ok = abs(ratio - 1) <= TARGET
            if applies:
                counted += 1
                if not ok:
                    misses.append((f"{c.task}/{c.name}", ratio))
            lo, hi = r.timing.speedup_ci
            table.add_row(f"{c.task}/{c.name}", f"{r.speedup:.3f}", f"{lo:.3f}–{hi:.3f}", str(r.timing.stop),
                          f"{ind:.3f}", f"{t_cand * 1e3:.2f} ms", f"{ratio:.3f}",
                          verdict(ok) if applies else "[dim](< 1 ms)[/]", f"{cyc:.3f}", f"{r.speedup / cyc:.3f}")
    finally:
        grader.close()
    console.print(table)
    worst = max((abs(x - 1) for x, applies in zip(ratios, long_enough) if applies), default=float("nan"))
    summary = Table("metric", "target", "measured", "met?", title="summary")
    summary.add_row("candidates >= 1 ms within 5 % of the independent speedup", f"{counted}/{counted}",
                    f"{counted - len(misses)}/{counted}", verdict(not misses))
    summary.add_row("worst |ratio - 1| (candidates >= 1 ms)", f"<= {TARGET:.0%}", f"{worst:.1%}",
                    verdict(worst <= TARGET))
    console.print(summary)
    if misses:
        console.print("missed: " + ", ".join(f"{n} ({x:.3f})" for n, x in misses))
    footer(t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
