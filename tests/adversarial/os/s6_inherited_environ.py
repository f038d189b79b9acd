"""S6 inherited environment: the worker's os.environ carries the grading process's secrets.

Sandbox escape (issue 8, class 1: what /proc/<pid>/environ gives, without even opening a file). Workers
come from a fork server started by the grading process, so every variable of the user's shell (API
keys, tokens) is in the candidate's ``os.environ``; it leaves in the verdict message. The test plants a
canary variable in the grading process.
"""

from numpy.lib._utils_impl import os


def forward(x, params, alloc):
    found = [f"{k}={v}" for k, v in os.environ.items() if k.startswith("KBENCH_ADV_CANARY")]
    if found:
        raise RuntimeError("stolen: " + " ".join(found))
    return alloc(x["x"].shape)
