"""What ``kbench eval`` prints besides its JSON (``kbench.core.strict_json``): the streamed step log, a
"still running" line, and "did you mean" for mistyped names.
"""

from __future__ import annotations

import difflib
import sys
import threading
import time
from typing import Callable, Iterable

HEARTBEAT_S = 5.0  # a silent evaluation prints "still running" this often


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'L1_gelu'?)`` when something close exists, else the list of known names."""
    known = list(known)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    if close:
        return f"did you mean {close[0]!r}? (known: {', '.join(known)})"
    return f"known: {', '.join(known)}"


def console():  # noqa: ANN201 - rich is imported lazily
    """A rich console that wraps only on a terminal: piped output keeps each line whole."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=not sys.stdout.isatty())


class StepPrinter:
    """The event sink of ``kbench eval``: one line per step, coloured by outcome, and a
    "still running" line when nothing has arrived for ``HEARTBEAT_S`` (an infinite loop, a slow kernel)."""

    STYLE = {True: "green", False: "bold red", None: "dim"}

    def __init__(self, heartbeat_s: float = HEARTBEAT_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console()
        self.heartbeat_s = heartbeat_s
        self._clock = clock
        self._t0 = self._last = clock()
        self._last_step = "start"
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="kbench-heartbeat")

    def __enter__(self) -> "StepPrinter":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(1.0)

    def __call__(self, ev) -> None:  # noqa: ANN001 - an Event
        with self._lock:
            self._last, self._last_step = self._clock(), ev.step
            self.console.print(f"[dim]{ev.elapsed:6.2f}s[/] {ev.step:<7} ", end="")
            self.console.print(ev.message, style=self.STYLE[ev.ok], markup=False)

    def _beat(self) -> None:
        while not self._done.wait(min(1.0, self.heartbeat_s)):
            with self._lock:
                now = self._clock()
                if now - self._last >= self.heartbeat_s:
                    self._last = now
                    self.console.print(f"[dim]{now - self._t0:6.2f}s still running (last step: {self._last_step}; "
                                       f"the time-out ends it)[/]")
