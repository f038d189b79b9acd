"""Helper for wall_times.py (run as a subprocess): time each demo of the lecture script separately, and
add up the kernel time the lecture ran (its floor).

Imports the lecture script as a module (its ``if __name__ == "__main__"`` block does not run), calls
its four demo functions in order with stdout discarded, and prints one JSON line: seconds per demo, and
``floor``: the kernels' seconds by where they ran, and ``reference_outputs``: how many trial reference outputs
the hardened evaluations asked for and how many were computed (the rest came from the grader's cache). The
lecture script must find its console helper
(PYTHONPATH=tests/seed_support).

What counts as the lecture's kernels (instrumented here; nothing in kbench is changed):
  * hardened: every candidate and reference call a worker reported (``Called.kernel_ns``, the worker's own
    clock around the kernel): correctness trials, reference outputs (once per trial: the grader caches them),
    warm-up and timed pairs; kbench's own calibration calls are left out;
  * naive: the reference and candidate calls of each in-worker trial (``NaiveTrialDone.kernel_ns``) and the
    in-worker timing loop (its samples plus its warm-up, ``NaiveTimes.warmup_ns``);
  * demo 4 (in this process): every call of a candidate's ``forward``, and every reference output ``Task.ref_fn()``
    computed (``kbench.core.remembered``'s count: calls answered from its memory ran no kernel).
The floor adds kernel seconds up: two reference workers computing trial outputs side by side count twice.

    python benchmarks/_lecture_demos.py /work/shared/seed/01_kernelbench_harness.py
"""

import sys

if __name__ == "__main__":
    import contextlib
    import importlib.util
    import io
    import json
    import os
    import time
    from collections import defaultdict

    from _common import clocked

    from kbench.sandbox import protocol as P
    from kbench.sandbox import server

    floor: dict[str, float] = defaultdict(float)
    run, call = server.Worker.run, server.Worker.call

    def counted_run(self, req, *a, **kw):  # type: ignore[no-untyped-def]
        k = run(self, req, *a, **kw)
        if isinstance(k.reply, P.Called) and not (isinstance(req, P.Call) and req.fn == "calibrate"):
            floor[f"hardened: {self.role} worker calls"] += k.reply.kernel_ns / 1e9
        return k

    def counted_call(self, req, *a, **kw):  # type: ignore[no-untyped-def]
        reply = call(self, req, *a, **kw)
        if isinstance(reply, P.NaiveTrialDone):
            floor["naive: trials (reference + candidate, in the worker)"] += reply.kernel_ns / 1e9
        elif isinstance(reply, P.NaiveTimes):
            floor["naive: timing loops (samples + warm-up)"] += (sum(reply.ref) + sum(reply.cand)
                                                                 + reply.warmup_ns / 1e9)
        return reply

    server.Worker.run, server.Worker.call = counted_run, counted_call

    # the hardened grader's reference outputs: asked for by every evaluation, computed once per trial
    from kbench.grading import truth

    refs = {"asked": 0, "computed": 0}
    references, compute = truth.Grader.references, truth.Grader._compute

    def counted_references(self, task, plan, *a, **kw):  # type: ignore[no-untyped-def]
        refs["asked"] += len(plan)
        return references(self, task, plan, *a, **kw)

    def counted_compute(self, task, missing, *a, **kw):  # type: ignore[no-untyped-def]
        refs["computed"] += len(missing)
        return compute(self, task, missing, *a, **kw)

    truth.Grader.references, truth.Grader._compute = counted_references, counted_compute

    path = sys.argv[1]
    out: dict[str, float] = {}
    t = time.perf_counter()
    spec = importlib.util.spec_from_file_location("lecture", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    os.chdir(os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    out["import"] = time.perf_counter() - t

    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        t = time.perf_counter()
        mod.demo1_anatomy()
        out["demo1_anatomy"] = time.perf_counter() - t
        t = time.perf_counter()
        res = mod.demo2_library()
        out["demo2_library"] = time.perf_counter() - t
        t = time.perf_counter()
        mod.demo3_fast_p(res)
        out["demo3_fast_p"] = time.perf_counter() - t
        # demo 4 runs the kernels in this process: clock every candidate's forward; the references it computed are
        # counted by kbench.core.remembered below
        load = mod.load_candidate

        def load_clocked(*a, **kw):  # type: ignore[no-untyped-def]
            fwd, init, err = load(*a, **kw)
            return (clocked(fwd, floor, "demo 4: candidates' forward (in-process)") if fwd else fwd), init, err

        from kbench.core import remembered, remembered_draws

        mod.load_candidate = load_clocked
        remembered.forget()
        remembered_draws.forget()
        try:
            t = time.perf_counter()
            mod.demo4_tests()
            out["demo4_tests"] = time.perf_counter() - t
        finally:
            mod.load_candidate = load
        # the references computed (a call answered from kbench's memory ran no kernel: its hashing and copying
        # are kbench's own work, not the lecture's)
        done = remembered.stats().values()
        floor["demo 4: references' forward (in-process, computed)"] = sum(s.compute_s for s in done)
        refs["demo 4: reference calls answered from memory"] = sum(s.hits for s in done)
        refs["demo 4: reference calls computed"] = sum(s.computed for s in done)
    print(json.dumps({"demos": out, "floor": dict(floor), "reference_outputs": refs}))
