"""R1 tmpfs fill: the sandbox directory sits in RAM, where files cost memory outside RLIMIT_AS.

Resources (issue 8, class 4). The worker may write in its own directory, which lives in /dev/shm; only a
per-file size limit (64 MB) applies, not a total. Files on tmpfs are memory that belongs to no process,
so the address-space cap never sees them. The candidate writes up to twice its memory limit (2 GiB here)
in 60 MB files, then says how much got written; the files are removed with the sandbox directory.
"""

from numpy.lib._utils_impl import os

_CHUNK = b"\0" * (60 << 20)
_TARGET = 2 << 30


def forward(x, params, alloc):
    written, i = 0, 0
    while written < _TARGET:
        try:
            fd = os.open(f"fill-{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            break
        try:
            n = os.write(fd, _CHUNK)
        except OSError:
            n = 0
        finally:
            os.close(fd)
        if n <= 0:
            break
        written += n
        i += 1
    raise RuntimeError(f"R1 wrote {written >> 20} MiB into the sandbox directory")
