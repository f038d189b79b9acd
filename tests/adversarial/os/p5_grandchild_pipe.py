"""P5 grandchild holding the pipe: killing the worker no longer ends the grader's read.

The grader trusts what the worker controls (issue 8, class 3) and its deadline is "kill the worker,
then the read sees EOF". A program started with ``_posixsubprocess.fork_exec`` (no audit event, see S2)
inherits the worker's end of the pipe and sleeps; the worker then spins. At the deadline the watchdog kills
the worker, but the sleeper keeps the pipe's write end open, so ``recv_bytes`` never returns: the
grading process hangs far past its time-out (here until the sleeper exits).
"""

from numpy.lib._utils_impl import os, sys


def _spawn_holder():
    imp = getattr(sys.modules["builtins"], "__im" + "port__")
    ps = imp("_posixsubprocess")
    r, w = os.pipe()
    keep = set()
    for n in os.listdir("/proc/self/fd"):
        try:
            os.fstat(int(n))
            keep.add(int(n))
        except OSError:
            pass
    keep = tuple(sorted((keep - {0, 1, 2, r}) | {w}))
    try:
        ps.fork_exec([b"/bin/sleep", b"45"], [b"/bin/sleep"], False, keep, None, None,
                     -1, -1, -1, -1, -1, -1, r, w, True, True, -1, None, None, None, -1, None, True)
    finally:
        os.close(w)
    os.read(r, 64)
    os.close(r)


def forward(x, params, alloc):
    try:
        _spawn_holder()
    except Exception:
        pass
    while True:
        pass
