"""Grading on a Dask cluster: correctness on the correctness workers, timing on one timing worker per machine.

Routing is explicit, because Dask resources are advisory for tasks that ask for none: every task asks
for one. Workers advertise ``correctness=1`` or ``timing=1``:

- a sample is first graded without its timing step on a ``correctness`` worker; a verdict other than
  "correct" is final (the same pipeline, the same checks, so the same verdict the local pool gives);
- a sample found correct whose mode times it is then graded in full on the machine's ``timing`` worker,
  and that result is the one stored. Its timing step also takes the machine's ``TimingLane``, so
  correctness workers on the same machine pause while it times.

``local`` starts the cluster here (distributed's ``SpecCluster``, ``LocalCluster``'s base, since
``LocalCluster`` gives every worker the same resources) with its scheduler and workers on loopback
only: a Dask scheduler has no authentication by default. Workers must not be daemonic, or the
sandbox's fork server cannot start (``distributed.worker.daemon: False``). Results stream back with
``as_completed``; a worker that dies loses its tasks in flight, which the scheduler reruns elsewhere
(a sample that kills three workers is reported as not graded, and not stored).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
from typing import Any, Iterator

import dask
import distributed
from distributed import Client, Nanny, Scheduler, SpecCluster, as_completed

from kbench.batch.pool import died
from kbench.core.status import failure_text
from kbench.batch.samples import Job
from kbench.core.results import Result

# Set before any worker process starts: the nanny reads it when it spawns its worker.
os.environ.setdefault("DASK_DISTRIBUTED__WORKER__DAEMON", "False")
dask.config.set({"distributed.worker.daemon": False})


class DaskUnavailable(Exception):
    """No usable cluster (unreachable scheduler, or no worker of a needed kind); the message is one line."""


def _grade_on_worker(job: Job, correctness_only: bool) -> Result:
    """Runs on a Dask worker: one grading process per worker, its lane in this machine's data directory."""
    from kbench.batch import pool
    from kbench.store import default_path

    if pool._lane is None:
        pool.init_grading_process(str(default_path().parent))
    if correctness_only:
        job = Job(job.sample, dataclasses.replace(job.mode, timing=None, time_wrong=False))
    return pool.grade_here(job)


def local_cluster(correctness_workers: int) -> SpecCluster:
    """A cluster on this machine, loopback only: one timing worker and ``correctness_workers`` others."""
    def worker(resources: dict[str, int]) -> dict[str, Any]:
        return {"cls": Nanny, "options": {"nthreads": 1, "resources": resources, "host": "127.0.0.1",
                                          "memory_limit": 0, "dashboard": False}}

    # the workers' start-up and shutdown chatter (and cancellation warnings on Ctrl-C) would drown the progress bar
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    workers = {"timing": worker({"timing": 1})}
    workers.update({f"correctness-{i}": worker({"correctness": 1}) for i in range(correctness_workers)})
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard": False, "dashboard_address": None}}
    # Ctrl-C is ours to handle (we close the cluster); worker processes started while SIGINT is ignored
    # inherit that, instead of each dying of it with a traceback
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40, name="kbench")
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)


class DaskRunner:
    """Grade jobs on the cluster at ``scheduler`` (``tcp://HOST:8786``) or on a local one (``"local"``)."""

    def __init__(self, scheduler: str, correctness_workers: int = 1) -> None:
        self.cluster: SpecCluster | None = None
        try:
            if scheduler == "local":
                self.cluster = local_cluster(max(1, correctness_workers))
                self.client = Client(self.cluster)
            else:
                self.client = Client(scheduler, timeout="10s")
        except Exception as e:  # noqa: BLE001 - OSError, TimeoutError, ValueError for a malformed address...
            self.close()
            raise DaskUnavailable(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
        try:
            self.client.wait_for_workers(1, timeout=30)
        except (TimeoutError, distributed.TimeoutError):
            self.close()
            raise DaskUnavailable(f"the Dask scheduler at {scheduler} has no workers") from None
        kinds = self.resources()
        missing = [k for k in ("correctness", "timing") if not kinds.get(k)]
        if missing:
            self.close()
            raise DaskUnavailable(
                f"no Dask worker offers {' or '.join(missing)}: start them with `dask worker {scheduler} "
                "--nthreads 1 --resources timing=1` (one per machine) and `--resources correctness=1` (the others)")

    def resources(self) -> dict[str, int]:
        """How many workers offer each resource."""
        out: dict[str, int] = {}
        for w in self.client.scheduler_info()["workers"].values():
            for k in (w.get("resources") or {}):
                out[k] = out.get(k, 0) + 1
        return out

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, Result]]:
        """Grade ``jobs``; yield each (job, final result) as it arrives."""
        stream = as_completed()
        meta: dict[str, tuple[Job, bool]] = {}

        def submit(job: Job, correctness_only: bool) -> None:
            fut = self.client.submit(_grade_on_worker, job, correctness_only, pure=False,
                                     resources={"correctness" if correctness_only else "timing": 1})
            meta[fut.key] = (job, correctness_only)
            stream.add(fut)

        for job in jobs:
            submit(job, job.mode.timing is not None)  # untimed modes are graded in full by correctness workers
        for fut in stream:
            job, first_pass = meta.pop(fut.key)
            try:
                result = fut.result()
            except Exception as e:  # noqa: BLE001 - KilledWorker, a grading bug: recorded, the run goes on
                yield job, died(job, f"grading failed on the cluster: {failure_text(e)}")
                continue
            finally:
                fut.release()
            if first_pass and result.correct:
                submit(job, False)  # correct without timing: now the full evaluation in the timing lane
            else:
                yield job, result

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None
