"""Limits every command checks the same way (one message each, so the commands agree)."""

from __future__ import annotations

#: A day: longer than any honest evaluation, short enough that a typo (an extra zero or two) is caught.
MAX_TIMEOUT_S = 86400.0


def timeout_problem(seconds: float | None) -> str | None:
    """Why ``--timeout`` cannot be used (one line), or None (also when it was not given)."""
    if seconds is None or 0 < seconds <= MAX_TIMEOUT_S:  # NaN fails both comparisons
        return None
    return f"--timeout must be a number of seconds between 0 and {MAX_TIMEOUT_S:g}"
