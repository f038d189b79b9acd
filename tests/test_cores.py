"""The grader's work ahead (``kbench.grading.cores.Ahead``): off the timing core, one pass at a time, in order,
and the same values a draw gives on the grading thread."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from kbench.core import distributions, parallel
from kbench.grading import cores

pytestmark = pytest.mark.skipif(not cores.available(max(os.sched_getaffinity(0))),
                                reason="one usable core: nothing can go ahead (reported by the grader's timing)")


def test_work_ahead_runs_off_the_timing_core_on_one_thread():
    timing = max(os.sched_getaffinity(0))
    ahead = cores.Ahead(timing)
    try:
        seen: list[tuple[set[int], set[str]]] = []

        def job() -> None:
            names = set(parallel.map_(lambda _: threading.current_thread().name, [0, 1]))
            seen.append((os.sched_getaffinity(0), names))

        ahead.submit(job).result()
    finally:
        ahead.close()
    cpus, names = seen[0]
    assert timing not in cpus and cpus  # never on the timing core
    assert len(names) == 1 and next(iter(names)).startswith("kbench-ahead")  # both parts on the helper itself


def test_a_draw_ahead_gives_the_values_of_a_draw_on_the_grading_thread():
    """The draw keeps its parts (and their child generators), so the values do not depend on where it ran."""
    timing = max(os.sched_getaffinity(0))
    d = distributions.get("normal")
    here = d.sample_into(np.random.default_rng([7, 1]), np.empty(1 << 20, np.float32))
    there = np.empty(1 << 20, np.float32)
    ahead = cores.Ahead(timing)
    try:
        ahead.submit(d.sample_into, np.random.default_rng([7, 1]), there).result()
    finally:
        ahead.close()
    assert np.array_equal(here, there)


def test_jobs_run_in_the_order_submitted():
    ahead = cores.Ahead(max(os.sched_getaffinity(0)))
    order: list[int] = []
    try:
        jobs = [ahead.submit(order.append, i) for i in range(50)]
        jobs[-1].result()
    finally:
        ahead.close()
    assert order == list(range(50))


def test_the_grading_thread_works_between_calls_on_the_timing_core_and_leaves_it_after_timing():
    """While a pair's workers are stopped the grading thread does its work on the idle timing core
    (``parallel.park``), never while a worker runs there; after the evaluation it has its own cores back."""
    from kbench.core import parallel
    from kbench.grading.pipeline import evaluate
    from kbench.sandbox import server

    mine = os.sched_getaffinity(0)
    during_calls: list[set[int]] = []
    between: list[set[int]] = []
    send, park = server.Worker._send_frame, parallel.park

    def spy_send(self: server.Worker, *a: object) -> None:
        during_calls.append(os.sched_getaffinity(0))
        send(self, *a)

    def spy_park(cpu: int) -> None:
        park(cpu)
        between.append(os.sched_getaffinity(0))

    server.Worker._send_frame, parallel.park = spy_send, spy_park  # type: ignore[method-assign]
    try:
        r = evaluate("L1_gelu", "def forward(x, params, alloc):\n    v = x['x']\n"
                     "    return 0.5 * v * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))\n", "hardened")
    finally:
        server.Worker._send_frame, parallel.park = send, park  # type: ignore[method-assign]
    assert r.timing is not None, r.message
    assert between, "the grading thread never moved to the timing core between calls"
    cores_between = set().union(*between)
    assert len(cores_between) == 1  # one core: the timing core
    assert during_calls and all(not (c <= cores_between) for c in during_calls)  # no request sent from there
    assert os.sched_getaffinity(0) == mine


def test_work_beside_the_trials_uses_every_core_and_is_recorded_in_the_order_submitted():
    """Nothing is timed during the correctness trials: their judgements may run side by side on every core, the
    timing core's included, and are still recorded in the trials' order, however they finish."""
    timing = max(os.sched_getaffinity(0))
    beside = cores.Ahead(timing, every_core=True)
    started = threading.Barrier(2, timeout=10)  # two jobs running at once, or the barrier breaks
    seen: list[set[int]] = []

    def job(i: int) -> int:
        seen.append(os.sched_getaffinity(0))
        if i < 2:
            started.wait()
        return i

    try:
        pending = [(beside.submit(job, i), i) for i in range(6)]
        recorded: list[int] = []
        cores.settle_in_order(pending, True, lambda result, tag: recorded.append(result))
    finally:
        beside.close()
    assert recorded == list(range(6))
    assert all(timing in cpus for cpus in seen)
