"""Isolation cost: what running a candidate in its own sandbox process costs per evaluation.

1. Worker start with every OS layer (namespaces, the filesystem view, rlimits, no root, Landlock, seccomp) + first answer
   (``load`` of a trivial source) + close, median of 20 (target < 15 ms), with each part timed on its
   own; the layers the workers reported are printed under the table.
2. An empty call's round trip through the sandbox, as the grader times every call (target <= 0.1 ms).
3. A whole hardened evaluation of that trivial candidate on a shrunk GELU task (64x64 instead of
   512x512): through the engine (sandbox workers) vs the same steps in this process (static gate,
   load, 5 trials judged with ``compare``, 2 warm-up pairs, then as many timed pairs as the engine took,
   the same bootstrap statistics). The difference is what isolation costs an evaluation of a fast kernel.

In-process timing is pinned to 1 BLAS thread (threadpoolctl), as the workers are.

    python benchmarks/isolation_cost.py [--n 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

# Heavy imports only in the parent: sandbox workers start through multiprocessing's fork server, which
# re-imports the parent's main module (as __mp_main__) in every worker; importing rich there would add
# ~20 ms to every worker start and distort what is measured.
if __name__ == "__main__":
    from _common import console, footer, header, pin_blas, progress, verdict
    from rich.table import Table


TARGET_S = 0.015
TRIVIAL = "def forward(x, params, alloc):\n    return x['x']\n"


def worker_cycle(n: int) -> Table:
    from kbench.sandbox import protocol as P
    from kbench.sandbox.server import Worker

    start, first, close, total = [], [], [], []
    layers: set[tuple[str, ...]] = set()
    for i in range(n + 2):
        progress(f"worker cycle {i + 1}/{n + 2}")
        t0 = time.perf_counter()
        w = Worker("candidate")
        t1 = time.perf_counter()
        reply = w.call(P.Load(TRIVIAL, "cand"), 10.0)
        t2 = time.perf_counter()
        layers.add(w.isolation)
        w.close()
        t3 = time.perf_counter()
        assert isinstance(reply, P.Loaded), reply
        if i >= 2:  # the first cycles also start the fork server
            start.append(t1 - t0)
            first.append(t2 - t1)
            close.append(t3 - t2)
            total.append(t3 - t0)
    table = Table("part", "median", "p90", "max", "target",
                  title=f"candidate worker: start, first answer, close (n={n})",
                  caption="layers active: " + " | ".join(", ".join(sorted(ls)) for ls in sorted(layers)))
    for label, xs in (("Worker('candidate') (fork from the fork server)", start),
                      ("first request: load a trivial source (waits for the worker's set-up and confinement)", first),
                      ("close (kill; reaped in the background)", close)):
        table.add_row(label, f"{statistics.median(xs) * 1e3:.1f} ms", f"{sorted(xs)[int(0.9 * (len(xs) - 1))] * 1e3:.1f} ms",
                      f"{max(xs) * 1e3:.1f} ms", "")
    m = statistics.median(total)
    table.add_row("[bold]start + first answer + close", f"[bold]{m * 1e3:.1f} ms",
                  f"{sorted(total)[int(0.9 * (len(total) - 1))] * 1e3:.1f} ms", f"{max(total) * 1e3:.1f} ms",
                  f"< {TARGET_S * 1e3:.0f} ms " + verdict(m < TARGET_S))
    return table


def main_module_effect(n: int) -> Table:
    """The same cycle in a fresh interpreter whose main module does / does not import rich at top level,
    with and without hiding the main module while the worker starts (``_cycle_probe.py``)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    probe = Path(__file__).with_name("_cycle_probe.py")
    table = Table("parent's main module", "while Worker() starts", "median cycle", "min", "max",
                  title=f"worker cycle vs what the parent's main module imports (fork server re-imports it; n={n})")
    for rich_, hide in ((False, False), (True, False), (False, True), (True, True)):
        progress(f"main-module probe rich={rich_} hide={hide}")
        cmd = [sys.executable, str(probe), "--n", str(n)] + ["--rich"] * rich_ + ["--hide-main"] * hide
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            table.add_row("imports rich" if rich_ else "stdlib only", "", f"[red]failed: {p.stderr[-80:]}[/]", "", "")
            continue
        d = json.loads(p.stdout.strip().splitlines()[-1])
        table.add_row("imports rich at top level (like the lecture script's console helper)" if rich_
                      else "stdlib only", "hidden (stub __main__)" if hide else "visible (default)",
                      f"{d['median'] * 1e3:.1f} ms", f"{d['min'] * 1e3:.1f} ms", f"{d['max'] * 1e3:.1f} ms")
    return table


def tiny_task():  # type: ignore[no-untyped-def]
    from kbench.core.tasks import TASK

    return dataclasses.replace(TASK["L1_gelu"], inputs={"x": (64, 64)}, out_shape=(64, 64))


def per_call(n: int) -> Table:
    """An empty call (``Ping``) through the sandbox, timed as the grader times every kernel call: the worker
    continued, the request sent, the reply read, the worker stopped again. This is the floor every timed call
    pays (the grader subtracts it, measured on the reference's twin)."""
    from kbench.sandbox import protocol as P
    from kbench.sandbox.server import Worker

    wall, cpu = [], []
    w = Worker("candidate")
    try:
        w.call(P.Load("def forward(x, params, alloc):\n    return None\n", "cand"), 10.0)
        for i in range(n + 5):
            k = w.run(P.Ping(), 10.0, None)
            if i >= 5:
                wall.append(k.wall_ns / 1e9)
                cpu.append(k.cpu_ns / 1e9)
    finally:
        w.close()
    table = Table("empty call through the sandbox", "median", "p90", title=f"per call (n={n}; target <= 0.1 ms)")
    for name, xs in (("round trip by the grader's wall clock", wall), ("worker CPU time in that call", cpu)):
        xs = sorted(xs)
        table.add_row(name, f"{statistics.median(xs) * 1e3:.3f} ms", f"{xs[int(0.9 * len(xs))] * 1e3:.3f} ms")
    return table


def in_process_evaluation(task, src: str, grader, pairs: int) -> float:  # type: ignore[no-untyped-def]
    """The hardened pipeline's steps without any sandbox; returns its wall time."""
    import numpy as np

    from kbench.grading import static_gate
    from kbench.core.compare import compare
    from kbench.core.loader import load_candidate
    from kbench.core.modes import HARDENED
    from kbench.core.tasks import base_namespace
    from kbench.timing.stats import pair_orders, should_stop, speedup_ci, speedup_point

    t0 = time.perf_counter()
    assert not static_gate.check(src)
    cand, _, err = load_candidate(src, base_namespace())
    ref, _, _ = load_candidate(task.ref_src, base_namespace())
    assert err is None
    rng = np.random.default_rng(1)
    alloc = lambda shape, dtype=np.float32: np.full(shape, np.nan, dtype)  # noqa: E731
    for i, dist, kind, draw in HARDENED.trial_plan():
        _, params = grader.params(task, kind, draw)
        x = grader.inputs(task, i, dist)
        expected = ref({k: v.copy() for k, v in x.items()}, params, None)
        pristine = {k: v.tobytes() for k, v in x.items()}
        out = cand({k: v.copy() for k, v in x.items()}, params, alloc)
        assert compare(out, expected).ok and all(x[k].tobytes() == b for k, b in pristine.items())
    _, params = grader.params(task, "default", -1)
    timing_x = {k: np.empty(shape, np.float32) for k, shape in task.inputs.items()}

    def fresh() -> dict:  # a fresh timing input, drawn as the engine draws it
        grader.draw_timing_input(task, timing_x)
        return timing_x
    tp = HARDENED.timing
    rt, ct = [], []

    def pair(x, ref_first):  # type: ignore[no-untyped-def]
        res = {}
        for who in (("ref", "cand") if ref_first else ("cand", "ref")):
            fn = ref if who == "ref" else cand
            xx = {k: v.copy() for k, v in x.items()}
            a = time.perf_counter()
            res[who] = (fn(xx, params, alloc), time.perf_counter() - a)
        return res

    for _ in range(tp.warmup):
        pair(fresh(), True)
    for k, first in zip(range(pairs), pair_orders(rng)):
        should_stop(rt, ct, 0.0, tp.min_runs, 10 ** 9, 10 ** 9, tp.target_rel_ci, rng)
        res = pair(fresh(), first)
        rt.append(res["ref"][1])
        ct.append(res["cand"][1])
        if rng.random() < 0.25:
            compare(res["cand"][0], res["ref"][0])
    speedup_point(rt, ct)
    speedup_ci(rt, ct, rng=rng)
    return time.perf_counter() - t0


def evaluation(n: int) -> Table:
    from kbench.grading.pipeline import Grader, evaluate
    from kbench.core.modes import HARDENED

    task = tiny_task()
    grader = Grader()
    sandboxed, local, pairs, kernel = [], [], [], []
    try:
        evaluate(task, task.ref_src, HARDENED, "trivial", grader=grader)  # starts the reference worker
        for i in range(n):
            progress(f"evaluation {i + 1}/{n}")
            r = evaluate(task, task.ref_src, HARDENED, "trivial", grader=grader)
            assert r.correct, r.msg
            sandboxed.append(r.elapsed)
            pairs.append(r.timing.n_samples)
            kernel.append(r.overhead.get("kernel_s", 0.0))
            local.append(in_process_evaluation(task, task.ref_src, grader, r.timing.n_samples))
    finally:
        grader.close()
    s, l_ = statistics.median(sandboxed), statistics.median(local)
    table = Table("hardened evaluation, GELU 64x64, reference as candidate", "median", title=f"whole evaluation (n={n})")
    table.add_row(f"through the engine (sandbox workers; {statistics.median(pairs):.0f} timed pairs median)", f"{s * 1e3:.1f} ms")
    table.add_row("the same steps in this process", f"{l_ * 1e3:.1f} ms")
    table.add_row("[bold]isolation cost per evaluation", f"[bold]{(s - l_) * 1e3:.1f} ms")
    table.add_row("timing-loop kernel time (engine's count)", f"{statistics.median(kernel) * 1e3:.2f} ms")
    return table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args()
    pin_blas(1)
    t0 = header("Isolation cost per evaluation",
                f"candidate worker start + first answer + close (median of {args.n}; target < {TARGET_S * 1e3:.0f} ms), "
                "per-call and per-evaluation cost of the sandbox for a trivial kernel.")
    console.print(worker_cycle(args.n))
    console.print(main_module_effect(args.n))
    console.print(per_call(200))
    console.print(evaluation(max(5, args.n // 2)))
    footer(t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
