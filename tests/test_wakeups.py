"""kbench.timing.wakeups: the PM QoS request held while grading, and the grading thread's short slice."""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import threading

import pytest

from kbench.timing import wakeups


@pytest.fixture
def device(tmp_path, monkeypatch):
    path = tmp_path / "cpu_dma_latency"
    path.write_bytes(b"")
    monkeypatch.setattr(wakeups, "DEVICE", str(path))
    monkeypatch.delenv(wakeups.OFF_VARIABLE, raising=False)
    return path


def _open_fds_on(path) -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}") == str(path)
        except OSError:
            pass
    return n


def test_the_request_is_written_held_once_and_dropped_after(device):
    assert _open_fds_on(device) == 0
    with wakeups.held() as outer:
        assert outer is True
        assert device.read_bytes() == struct.pack("i", 0)  # a bound of 0 us
        with wakeups.held() as inner:  # a second evaluation in the same process shares the one request
            assert inner is True
            assert _open_fds_on(device) == 1
        assert _open_fds_on(device) == 1  # the outer one still holds it
        assert "held" in wakeups.state()
    assert _open_fds_on(device) == 0  # closing the file is what drops the request


def test_held_from_two_threads_at_once_opens_one_file(device):
    inside, release = threading.Barrier(3), threading.Event()

    def grade():
        with wakeups.held():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=grade) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert _open_fds_on(device) == 1
    release.set()
    for t in threads:
        t.join()
    assert _open_fds_on(device) == 0


def test_a_machine_without_it_is_reported_not_fatal(tmp_path, monkeypatch):
    monkeypatch.setattr(wakeups, "DEVICE", str(tmp_path / "missing"))
    monkeypatch.delenv(wakeups.OFF_VARIABLE, raising=False)
    with wakeups.held() as holding:
        assert holding is False
    line = wakeups.state()
    assert line.startswith("idle cores halt: fast wake-ups unavailable") and "missing" in line


def test_turned_off_by_the_variable(device, monkeypatch):
    monkeypatch.setenv(wakeups.OFF_VARIABLE, "0")
    with wakeups.held() as holding:
        assert holding is False
        assert _open_fds_on(device) == 0
    assert "turned off" in wakeups.state()


def _runtime() -> int:
    nrs = wakeups._SYSCALLS[platform.machine()]
    attr = wakeups._SchedAttr()
    assert ctypes.CDLL(None, use_errno=True).syscall(nrs[1], 0, ctypes.byref(attr), ctypes.sizeof(attr), 0) == 0
    return attr.runtime


def test_the_short_slice_is_this_threads_and_is_given_back():
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    before = _runtime() if platform.machine() in wakeups._SYSCALLS else None
    with wakeups.prompt() as ok:
        if not ok:
            pytest.skip(f"no custom slice on this kernel: {wakeups.slice_state()}")
        assert _runtime() == wakeups.SLICE_NS
        seen = []
        t = threading.Thread(target=lambda: seen.append(_runtime()))
        t.start()
        t.join()
        assert seen == [before]  # a thread started meanwhile (the helper) has the default slice
        with wakeups.prompt() as again:  # nested: the outer block's slice stays
            assert again is True
        assert _runtime() == wakeups.SLICE_NS
        assert os.getpriority(os.PRIO_PROCESS, 0) == nice  # the call kept the thread's nice value
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a process started meanwhile (the fork server, so every worker): the default slice too
            os.write(w, str(_runtime()).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        assert int(os.read(r, 64)) == before
        os.close(r)
        os.close(w)
    assert _runtime() == before
