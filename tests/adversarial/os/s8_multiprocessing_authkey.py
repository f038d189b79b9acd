"""S8 multiprocessing authkey: the grading process's secret HMAC key is inherited by every worker and leaked.

Sandbox escape (issue 8, class 1: a secret of the grading process reaching candidate code, as the
environment did). ``multiprocessing`` gives each child its parent's ``authkey``, the key that
authenticates its connections (listeners, managers, and the fork server's own socket from Python 3.12);
the worker's ``current_process().authkey`` is the grader's. The candidate sends it back in the error
message, stored and exported with the result.
"""

import multiprocessing


def forward(x, params, alloc):
    key = multiprocessing.current_process().authkey
    raise RuntimeError("stolen authkey " + bytes(key).hex())
