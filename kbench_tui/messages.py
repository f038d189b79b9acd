"""Messages from the evaluation thread to the UI (posted, never widget calls from the thread)."""

from __future__ import annotations

import threading

from textual.message import Message

from kbench.core.results import Event, Result


class EventBuffer:
    """Collects one run's step events on the evaluating thread. Posts a ``StepEvents`` only when none is
    pending, so events that arrive while the UI is busy are written to the log in one batch."""

    def __init__(self, target: "object", run_id: int) -> None:
        self._target = target
        self.run_id = run_id
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._pending = False

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)
            if self._pending:
                return
            self._pending = True
        self._target.post_message(StepEvents(self.run_id, self))  # type: ignore[attr-defined]

    def drain(self) -> list[Event]:
        with self._lock:
            events, self._events = self._events, []
            self._pending = False
        return events


class StepEvents(Message, bubble=False):
    """Step events are waiting in ``buffer`` for run ``run_id``."""

    def __init__(self, run_id: int, buffer: EventBuffer) -> None:
        super().__init__()
        self.run_id = run_id
        self.buffer = buffer


class EvalFinished(Message, bubble=False):
    """Run ``run_id`` ended: a result, or cancelled, or an error that is not a verdict (a bug)."""

    def __init__(self, run_id: int, result: Result | None, cancelled: bool = False, error: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.result = result
        self.cancelled = cancelled
        self.error = error


class ModelChanged(Message, bubble=False):
    """Verdicts or toggles changed; secondary screens (the matrix) redraw."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ModelChanged)
