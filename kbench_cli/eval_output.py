"""What ``kbench eval`` prints besides its JSON (``kbench.core.strict_json``): the streamed step log, a
"still running" line, and "did you mean" for mistyped names.

Every event message is candidate text (an exception's words, a file name, what it printed) and goes
through ``kbench_cli.text``; the verdict line is written from the verdict event's structured fields by
``kbench.core.status``, the same line the explorer shows.
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

    return Console(highlight=False, emoji=False, soft_wrap=not sys.stdout.isatty())  # ':x:' in a name stays text


class StepPrinter:
    """The event sink of ``kbench eval``: one line per step, coloured by outcome, and a
    "still running" line when nothing has arrived for ``HEARTBEAT_S`` (an infinite loop, a slow kernel)."""

    STYLE = {True: "green", False: "bold red", None: "dim"}
    #: Verdict colours by status (the explorer's theme variables, in plain terminal colours).
    VERDICT_STYLE = {"correct": "bold green", "wrong": "bold red", "rejected": "bold yellow",
                     "compile_error": "bold magenta", "runtime_error": "bold magenta"}

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
        from kbench.core.status import event_sentence
        from kbench_cli.text import block, line

        step = line(ev.step, 12)
        style = self.STYLE.get(ev.ok, "")
        if ev.step == "verdict":
            lines = [event_sentence(ev)]
            style = self.VERDICT_STYLE.get(ev.status or "", style)
        elif ev.step == "stdout":  # what the candidate printed: several lines, each kept behind a bar
            lines = block(ev.message, " " * 16 + "│ ")
        else:
            lines = [ev.message]
        with self._lock:
            self._last, self._last_step = self._clock(), step
            self.console.print(f"[dim]{ev.elapsed:6.2f}s[/] ", end="")
            self.console.print(f"{step:<7} ", end="", markup=False)
            self.console.print(line(lines[0]), style=style, markup=False)
            for rest in lines[1:]:
                self.console.print(rest, style=style, markup=False)

    def failed(self, elapsed: float, why: str) -> None:
        """The last line when the grader itself failed (no verdict event came): one line, no traceback."""
        from kbench_cli.text import line

        with self._lock:
            self.console.print(f"[dim]{elapsed:6.2f}s[/] {'verdict':<7} ", end="")
            self.console.print(f"no verdict: the grader failed ({line(why, 300)})", style="bold red", markup=False)

    def _beat(self) -> None:
        from rich.markup import escape

        while not self._done.wait(min(1.0, self.heartbeat_s)):
            with self._lock:
                now = self._clock()
                if now - self._last >= self.heartbeat_s:
                    self._last = now
                    self.console.print(f"[dim]{now - self._t0:6.2f}s still running (last step: {escape(self._last_step)}; "
                                       f"the time-out ends it)[/]")
