"""A process-wide object made on first use: thread pools and the default grader cost threads and processes,
so importing kbench must not make them, and two threads asking at once must get the same one."""

from __future__ import annotations

import functools
import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def once(factory: Callable[[], T]) -> Callable[[], T]:
    """``factory`` called at most once, on the first call of the returned function, under a lock."""
    lock = threading.Lock()
    made: list[T] = []

    @functools.wraps(factory)
    def get() -> T:
        with lock:
            if not made:
                made.append(factory())
            return made[0]

    return get
