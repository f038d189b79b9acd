"""Helper for wall_times.py (run as a subprocess): time each demo of the lecture script separately.

Imports the lecture script as a module (its ``if __name__ == "__main__"`` block does not run), calls
its four demo functions in order with stdout discarded, and prints one JSON line of seconds. The
lecture script must find its console helper (PYTHONPATH=tests/seed_support).

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
        t = time.perf_counter()
        mod.demo4_tests()
        out["demo4_tests"] = time.perf_counter() - t
    print(json.dumps(out))
