"""Arm processes: would timing each arm in two processes instead of one make A/A runs agree more closely?

kbench times the reference in one fresh process (its twin) and the candidate in another, each for a whole run, so
a process that is faster or slower than another for its whole life (``process_spread.py``) moves the speedup and
not its interval: the A/A drift of the memory-bound tasks (softmax, layer norm) stays above 2 % on this machine.
This measures, outside kbench, what a grader would gain by spreading each arm over ``--per-arm`` processes: the same
reference on both arms (an A/A), each arm's calls alternated over its processes pair by pair, pairs in random order
on the timing core, each process forked afresh from this one (as the workers are from the fork server) with the
workers' allocator convention and a pool of inputs of its own (the same values in every process), cycled.

Per layout (one process per arm, as kbench does now, and ``--per-arm``), over ``--runs`` runs alternated layout by
layout: the speedup of each run (median over the arm's calls of one arm over the other), the spread of those
speedups (sample SD of their logarithms), the worst |s - 1|, and how often the run's processes of one arm disagreed
by more than the run's drift (what an interval widened by that disagreement would have covered).

    python benchmarks/arm_processes.py [--tasks L1_softmax,L1_layernorm] [--runs 12] [--pairs 40] [--per-arm 2]
"""

from __future__ import annotations

import argparse

if __name__ == "__main__":
    from _common import footer, header, progress, task_names, verdict
    from rich.table import Table

DRIFT_TARGET = 0.02
WARMUP = 3
POOL = 4


def _serve(task, pool, params, cpu: int, r: int, w: int) -> None:  # noqa: ANN001
    """In a forked child: one call per byte read (its value: the pool index), its nanoseconds written back."""
    import os
    import struct
    import time

    from kbench.sandbox.worker import same_allocator_everywhere

    same_allocator_everywhere()
    os.sched_setaffinity(0, {cpu})
    own = [{k: v.copy() for k, v in x.items()} for x in pool]  # this process's own memory, as a worker's
    f = task.ref_fn(remember=False)
    for i in range(WARMUP):
        f(own[i % len(own)], params, None)
    while True:
        b = os.read(r, 1)
        if not b:
            return
        x = own[b[0] % len(own)]
        t = time.perf_counter_ns()
        f(x, params, None)
        os.write(w, struct.pack("q", time.perf_counter_ns() - t))


def _start(task, pool, params, cpu: int) -> tuple[int, int, int]:  # noqa: ANN001
    """A fresh process serving calls: (pid, its request pipe, its answer pipe)."""
    import os

    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(req_w)
            os.close(ans_r)
            _serve(task, pool, params, cpu, req_r, ans_w)
        except BaseException:  # noqa: BLE001 - the parent sees the pipe close
            code = 1
        os._exit(code)
    os.close(req_r)
    os.close(ans_w)
    return pid, req_w, ans_r


def one_run(task, per_arm: int, pairs: int, seed: int) -> tuple[float, float]:  # noqa: ANN001
    """An A/A run with ``per_arm`` processes per arm: (the speedup, the largest disagreement between two
    processes of one arm, as a ratio of their medians less 1)."""
    import os
    import random
    import struct

    import numpy as np
    from threadpoolctl import threadpool_limits

    from kbench.grading.lanes import timing_cpu

    cpu = timing_cpu()
    cpu = cpu if cpu is not None else sorted(os.sched_getaffinity(0))[-1]
    pool = [task.make_inputs(np.random.default_rng([seed, i]), "normal") for i in range(POOL)]
    params = task.make_params(np.random.default_rng(seed), False)
    order = random.Random(seed)
    with threadpool_limits(1):
        procs = {arm: [_start(task, pool, params, cpu) for _ in range(per_arm)] for arm in ("a", "b")}
        times: dict[tuple[str, int], list[int]] = {(arm, i): [] for arm in procs for i in range(per_arm)}
        try:
            for p in range(pairs):
                arms = ["a", "b"]
                order.shuffle(arms)
                for arm in arms:
                    i = p % per_arm
                    _, req, ans = procs[arm][i]
                    os.write(req, bytes([p % POOL]))
                    data = os.read(ans, 8)
                    if len(data) != 8:
                        raise RuntimeError(f"an arm process for {task.name} failed")
                    times[(arm, i)].append(struct.unpack("q", data)[0])
        finally:  # every request pipe closed before any wait: a process forked later holds the earlier ones' too
            every = [p for arm in procs.values() for p in arm]
            for _, req, ans in every:
                os.close(req)
                os.close(ans)
            for pid, _, _ in every:
                os.waitpid(pid, 0)
    med = {arm: float(np.median([t for (a, _), ts in times.items() if a == arm for t in ts])) for arm in procs}
    disagree = max((max(ms) / min(ms) - 1 for arm in procs
                    for ms in [[float(np.median(times[(arm, i)])) for i in range(per_arm)]]), default=0.0)
    return med["a"] / med["b"], disagree


def main() -> int:
    import math
    import statistics

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="L1_softmax,L1_layernorm",
                    help="comma-separated task names (default: the two that drift most in A/A)")
    ap.add_argument("--runs", type=int, default=12, help="A/A runs per layout")
    ap.add_argument("--pairs", type=int, default=40, help="timed pairs per run")
    ap.add_argument("--per-arm", type=int, default=2, help="processes per arm in the layout compared with one")
    args = ap.parse_args()
    names = task_names(args.tasks) or ["L1_softmax", "L1_layernorm"]
    if args.runs < 2 or args.pairs < 2 * args.per_arm or args.per_arm < 2:
        ap.error("need --runs >= 2, --per-arm >= 2 and --pairs >= 2 x --per-arm")

    from kbench.core.tasks import TASK

    layouts = (1, args.per_arm)
    t0 = header("Arm processes: A/A drift with one or more processes per arm",
                f"the task's reference on both arms; {args.runs} runs per layout, alternated; {args.pairs} pairs per "
                f"run in random order on the timing core; met? says whether every run was within {DRIFT_TARGET:.0%} of "
                f"1 (kbench's A/A target)")
    table = Table("task", "processes per arm", "speedups (sorted)", "SD of log", "worst |s - 1|",
                  "runs whose arm processes disagree by more than the drift", "met?", title="per task and layout")
    for name in names:
        runs: dict[int, list[tuple[float, float]]] = {n: [] for n in layouts}
        for r in range(args.runs):
            for n in layouts if r % 2 == 0 else layouts[::-1]:
                progress(f"{name}: run {r + 1} of {args.runs}, {n} per arm")
                runs[n].append(one_run(TASK[name], n, args.pairs, seed=1000 * r))  # the same draws in both layouts
        for n in layouts:
            s = [v for v, _ in runs[n]]
            logs = [math.log(v) for v in s]
            worst = max(abs(v - 1) for v in s)
            covered = sum(1 for v, d in runs[n] if d >= abs(v - 1)) if n > 1 else None
            ok = worst <= DRIFT_TARGET
            table.add_row(name, str(n), " ".join(f"{v:.3f}" for v in sorted(s)), f"{statistics.stdev(logs):.4f}",
                          f"{worst:.1%}", "—" if covered is None else f"{covered} of {len(s)}", verdict(ok))
    return footer(t0, table, "layouts side by side on the same draws; how often the arm's processes disagreed by "
                              "more than the run drifted says what widening the interval by that disagreement covers")


if __name__ == "__main__":
    raise SystemExit(main())
