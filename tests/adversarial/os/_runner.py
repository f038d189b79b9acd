"""A grading process for one attack: ``python _runner.py SPEC_JSON [CANARY]`` evaluates one candidate file and prints
one line ``KBENCH_ADV_RESULT {json}`` (the result, this process's peak RSS and whether it is still alive).

The attacks in this folder try to kill, hang or bloat the process that grades them, so each one gets a
grading process of its own: the test process only reads what this one prints and how it ended.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import sys
import time

import kbench
from kbench import HARDENED, NAIVE


def _fd_targets() -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return out


def main() -> None:
    spec = json.loads(sys.argv[1])
    mode = {"naive": NAIVE, "hardened": HARDENED}[spec["mode"]]
    mode = dataclasses.replace(mode, **spec.get("replace", {}))
    if mode.timing is not None and "timing" not in spec.get("replace", {}):
        # These suites check containment, not speed: a short timing budget still runs every timed path (pairs,
        # timed outputs judged, check pairs, the clock) and leaves minutes of CI for the tests that measure.
        mode = mode.with_timing(budget_s=min(mode.timing.budget_s, 0.3))
    if not spec.get("gate", True) and mode.has("gate"):
        mode = mode.without("gate")
    if spec.get("harness"):
        from kbench.sandbox import server

        server.TEST_HARNESS = spec["harness"]
    with open(spec["file"], encoding="utf-8") as f:
        src = f.read()
    t0 = time.perf_counter()
    r = kbench.evaluate(spec["task"], src, mode, spec["name"])
    elapsed = time.perf_counter() - t0
    # Still able to grade after the attack: the reference, correctness only, on the same default grader.
    after = kbench.evaluate(spec["task"], kbench.TASK[spec["task"]].ref_src, dataclasses.replace(HARDENED, timing=None),
                            "reference")
    out = {"status": r.status, "msg": r.msg[:4000], "correct": r.correct, "speedup": r.speedup,
           "trials": [t.message[:500] for t in r.trials], "elapsed": elapsed,
           "isolation": list(getattr(r, "isolation", ()) or ()),
           # VmHWM, this process's own peak: ru_maxrss would also count the test process's, from before exec
           "maxrss_mb": int(next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")).split()[1]) / 1024,
           "after": after.status,
           # This process's own secrets, which nothing the evaluation reports may contain.
           "secrets": [bytes(multiprocessing.current_process().authkey).hex(), *sys.argv[2:]],
           # What this process holds open once both evaluations are over (a worker must not hand it files).
           "fds": _fd_targets()}
    print("KBENCH_ADV_RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
