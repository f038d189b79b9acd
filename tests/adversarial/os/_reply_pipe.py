"""Shared by the forged replies (P3, P4), appended by the test: find the worker's reply pipe.

The candidate runs inside the worker, so the pipe the worker answers on is a local (``conn``) of a frame
above ``forward``. ``sys`` comes through ``from numpy.lib._utils_impl import sys``; ``_getframe`` is not
private on a root the gate tracks.
"""

from numpy.lib._utils_impl import sys


def _conn():
    f = sys._getframe(1)
    while f is not None:
        c = f.f_locals.get("conn")
        if c is not None and hasattr(c, "send_bytes"):
            return c
        f = f.f_back
    return None
