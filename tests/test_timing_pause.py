"""The candidate's worker can be stopped while the reference is timed, and is still killable and closable."""

from __future__ import annotations

import time

from kbench.sandbox.server import Worker


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    return stat[stat.rindex(")") + 2:].split()[0]


def test_pause_stops_every_thread_and_resume_and_close_work():
    w = Worker("candidate")
    try:
        w.layers()
        base = w.thread_count()
        assert base is not None and base >= 1
        w.pause()
        time.sleep(0.05)
        assert _state(w.pid) == "T"  # stopped: none of its threads can run
        w.resume()
        time.sleep(0.05)
        assert _state(w.pid) != "T"
        w.pause()
    finally:
        w.close()  # a stopped worker still dies at once
    assert not w.proc.is_alive()
