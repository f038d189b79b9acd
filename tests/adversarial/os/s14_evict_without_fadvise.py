"""S14 eviction without fadvise: drop numpy's and Python's own pages from the page cache by other routes.

Issue 16, class 3: "fadvise(DONTNEED) evicts them (a side channel, a covert channel to the next worker,
state left behind)". ``fadvise64``, ``readahead`` and the populate/pageout family of ``madvise`` are refused;
this kernel tries the routes left: a shared read-only mapping of the file with ``madvise`` DONTNEED, FREE,
COLD, PAGEOUT and REMOVE, ``msync(MS_INVALIDATE)``, ``fallocate`` punching a hole, ``sync_file_range``, and
``fadvise`` by number. It targets the files the harness watches (numpy's core extension, the interpreter's
``os.py``). What must hold: the harness finds every watched page still cached after the run (no attack leaves
an evicted page behind); the kernel itself computes the real answer.
"""

import os

_LIB = os.path.dirname(os.__file__)


def _targets():
    core = os.path.join(os.path.dirname(np.__file__), "_core")
    names = [os.path.join(core, n) for n in os.listdir(core) if n.startswith("_multiarray_umath") and n.endswith(".so")]
    return names[:1] + [os.path.join(_LIB, "os.py")]


def _evict(path):
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    length = -(-size // 4096) * 4096
    addr, err = _raw(9, 0, length, 1, 1, fd, 0)  # mmap(PROT_READ, MAP_SHARED)
    if addr > 0:
        for advice in (4, 8, 20, 21, 9):  # DONTNEED, FREE, COLD, PAGEOUT, REMOVE
            _raw(28, addr, length, advice)
        _raw(26, addr, length, 2 | 4)  # msync(MS_INVALIDATE | MS_SYNC)
        _raw(11, addr, length)
    _raw(285, fd, 3, 0, size)  # fallocate(PUNCH_HOLE | KEEP_SIZE)
    _raw(277, fd, 0, 0, 7)  # sync_file_range
    _raw(221, fd, 0, 0, 4)  # fadvise64(DONTNEED)
    os.close(fd)


def forward(x, params, alloc):
    for p in _targets():
        try:
            _evict(p)
        except OSError:
            pass
    return _gelu(x["x"])
