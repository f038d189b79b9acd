"""Helpers for tests that kill a process mid-work, as a user's ``kill -9`` would."""

from __future__ import annotations

import re
import signal
import subprocess
from typing import IO


def sigkill_after(proc: subprocess.Popen, stream: IO[str], count: int, pattern: str = "") -> list[str]:
    """Read ``stream`` until ``count`` lines matching ``pattern`` have come, SIGKILL ``proc`` then, reap it and
    close ``stream``; the matching lines read (fewer if the process ended first)."""
    seen: list[str] = []
    try:
        for line in stream:
            if re.match(pattern, line):
                seen.append(line)
                if len(seen) == count:
                    proc.send_signal(signal.SIGKILL)
                    break
    finally:
        proc.kill()
        proc.wait()
        stream.close()
    return seen
