"""Resource limits: memory (address space), file size, open files, core dumps, and the number of tasks.

``RLIMIT_NPROC`` counts the tasks (processes and threads) of the worker's real uid, per user namespace, and
is ignored for uid 0: it caps the worker only once ``identity`` has given it a uid of its own (root) or it
runs in a user namespace of its own (any other user). ``confine`` reports the cap as the ``tasks`` layer.
"""

from __future__ import annotations

import resource
import signal

FILE_SIZE_LIMIT = 1 << 20
OPEN_FILES_LIMIT = 64
#: Tasks (threads included) a worker may have: the 65th ``clone`` fails with EAGAIN. An honest worker has
#: one thread (BLAS runs single-threaded for timing); the cap leaves room for kernels that start a few.
TASK_CAP = 64


def apply(memory_limit_mb: int) -> None:
    limit = int(memory_limit_mb) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead of killing us
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES_LIMIT, OPEN_FILES_LIMIT))
    resource.setrlimit(resource.RLIMIT_NPROC, (TASK_CAP, TASK_CAP))
