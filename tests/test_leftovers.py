"""The leftovers checks themselves: an eviction is seen, a reclaim sweep that takes the control too is not."""

from __future__ import annotations

import os

from tests import leftovers


def _drop(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _file(tmp_path, name: str) -> str:
    p = tmp_path / name
    p.write_bytes(os.urandom(16 * 4096))
    with open(p, "rb+") as f:
        os.fsync(f.fileno())
    return str(p)


def test_an_eviction_of_a_watched_file_is_reported(tmp_path):
    watched = _file(tmp_path, "watched.bin")
    pages = leftovers.PageWatch([watched])
    _drop(watched)
    assert [line.split(":")[0] for line in pages.evicted()] == [watched]


def test_nothing_is_reported_when_nothing_was_evicted(tmp_path):
    pages = leftovers.PageWatch([_file(tmp_path, "watched.bin")])
    assert pages.evicted() == []


def test_a_sweep_that_also_takes_the_control_copy_is_not_an_attack(tmp_path):
    watched = _file(tmp_path, "watched.bin")
    pages = leftovers.PageWatch([watched])
    _drop(watched)
    _drop(pages.controls[watched])
    assert pages.evicted() == []
