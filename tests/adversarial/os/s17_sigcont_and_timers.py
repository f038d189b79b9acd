"""S17 work on SIGCONT and timers armed to fire while stopped: run outside the calls the grader times.

Issue 16, the stop-between-calls discipline. The worker is stopped from its reply to its next request; the
clock runs from just before the grader's SIGCONT. The kernel installs a SIGCONT handler (it runs the moment
the worker is continued, before the request is even read) and arms ``setitimer(ITIMER_REAL)`` and a
``timerfd`` at 1 ms intervals so that signals and expirations pile up while it is stopped; every handler
computes a slice of the next answer it can guess (none: inputs are fresh) and, failing that, burns CPU on
the timing core. What must hold: nothing of the worker runs while it is stopped, and whatever runs on its
continuation is on its own clock: the verdict is correct and not fast.
"""

import signal

_burn = [0]


def _busy(signum, frame):
    a = np.ones(1 << 14, np.float32)
    for _ in range(20):
        a = np.sqrt(a + 1.0)
    _burn[0] += 1


_armed = [False]


def forward(x, params, alloc):
    if not _armed[0]:
        _armed[0] = True
        for sig in (signal.SIGCONT, signal.SIGALRM):
            signal.signal(sig, _busy)
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
        _raw(283, 1, 0)  # timerfd_create(CLOCK_MONOTONIC): expirations count up while stopped
    return _gelu(x["x"])
