"""Helper for isolation_cost.py (run as a subprocess): median worker start + first answer + close, with a
main module that does or does not import rich at top level (as the lecture script does through its
console helper), and optionally with the main module hidden from multiprocessing while the worker
starts. Prints one JSON line.

    python benchmarks/_cycle_probe.py [--rich] [--hide-main] [--n 20]
"""

import sys

if "--rich" in sys.argv:  # what a client script's top-level imports look like (e.g. the lecture's console helper)
    import rich.console  # noqa: F401
    import rich.table  # noqa: F401


def cycle(n: int, hide_main: bool) -> list[float]:
    import time
    import types

    from kbench.sandbox.server import Worker

    out = []
    for i in range(n + 2):
        t = time.perf_counter()
        if hide_main:  # what the engine could do: the worker's target lives in kbench.sandbox.worker, not in __main__
            real = sys.modules["__main__"]
            sys.modules["__main__"] = types.ModuleType("__main__")
            try:
                w = Worker("candidate")
            finally:
                sys.modules["__main__"] = real
        else:
            w = Worker("candidate")
        from kbench.sandbox import protocol as P

        reply = w.call(P.Load("def forward(x, params, alloc):\n    return x['x']\n", "cand"), 10.0)
        w.close()
        assert isinstance(reply, P.Loaded), reply
        if i >= 2:
            out.append(time.perf_counter() - t)
    return out


if __name__ == "__main__":
    import json
    import statistics

    n = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 20
    xs = cycle(n, "--hide-main" in sys.argv)
    print(json.dumps({"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}))
