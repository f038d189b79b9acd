"""Shared by the load-time spinners (T1, T2), appended by the test: a thread started while the module loads
spins numpy work (which releases the GIL) whenever ``forward`` is not running, and calls the kernel's
``_on_idle()`` every 50 ms; ``forward`` is the reference's own arithmetic, so any speedup is stolen.
"""

from numpy.lib._utils_impl import sys

_threading = sys.modules["threading"]
_time = sys.modules["time"]
_C = math.sqrt(2.0 / math.pi)
_busy = [0]


def _burn():
    buf = np.ones(1 << 15, np.float32)
    last = 0.0
    while True:
        if _busy[0]:
            _time.sleep(0.0002)
            continue
        now = _time.monotonic()
        if now - last > 0.05:
            last = now
            try:
                _on_idle()
            except Exception:
                pass
        np.sin(buf, out=buf)


_threading.Thread(target=_burn, daemon=True).start()


def forward(x, params, alloc):
    _busy[0] += 1
    try:
        a = x["x"]
        return 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))
    finally:
        _busy[0] -= 1
