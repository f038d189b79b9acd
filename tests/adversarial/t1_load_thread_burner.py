"""T1 load-time thread burner: spin on the timing reference's core except during our own calls.

Timing (issue 8, class 5). The timing reference runs in a twin worker pinned to the candidate's core.
The hygiene check counts threads started *during* a call; a thread started while the module loads is
never counted. It spins numpy work (which releases the GIL) whenever ``forward`` is not running, so
each reference call shares its core with the spinner while the candidate's calls have it to themselves:
the honest kernel below (the reference's own arithmetic) looks about twice as fast.
"""

from numpy.lib._utils_impl import sys

_threading = sys.modules["threading"]
_time = sys.modules["time"]
_C = math.sqrt(2.0 / math.pi)
_busy = [0]


def _burn():
    buf = np.ones(1 << 15, np.float32)
    while True:
        if _busy[0]:
            _time.sleep(0.0002)
        else:
            np.sin(buf, out=buf)


_threading.Thread(target=_burn, daemon=True).start()


def forward(x, params, alloc):
    _busy[0] += 1
    try:
        a = x["x"]
        return 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))
    finally:
        _busy[0] -= 1
