"""Harness overhead: wall time of a full-library hardened evaluation / the kernel time it executed.

Target: <= 1.25x (issue 18). The kernel time is counted three ways:

  A. wall / sum(result.overhead["kernel_s"])  - the engine's own count: every call's time by the grader's
     clock (correctness trials and timed pairs, check pairs included; cached trial references not at all)
  B. wall / an estimate from medians           - timed pairs + correctness trials + trial references + warm-up
  C. wall / every worker-reported kernel        - measured: this script wraps ``Worker.run`` (in this process
     only) and adds up the kernel time each worker reported (``kernel_ns``) for every call it made, the
     trial references and calibration calls included

It then splits the wall time into exclusive parts by wrapping engine functions in this process (nothing in
kbench is edited): kernels, a call's round trip beyond its kernel (pipe, stop/continue, the worker's
executor), reading outputs from the workers' memory, worker start and close, other requests (load,
params, gate, mapping), input draws (trials and timing), staging, judging, the trial facts, timing
statistics, and the rest. Finally it times a call round trip for several input sizes: what each MiB moved
costs beyond the kernel (target <= 0.1 ms per MiB), and an empty call (target <= 0.1 ms).

    python benchmarks/overhead.py
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import defaultdict
from typing import Any

# Heavy imports only in the parent: sandbox workers start through multiprocessing's fork server, which
# re-imports the parent's main module (as __mp_main__) in every worker; importing rich there would add
# ~20 ms to every worker start and distort what is measured.
if __name__ == "__main__":
    from _common import console, footer, header, progress, task_names, verdict
    from rich.table import Table


TARGET = 1.25
#: Work done beside the grading thread, on the helper's threads (``kbench.grading.cores.Ahead``: ahead while a pair's
#: calls run, judgements beside the trials) and the pool's (a trial's facts while the candidate's trials run, the
#: second half of a split pass while the grading thread does the first). Not the reference workers' threads: the
#: grading thread waits for the trials' references.
BESIDE_THREADS = ("kbench-ahead", "kbench-pass")
BESIDE = "beside the grading thread (helper or pool threads): "


class Probe:
    """Exclusive time accounting by wrapping functions; ``undo`` restores them."""

    def __init__(self) -> None:
        self.t: dict[str, float] = defaultdict(float)
        self.n: dict[str, int] = defaultdict(int)
        self._undo: list[tuple[Any, str, Any]] = []
        self._seen_workers: set[int] = set()
        #: seconds of calls to workers pinned to the timing core (the candidate's and the twins', stopped between
        #: calls), kernel and output read; the trials' reference workers run on any core and are not counted
        self.pinned = 0.0
        self.skipped: list[str] = []

    def add(self, cat: str, dt: float) -> None:
        if threading.current_thread().name.startswith(BESIDE_THREADS):
            cat = BESIDE + cat  # beside the grading thread: not part of the wall's exclusive split
        self.t[cat] += dt
        self.n[cat] += 1

    def wrap(self, owner: Any, name: str, cat: str) -> None:
        orig = getattr(owner, name, None)
        if orig is None:  # the engine is being changed; say what could not be instrumented
            self.skipped.append(f"{getattr(owner, '__name__', owner)}.{name}")
            return

        def timed(*a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return orig(*a, **kw)
            finally:
                self.add(cat, time.perf_counter() - t)

        setattr(owner, name, timed)
        self._undo.append((owner, name, orig))

    def wrap_worker(self, worker_cls: Any) -> None:
        """Worker.run: the kernel (as the worker reported it), the round trip beyond it, and the output read
        after it; Worker.call: other requests, by type (the first request of a new worker waits for its start)."""
        from kbench.sandbox import protocol as P

        run, call, probe = worker_cls.run, worker_cls.call, self

        def timed_run(self: Any, req: Any, *a: Any, **kw: Any) -> Any:
            t = time.perf_counter_ns()
            k = run(self, req, *a, **kw)
            total = (time.perf_counter_ns() - t) / 1e9
            kern = (k.reply.kernel_ns if isinstance(k.reply, P.Called) else 0) / 1e9
            probe.add(f"kernel ({self.role} worker)", kern)
            probe.add("call round trip beyond the kernel (pipe, stop/continue, executor)", k.wall_ns / 1e9 - kern)
            probe.add("output read from the worker's memory, after the stop", total - k.wall_ns / 1e9)
            if self.stops:
                probe.pinned += kern + total - k.wall_ns / 1e9
            return k

        def timed_call(self: Any, req: Any, *a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            first = id(self) not in probe._seen_workers
            probe._seen_workers.add(id(self))
            try:
                return call(self, req, *a, **kw)
            finally:
                label = "first request of a new worker (waits for its start-up)" if first else \
                    f"'{type(req).__name__}' requests"
                probe.add(label, time.perf_counter() - t)

        worker_cls.run, worker_cls.call = timed_run, timed_call
        self._undo += [(worker_cls, "run", run), (worker_cls, "call", call)]

    def undo(self) -> None:
        for owner, name, orig in reversed(self._undo):
            setattr(owner, name, orig)
        self._undo.clear()

    @property
    def kernel(self) -> float:
        return sum(v for k, v in self.t.items() if k.startswith("kernel"))

    @property
    def beside(self) -> float:
        """Seconds of work done beside the grading thread so far (the helper's and the pool's threads)."""
        return sum(v for k, v in self.t.items() if k.startswith(BESIDE) and not k.startswith(BESIDE + "waits"))

    @property
    def on_timing_core(self) -> float:
        """Seconds of work on the timing core so far: the pinned workers' kernels and output reads, and the work
        between pairs."""
        return self.pinned + sum(v for k, v in self.t.items() if k.startswith("between pairs"))


def install(probe: Probe) -> None:
    import concurrent.futures

    from kbench.core import judging
    from kbench.grading import pipeline, truth
    from kbench.sandbox import server as sandbox
    from kbench.timing import interleaved

    probe.wrap_worker(sandbox.Worker)
    probe.wrap(sandbox.Worker, "__init__", "worker start (Worker(): fork from the fork server)")
    probe.wrap(sandbox.Worker, "close", "worker close")
    probe.wrap(judging, "judge", "judging outputs (judging.judge)")
    probe.wrap(judging, "trial_facts", "trial facts (predictors, row tolerances: once per trial)")
    for fn in ("stop_reason", "honest_ci", "speedup_point"):
        probe.wrap(interleaved, fn, "timing statistics (bootstrap CI, stopping rule)")
    probe.wrap(truth.Grader, "inputs", "input draws (correctness trials)")
    probe.wrap(truth.Grader, "draw_timing_input", "input draws (timing: fresh draws into the slot)")
    probe.wrap(truth.Staging, "stage", "input staging (one copy into the sealed arena)")
    probe.wrap(truth.Grader, "staging", "the task's arena and its parameter sets")
    probe.wrap(pipeline.HardenedRun, "between_pairs", "between pairs, on the timing core (alloc pool refilled, the "
               "next input copied into the slot or read once)")
    probe.wrap(truth.Grader, "params", "parameter generation")
    probe.wrap(concurrent.futures.Future, "result", "waits for work done beside (Future.result: draws, judgements)")


def size_sweep(sizes_mib: list[float], reps: int, when: str = "") -> Table:
    """A call round trip, staging and output read included, vs its kernel time, for a copy kernel."""
    import numpy as np

    from kbench.sandbox import protocol as P
    from kbench.sandbox.arena import InputArena
    from kbench.sandbox.server import Worker

    table = Table("input = output size", "kernel (copy) median", "stage + call + read median", "beyond the kernel",
                  "per MiB moved (in + out)", title=f"call round trip vs the worker's kernel time{when}")
    big = max(sizes_mib)
    arena = InputArena(int(big * (1 << 20)) + 4096, 1, 4096, 1, "sweep")
    w = Worker("candidate", cpu=max(__import__("os").sched_getaffinity(0)))
    try:
        w.call(P.MapArena("inputs", arena.size), 10.0, fd=arena.fd)
        assert isinstance(w.call(P.Load("def forward(x, params, alloc):\n    return x['x'].copy()\n", "cand"), 10.0),
                          P.Loaded)
        w.call(P.SetParams("p", (), {}), 10.0)
        rng = np.random.default_rng(0)
        pings = [w.run(P.Ping(), 10.0, None).wall_ns / 1e9 for _ in range(reps * 4)]
        for mib in sizes_mib:
            n = max(1, int(mib * (1 << 20) / 4))
            src = rng.standard_normal(n, dtype=np.float32)
            view = arena.view("<f4", (n,), 0)
            spec = (P.array_spec("x", view, 0),)
            into = np.empty(n, np.float32)
            ks, totals = [], []
            for i in range(reps + 2):
                t = time.perf_counter()
                np.copyto(view, src)
                k = w.run(P.Call("cand", "p", spec), 10.0, ("<f4", (n,)), into)
                wall = time.perf_counter() - t
                if i >= 2:  # warm-up
                    ks.append(k.reply.kernel_ns / 1e9)
                    totals.append(wall)
            kern, tot = statistics.median(ks), statistics.median(totals)
            moved = 2 * n * 4 / (1 << 20)
            table.add_row(f"{n * 4 / (1 << 20):.3g} MiB", f"{kern * 1e3:.3f} ms", f"{tot * 1e3:.3f} ms",
                          f"{(tot - kern) * 1e3:.3f} ms", f"{(tot - kern) * 1e3 / moved:.3f} ms" if mib >= 1 else "—")
        table.add_row("empty call (Ping)", "", f"{statistics.median(pings) * 1e3:.3f} ms", "", "target <= 0.1 ms")
    finally:
        w.close()
        arena.close()
    return table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep-reps", type=int, default=15)
    ap.add_argument("--tasks", default="", help="comma-separated task names (default: the whole library)")
    ap.add_argument("--no-sweep", action="store_true", help="skip the round-trip sweeps (benchmarks/roundtrip.py "
                                                           "prints them with a breakdown)")
    args = ap.parse_args()

    from kbench.grading.pipeline import Grader, evaluate
    from kbench.core.library import LIBRARY
    from kbench.core.modes import HARDENED
    from kbench.core.tasks import TASK

    names = task_names(args.tasks)
    wanted = set(names) if names else None
    library = [c for c in LIBRARY if wanted is None or c.task in wanted]
    t0 = header(f"Harness overhead ({'tasks ' + args.tasks if wanted else 'full library'}, hardened)",
                f"wall time of hardened evaluations of {len(library)} library candidates (fresh grader) / kernel "
                f"time executed; target <= {TARGET}x.")
    sizes = [1 / 256, 0.25, 1, 4, 16]
    if not args.no_sweep:
        progress("round-trip sweep in a fresh process")
        sweep_fresh = size_sweep(sizes, args.sweep_reps, ", fresh process")
    probe = Probe()
    install(probe)
    results = []
    try:
        w0 = time.perf_counter()
        grader = Grader()
        kernels_of: list[float] = []  # C per evaluation: every worker-reported kernel during it
        busy_of: list[tuple[float, float]] = []  # per evaluation: (work on the timing core, work beside) seconds
        for i, c in enumerate(library, 1):
            progress(f"{i}/{len(library)} {c.key}")
            k0, on0, b0 = probe.kernel, probe.on_timing_core, probe.beside
            results.append((c, evaluate(TASK[c.task], c.src, HARDENED, c.name, grader=grader)))
            kernels_of.append(probe.kernel - k0)
            busy_of.append((probe.on_timing_core - on0, probe.beside - b0))
        grader.close()
        wall = time.perf_counter() - w0
    finally:
        probe.undo()

    # -- A: the engine's own count (what it includes has changed over time: see the label)
    kernel_reported = sum(r.overhead.get("kernel_s", 0.0) for _, r in results)
    # -- B: estimate from the medians: every kernel run = its median time x how often it ran
    t_ref_task: dict[str, list[float]] = {}
    for c, r in results:
        if r.timing is not None:
            t_ref_task.setdefault(c.task, []).append(r.t_ref)
    t_ref_med = {k: statistics.median(v) for k, v in t_ref_task.items()}
    est_pairs = est_cand_trials = est_warmup = 0.0
    for c, r in results:
        tr = t_ref_med.get(c.task, 0.0)
        tc = r.t_cand if r.timing is not None else tr
        est_cand_trials += len(r.trials) * tc
        if r.timing is not None:
            est_pairs += r.timing.n_samples * (r.t_ref + r.t_cand)
            est_warmup += HARDENED.timing.warmup * (r.t_ref + r.t_cand)
    est_ref_trials = sum(HARDENED.n_trials * t for t in t_ref_med.values())
    kernel_est = est_pairs + est_cand_trials + est_ref_trials + est_warmup
    # -- C: measured
    kernel_all = probe.kernel

    statuses: dict[str, int] = defaultdict(int)
    for _, r in results:
        statuses[r.status] += 1
    console.print(f"{len(results)} evaluations in {wall:.1f} s: " + ", ".join(f"{v} {k}" for k, v in statuses.items()))
    ratios = Table("kernel time counted as", "kernel s", "wall / kernel", "target", "met?", title="overhead ratio")
    for label, k in (("A. sum of result.overhead['kernel_s'] (engine's own count)", kernel_reported),
                     ("B. estimate: median t_ref / t_cand x how often each ran", kernel_est),
                     ("C. every worker-reported kernel (instrumented)", kernel_all)):
        ratios.add_row(label, f"{k:.2f}", f"{wall / k:.2f}x" if k else "—", f"<= {TARGET}x", verdict(k > 0 and wall / k <= TARGET))
    console.print(ratios)
    est = Table("part of B's estimate", "seconds", title="estimate B, detail")
    est.add_row("timed pairs (n_samples x (t_ref + t_cand))", f"{est_pairs:.2f}")
    est.add_row("candidate correctness trials (trials x t_cand, t_ref if untimed)", f"{est_cand_trials:.2f}")
    est.add_row("reference outputs for the trials (5 x t_ref per task, cached)", f"{est_ref_trials:.2f}")
    est.add_row("warm-up pairs (2 x (t_ref + t_cand))", f"{est_warmup:.2f}")
    console.print(est)

    parts = Table("where the wall time went (exclusive)", "seconds", "share of wall", "count", "per event",
                  title="breakdown (instrumented in this process)")
    accounted = 0.0
    for cat, v in sorted(probe.t.items(), key=lambda kv: (kv[0].startswith(BESIDE), -kv[1])):
        beside = cat.startswith(BESIDE)
        accounted += 0.0 if beside else v
        parts.add_row(cat, f"{v:.3f}", "(beside)" if beside else f"{v / wall:.1%}", str(probe.n[cat]),
                      f"{v / max(probe.n[cat], 1) * 1e3:.3f} ms")
    parts.add_row("rest (evaluator Python, reference cache, emit, GC, waits for the work ahead, ...)", f"{wall - accounted:.3f}",
                  f"{(wall - accounted) / wall:.1%}", "", "")
    parts.add_row("[bold]wall", f"{wall:.3f}", "100%", "", "")
    console.print(parts)
    if probe.skipped:
        console.print(f"[yellow]not instrumented (not found in this engine version): {', '.join(probe.skipped)}[/]")

    per = Table("candidate", "status", "wall s", "timing-loop kernel s", "every kernel s", "wall / every kernel",
                "timing core busy", "work beside", "pairs", "t_ref", "t_cand", title="per evaluation")
    for (c, r), k, (on_core, beside) in zip(results, kernels_of, busy_of):
        w = r.overhead.get('wall_s', r.elapsed)
        per.add_row(c.key, r.status, f"{w:.2f}", f"{r.overhead.get('kernel_s', 0):.2f}", f"{k:.2f}",
                    f"{w / k:.2f}x" if k > 0 else "", f"{on_core / w:.0%}", f"{beside / w:.0%}",
                    str(r.timing.n_samples) if r.timing else "", f"{r.t_ref * 1e3:.2f} ms" if r.timing else "",
                    f"{r.t_cand * 1e3:.2f} ms" if r.timing else "")
    console.print(per)
    console.print("timing core busy: the kernels and output reads of the workers pinned to it (the candidate's and "
                  "the reference's twin; not the trials' reference workers) and the work between pairs, as a share "
                  "of the evaluation's "
                  "wall; work beside: draws, judgements and trial facts on the helper's and the pool's threads (one "
                  "core while timing, every core during the trials). Where both are near 100 %, both cores are full: "
                  "the wall shrinks only with less work, not with other scheduling.")

    if not args.no_sweep:
        console.print(sweep_fresh)
        console.print(size_sweep(sizes, args.sweep_reps, ", after the library run"))
    footer(t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
