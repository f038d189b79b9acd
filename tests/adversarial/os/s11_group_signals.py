"""S11 group and broadcast signals: reach the warden, the fork server or the grading process without a pid.

Issue 16, class 3 (the pid space) and the warden. The worker sees only itself (pid 1 of its own pid
namespace), but signals need no pid: ``kill(0, sig)`` reaches its whole process group (inherited from the
fork server, which inherited it from the grading process), ``kill(-1, sig)`` every process it may signal,
``kill(-pgrp, sig)`` the group by number, ``rt_sigqueueinfo``/``tgkill`` the same targets, ``pidfd_open`` on
the parent. Each is tried with signal 0 (a permission probe, harmless even when it succeeds); the kernel
reports ``ESCAPED`` for every one the kernel answered 0. What must hold: a worker can signal only itself.
"""

import os


def forward(x, params, alloc):
    pgrp = os.getpgrp()
    si = np.zeros(16, np.int64)  # a siginfo_t for rt_sigqueueinfo
    si.view(np.int32)[0] = 0
    tries = {"kill(0)": (62, 0, 0), "kill(-1)": (62, -1, 0), "kill(-pgrp)": (62, -pgrp, 0),
             "tgkill(0)": (234, 0, 0, 0),
             "rt_sigqueueinfo(0)": (129, 0, 0, si.ctypes.data), "pidfd_open(1)": (434, 1, 0)}
    reached = []
    for name, call in tries.items():
        rc, err = _raw(*call)
        if rc >= 0:
            reached.append(name)
    for name, fn in (("os.killpg", lambda: os.killpg(pgrp, 0)), ("os.kill(-1)", lambda: os.kill(-1, 0))):
        try:
            fn()
            reached.append(name)
        except OSError:
            pass
    if reached:
        raise RuntimeError("ESCAPED: could signal " + ", ".join(reached))
    return _gelu(x["x"])
