"""Process spread: how much the same reference runs faster or slower in one fresh process than in another.

kbench times the candidate in one worker and the reference in another, each for a whole run, so whatever makes one
fresh process faster than another for its whole life (where its memory landed, in what state the machine handed it
over) lands in the speedup and not in its interval. This measures it outside kbench: ``--processes`` processes forked
one after another from this one (as the workers are forked from the fork server), each on the timing core with the
workers' allocator convention, each timing the task's reference ``--calls`` times on one input after 10 warm-up
calls; the median of each process, their spread (max / min - 1) and the largest gap between two neighbouring
medians (two modes show as one large gap). On 2026-12-04 at 16:30 twelve processes read softmax at 5.16 or 5.75 ms
(medians), never between, and A/A runs of that hour drifted 6-12 %; twenty minutes later every process read
5.26-5.40 ms. Target: spread <= 2 % (what an A/A drift within 2 % needs).

    python benchmarks/process_spread.py [--tasks L1_softmax,L1_layernorm] [--processes 12] [--calls 30]
"""

from __future__ import annotations

import argparse

if __name__ == "__main__":
    from _common import footer, header, progress, task_names, verdict
    from rich.table import Table

SPREAD_TARGET = 0.02
WARMUP = 10


def _one_process(task, x, params, calls: int, cpu: int) -> float:  # noqa: ANN001
    """In a forked child: the median seconds of ``calls`` reference calls (never returns in the child)."""
    import os
    import time

    import numpy as np

    from kbench.sandbox.worker import same_allocator_everywhere

    same_allocator_everywhere()
    os.sched_setaffinity(0, {cpu})
    f = task.ref_fn(remember=False)
    for _ in range(WARMUP):
        f(x, params, None)
    ts = []
    for _ in range(calls):
        t = time.perf_counter_ns()
        f(x, params, None)
        ts.append(time.perf_counter_ns() - t)
    return float(np.median(ts)) / 1e9


def medians(task, processes: int, calls: int) -> list[float]:  # noqa: ANN001
    """Each fresh process's median, forked one after another."""
    import os
    import struct

    import numpy as np
    from threadpoolctl import threadpool_limits

    from kbench.grading.lanes import timing_cpu

    cpu = timing_cpu()
    cpu = cpu if cpu is not None else sorted(os.sched_getaffinity(0))[-1]
    rng = np.random.default_rng(0)
    x = task.make_inputs(rng, "normal")
    params = task.make_params(rng, False)
    out = []
    with threadpool_limits(1):
        for _ in range(processes):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: measure, write the figure, leave without running the parent's exit handlers
                code = 0
                try:
                    os.close(r)
                    os.write(w, struct.pack("d", _one_process(task, x, params, calls, cpu)))
                except BaseException:  # noqa: BLE001 - the parent reports a child that said nothing
                    code = 1
                os._exit(code)
            os.close(w)
            data = os.read(r, 8)
            os.close(r)
            os.waitpid(pid, 0)
            if len(data) == 8:
                out.append(struct.unpack("d", data)[0])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="L1_softmax,L1_layernorm,L3_attention",
                    help="comma-separated task names (default: the three that drift most in A/A)")
    ap.add_argument("--processes", type=int, default=12)
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    names = task_names(args.tasks)
    if args.processes < 2 or args.calls < 1:
        ap.error("need --processes >= 2 and --calls >= 1")

    from kbench.core.tasks import TASK

    t0 = header("Process spread: one reference in fresh processes",
                f"{args.processes} processes per task, forked one after another, {args.calls} calls each after "
                f"{WARMUP} warm-up calls; target: the medians within {SPREAD_TARGET:.0%} of each other")
    table = Table("task", "medians (ms, sorted)", "spread", "largest gap", "met?", title="per task")
    met_all = True
    for name in names:
        progress(name)
        ms = sorted(m * 1e3 for m in medians(TASK[name], args.processes, args.calls))
        if len(ms) < 2:
            table.add_row(name, "processes failed", "", "", verdict(False))
            met_all = False
            continue
        spread = ms[-1] / ms[0] - 1
        gap = max(b / a - 1 for a, b in zip(ms, ms[1:]))
        ok = spread <= SPREAD_TARGET
        met_all &= ok
        table.add_row(name, " ".join(f"{m:.2f}" for m in ms), f"{spread:.1%}", f"{gap:.1%}", verdict(ok))
    return footer(t0, table, f"every task's processes within {SPREAD_TARGET:.0%}: {verdict(met_all)}")


if __name__ == "__main__":
    raise SystemExit(main())
