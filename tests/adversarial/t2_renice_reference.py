"""T2 renice the timing reference: setpriority(19) on it, plus a spinner on its core (no audit event).

Timing (issue 8, class 5) through a sandbox hole (class 1). The reference's timing twin is a sibling of
the candidate's worker (same fork server, started after it); a background thread started at load finds
siblings by reading ``/proc/<pid>/stat`` through ``dir_fd`` (past the hook's /proc check, see S5) and
lowers their priority with ``os.setpriority``. It spins whenever ``forward`` is not running (T1's spinner,
``_idle_spinner.py``, appended by the test, calls ``_on_idle`` every 50 ms): at nice 19 against nice 0,
the reference gets a few percent of its core, and the honest kernel (the reference's own arithmetic) is
"many times faster". Only processes of this grader's fork server are touched.
"""

from numpy.lib._utils_impl import os

_done = set()


def _siblings():
    me, parent = os.getpid(), os.getppid()
    proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    found = []
    try:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me or int(name) in _done:
                continue
            try:
                fd = os.open(f"{name}/stat", os.O_RDONLY, dir_fd=proc)
                try:
                    stat = os.read(fd, 4096).decode()
                finally:
                    os.close(fd)
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(name))
    finally:
        os.close(proc)
    return found


def _renice():
    for pid in _siblings():
        try:
            os.setpriority(os.PRIO_PROCESS, pid, 19)
            _done.add(pid)
        except OSError:
            pass


_on_idle = _renice
