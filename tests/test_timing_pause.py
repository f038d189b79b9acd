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
        w.close()  # a stopped worker still dies at once (its warden is reaped in the background)
    w.proc.join(2.0)
    assert not w.proc.is_alive()


_SPINNER = """import threading
def _spin():
    while True:
        pass
threading.Thread(target=_spin, daemon=True).start()
def forward(x, params, alloc):
    return None
"""


def _task_states(pid: int) -> set[str]:
    import os

    return {_state_of(f"/proc/{pid}/task/{tid}/stat") for tid in os.listdir(f"/proc/{pid}/task")}


def _state_of(path: str) -> str:
    with open(path) as f:
        stat = f.read()
    return stat[stat.rindex(")") + 2:].split()[0]


def test_a_stop_waits_for_every_thread_not_only_the_leader():
    """The stop check reads one stat when the worker has one thread; with a second thread running it must
    see that thread stopped too (and a resumed worker is not reported stopped)."""
    from kbench.sandbox import protocol as P

    w = Worker("candidate")
    try:
        w.layers()
        assert isinstance(w.call(P.Load(_SPINNER, "cand"), 10.0), P.Loaded)  # replies, then is stopped
        assert w.thread_count() == 2
        assert _task_states(w.pid) <= {"T", "t"}
        w.resume()
        assert not w._all_stopped()
        w.pause()
        assert _task_states(w.pid) <= {"T", "t"}
    finally:
        w.close()
