"""Batch-grading throughput: samples per minute through `kbench grade`'s engine on this machine.

The workload is the generated toy model (tests/sample_model/generate.py: 15 samples on 4 tasks, 5 of
them correct), graded into a fresh store each time, in two modes:
- hardened (timed): the real thing; every correct sample is timed in the machine's one timing lane;
- hardened, correctness only: what the correctness workers alone can do (no timing step).
Runners: the local pool with 1 and with 2 correctness processes, and a local Dask cluster of 2 workers
(one timing worker + one correctness worker). Reported: wall time, samples per minute, and how much of
the wall time was timing (the sum of the timed results' timing phases, which the lane serialises).

    python benchmarks/grade_throughput.py [--repeats 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from pathlib import Path

if __name__ == "__main__":
    from _common import console, footer, header
    from rich.table import Table


def run_once(runner_kind: str, workers: int, mode) -> dict:  # noqa: ANN001
    from kbench.batch.grade import grade, plan
    from kbench.batch.samples import discover, jobs_for
    from kbench.store import Store

    data = Path(tempfile.mkdtemp(prefix="kbench-throughput-"))
    os.environ["KBENCH_DATA_DIR"] = str(data)  # Dask workers inherit it: their lane lives here too
    from tests.sample_model.generate import toy_model

    samples, _ = discover(toy_model(), "toy")
    store = Store(data)
    if runner_kind == "pool":
        from kbench.batch.pool import LocalPool

        runner = LocalPool(workers, data)
    else:
        from kbench.batch.dask_runner import DaskRunner

        t_start = time.perf_counter()
        runner = DaskRunner("local", correctness_workers=workers)
        start_s = time.perf_counter() - t_start
    timing_s = 0.0
    statuses: dict[str, int] = {}

    def on_result(job, result, stored) -> None:  # noqa: ANN001
        nonlocal timing_s
        statuses[result.status] = statuses.get(result.status, 0) + 1
        if result.timing is not None:
            timing_s += sum(result.timing.ref_samples) + sum(result.timing.cand_samples)

    todo = plan(jobs_for(samples, [mode]), store)
    t0 = time.perf_counter()
    try:
        grade(todo.todo, store, runner, on_result)
        wall = time.perf_counter() - t0
    finally:
        runner.close()
        store.close()
    return {"n": len(todo.todo), "wall": wall, "per_min": 60 * len(todo.todo) / wall, "timing_s": timing_s,
            "statuses": statuses, "start_s": start_s if runner_kind == "dask" else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    from kbench.core.modes import HARDENED

    t0 = header("Batch-grading throughput", "samples per minute, local pool (1 and 2 correctness processes) and a "
                "2-worker local Dask cluster; the toy model (15 samples, 5 correct)")
    configs = [("local pool, 1 correctness process", "pool", 1), ("local pool, 2 correctness processes", "pool", 2),
               ("Dask LocalCluster, 2 workers (1 timing + 1 correctness)", "dask", 1)]
    modes = [("hardened, timed", HARDENED), ("hardened, correctness only", dataclasses.replace(HARDENED, timing=None))]
    table = Table("runner", "mode", "samples", "wall", "samples/min", "kernel time in timing", "verdicts")
    for mode_name, mode in modes:
        for name, kind, workers in configs:
            for _ in range(args.repeats):
                r = run_once(kind, workers, mode)
                start = f" (+{r['start_s']:.1f} s cluster start)" if r["start_s"] is not None else ""
                table.add_row(name, mode_name, str(r["n"]), f"{r['wall']:.1f} s{start}", f"{r['per_min']:.0f}",
                              f"{r['timing_s']:.1f} s", ", ".join(f"{v} {k}" for k, v in sorted(r["statuses"].items())))
    console.print(table)
    footer(t0)


if __name__ == "__main__":
    main()
