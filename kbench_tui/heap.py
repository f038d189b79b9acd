"""The explorer's heap and Python's cyclic garbage collector.

A full collection walks every tracked object. With the explorer's heap (the library, every result loaded from
the store with its trials, the widgets and their cached lines) one took 50-120 ms, and it fell in the middle of
a keypress's redraw often enough to be the largest share of a defence switch's p95. So the objects alive once the
first frame is drawn, and again after a background batch, are frozen: moved out of the collector's reach
(``gc.freeze``). They are still freed when their last reference goes; only a reference cycle among them stays
until the app unmounts (``gc.unfreeze``), a bounded amount from start-up and each batch.
"""

from __future__ import annotations

import gc


def freeze_long_lived() -> None:
    """Exempt every object alive now from the collector's full passes (see the module's docstring)."""
    gc.freeze()


def thaw() -> None:
    """Give everything frozen back to the collector (the app is leaving; tests start many in one process)."""
    gc.unfreeze()
