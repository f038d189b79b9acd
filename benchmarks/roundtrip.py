"""The call round trip: what one hardened call costs beyond its kernel, by input size and for an empty call.

A candidate worker (every OS layer, stopped between calls as in grading) on the timing core, its inputs in
a sealed arena, a copy kernel whose output is as large as the input: on the worker's heap (``x['x'].copy()``)
and in the ``alloc`` pool (``np.copyto(alloc(shape), x['x'])``, NaN-refilled between calls as in grading).
For each size from 4 KiB to 16 MiB and each output, the median of ``--reps`` calls of:

  stage   the grader's one copy of a fresh input into the arena (``np.copyto``);
  call    the round trip by the grader's clock (``KernelCall.wall_ns``) minus the worker-reported kernel;
  after   from the reply to the output in the grader's buffer: stop the worker, read its CPU clock,
          ``process_vm_readv`` of the output (heap), or a copy from the grader's mapping of the pool (pool);

and the same MiB moved by a plain ``np.copyto`` in this process (the memory-speed floor). "per MiB moved"
divides (stage + call + after) by the MiB moved in and out (2 × size), target <= 0.1 ms for 1-16 MiB.
Empty calls: ``Ping`` (no kernel, no output) on a candidate worker (stop/continue included) and on a
reference worker that is never stopped (the pipe alone), and an empty ``Call`` returning a 4-byte array.
Target: <= 0.1 ms for the empty call. Each sweep runs twice, alternated: as an evaluation runs its calls (idle
cores polling, the grading thread's short slice: ``kbench.timing.wakeups``) and without either.

    python benchmarks/roundtrip.py [--reps 31]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

if __name__ == "__main__":
    from _common import footer, header, loadavg
    from rich.table import Table

SIZES_MIB = (1 / 256, 1 / 16, 0.25, 1, 4, 16)
MIB = 1 << 20


def sweep(reps: int) -> tuple[list[tuple], dict[str, float]]:
    """Rows (size, output (heap or pool), kernel, stage, call, after, copyto floor) in seconds, and the empty calls' medians."""
    import numpy as np

    from kbench.sandbox import protocol as P
    from kbench.sandbox.arena import InputArena, ScratchArena
    from kbench.sandbox.server import Worker

    cpu = max(os.sched_getaffinity(0))
    big = int(max(SIZES_MIB) * MIB)
    arena = InputArena(big, 1, 4096, 1, "roundtrip")
    pool = ScratchArena(big + MIB, "roundtrip")
    cand = Worker("candidate", cpu=cpu)
    ref = Worker("reference", cpu=cpu)
    rows, empty = [], {}
    try:
        for w in (cand, ref):
            assert isinstance(w.call(P.MapArena("inputs", arena.size), 10.0, fd=arena.fd), P.Mapped)
            if w is cand:
                mapped = w.call(P.MapArena("scratch", pool.size), 10.0, fd=pool.fd)
                assert isinstance(mapped, P.Mapped)
                w.share_pool(pool.map, mapped.addr)
            assert isinstance(w.call(P.Load("_z = np.zeros(1, np.float32)\n"
                                            "def forward(x, params, alloc):\n    return _z\n", "empty"), 10.0),
                              P.Loaded)
            assert isinstance(w.call(P.Load("def forward(x, params, alloc):\n    return x['x'].copy()\n", "cand"),
                                     10.0), P.Loaded)
            assert isinstance(w.call(P.Load("def forward(x, params, alloc):\n    out = alloc(x['x'].shape)\n"
                                            "    np.copyto(out, x['x'])\n    return out\n", "pool"), 10.0), P.Loaded)
            assert isinstance(w.call(P.SetParams("p", (), {}), 10.0), P.ParamsKept)
        one = (P.array_spec("x", arena.view("<f4", (1,), 0), 0),)
        for label, w, req, expect in (("Ping, candidate worker (stopped between calls)", cand, P.Ping(), None),
                                      ("Ping, reference worker (never stopped: the pipe alone)", ref, P.Ping(), None),
                                      ("empty Call (4-byte output), candidate worker", cand,
                                       P.Call("empty", "p", one), ("<f4", (1,)))):
            into = np.empty(1, np.float32)
            walls = []
            for i in range(4 * reps + 10):
                t = time.perf_counter_ns()
                w.run(req, 10.0, expect, into if expect else None, stop=w is cand)
                if i >= 10:
                    walls.append(time.perf_counter_ns() - t)
            empty[label] = statistics.median(walls) / 1e9
        rng = np.random.default_rng(0)
        for mib, output in ((m, o) for m in SIZES_MIB for o in ("heap", "pool")):
            n = max(1, int(mib * MIB / 4))
            src = rng.standard_normal(n, dtype=np.float32)
            view = arena.view("<f4", (n,), 0)
            spec = (P.array_spec("x", view, 0),)
            into = np.empty(n, np.float32)
            floor_dst = np.empty(n, np.float32)
            kern, stage, call, after, floor = [], [], [], [], []
            for i in range(reps + 3):
                t0 = time.perf_counter_ns()
                np.copyto(view, src)
                t1 = time.perf_counter_ns()
                k = cand.run(P.Call("cand" if output == "heap" else "pool", "p", spec), 10.0, ("<f4", (n,)), into)
                t2 = time.perf_counter_ns()
                np.copyto(floor_dst, src)
                t3 = time.perf_counter_ns()
                if output == "pool":
                    pool.refill(n * 4)  # as grading does between calls, outside every clock here
                assert k.output is not None and k.output[-1] == src[-1]
                if i >= 3:
                    kn = k.reply.kernel_ns
                    kern.append(kn)
                    stage.append(t1 - t0)
                    call.append(k.wall_ns - kn)
                    after.append(t2 - t1 - k.wall_ns)
                    floor.append(t3 - t2)
            rows.append((n * 4, output, *(statistics.median(v) / 1e9 for v in (kern, stage, call, after, floor))))
    finally:
        cand.close()
        ref.close()
        arena.close()
        pool.close()
    return rows, empty


def table(rows: list[tuple], empty: dict[str, float], title: str) -> "Table":
    t = Table("size (in = out)", "output", "kernel (copy)", "stage", "call beyond kernel", "after the reply", "total beyond",
              "per MiB moved", "np.copyto per MiB", title=title)
    for nbytes, output, kern, stage, call, after, floor in rows:
        beyond = stage + call + after
        mib = nbytes / MIB
        t.add_row(f"{nbytes / 1024:.0f} KiB" if nbytes < MIB else f"{mib:.0f} MiB", output, f"{kern * 1e3:.3f} ms",
                  f"{stage * 1e3:.3f} ms", f"{call * 1e3:.3f} ms", f"{after * 1e3:.3f} ms", f"{beyond * 1e3:.3f} ms",
                  f"{beyond * 1e3 / (2 * mib):.3f} ms" + (" (target <= 0.1)" if mib >= 1 else ""),
                  f"{floor * 1e3 / mib:.3f} ms")
    for label, s in empty.items():
        t.add_row(label, "", "", "", "", "", f"{s * 1e3:.3f} ms", "target <= 0.1 ms" if "empty" in label else "", "")
    return t


def main() -> int:
    import contextlib

    from kbench.timing import wakeups

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=31)
    ap.add_argument("--rounds", type=int, default=2, help="sweeps of each setting, alternated")
    args = ap.parse_args()
    t0 = header("Call round trip", "one hardened call beyond its kernel, 4 KiB..16 MiB, and an empty call; "
                                   "as an evaluation makes it (kbench.timing.wakeups held) and with idle cores halting")
    tables = []
    empties: dict[str, list[float]] = {"graded": [], "halting": []}
    for r in range(args.rounds):
        for setting in ("graded", "halting"):
            held = contextlib.ExitStack()
            if setting == "graded":
                held.enter_context(wakeups.held())
                held.enter_context(wakeups.prompt())
                what = wakeups.state()
            else:
                what = "no PM QoS request, the default slice"
            with held:
                rows, empty = sweep(args.reps)
            empties[setting].append(next(v for k, v in empty.items() if "empty" in k))
            tables.append(table(rows, empty, f"{setting}, round {r + 1}: {what} (load avg {loadavg()})"))
    med = {k: statistics.median(v) * 1e3 for k, v in empties.items()}
    return footer(t0, *tables, f"empty Call, median of the rounds: {med['graded']:.3f} ms as graded, "
                              f"{med['halting']:.3f} ms with idle cores halting (target <= 0.1 ms)")


if __name__ == "__main__":
    raise SystemExit(main())
