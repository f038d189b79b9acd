"""Sources built to cost the grading process time or memory end in one line, within the evaluation's deadline,
with the grading process alive: nothing candidate-controlled is parsed or checked in the grading process."""

from __future__ import annotations

import dataclasses
import resource
import time

import pytest

import kbench
from kbench import HARDENED, Grader
from kbench.core.library import MAX_SOURCE_BYTES

GELU = "def forward(x, params, alloc):\n    x = x['x']\n    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))\n"


def _sources() -> dict[str, str]:
    deep = "y = " + "-" * 7000 + "1\n" + GELU
    aliases = "a0 = np\n" + "".join(f"a{i + 1} = a{i}\n" for i in range(10_000)) + "a10000.pi = 3\n" + GELU
    parts, size = [], len(GELU)
    while size < MAX_SOURCE_BYTES - 100:
        parts.append(f"def helper_{len(parts)}(v):\n    return v * {len(parts)} + 1\n")
        size += len(parts[-1])
    megabyte = "".join(parts[:-1]) + GELU
    over = "# " + "x" * MAX_SOURCE_BYTES + "\n" + GELU
    return {"7000-deep expression": deep, "10 000 aliases": aliases, "1 MB of ordinary code": megabyte,
            "over the size limit": over}


@pytest.mark.parametrize("name", list(_sources()))
def test_a_hostile_source_ends_in_one_line_within_its_deadline(name):
    src = _sources()[name]
    mode = dataclasses.replace(HARDENED, timeout_s=5.0)
    g = Grader()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        t0 = time.perf_counter()
        r = kbench.evaluate("L1_gelu", src, mode, name, grader=g)
        elapsed = time.perf_counter() - t0
    finally:
        g.close()
    assert "\n" not in r.msg and len(r.msg) < 400, r.msg
    assert elapsed < mode.timeout_s + 1.0, f"{name}: {elapsed:.1f} s"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    assert grown_mb < 300, f"{name}: the grading process grew by {grown_mb:.0f} MB"
    if name == "7000-deep expression":
        assert r.status == "compile_error" and "nested" in r.msg, r.msg
    elif name == "over the size limit":
        assert r.status == "compile_error" and "limit" in r.msg, r.msg
    else:  # the gate finds the module patch through the aliases; the 1 MB file is honest code
        assert r.status in (("rejected",) if name == "10 000 aliases" else ("correct", "runtime_error")), (r.status, r.msg)
