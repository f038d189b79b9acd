"""S20 page-cache probe by first touch: time the first load from each page of numpy's own mapped libraries.

Issue 16, class 3 (page-cache probes), found by the 12-02 audit of S9's defence: fork copies no page-table
entries of a read-only file mapping, so a worker's first load from any page of numpy's extension or OpenBLAS
faults — quickly when the page is in the page cache, after a disk read (with an 8 MB readahead here:
0.5-12 ms) when not. No file is opened, so no Landlock layer sees it: the candidate finds the libraries in
its own /proc/self/maps and loads one byte through numpy's array interface. What must hold: when its code
runs, a first load from a page of an installation library says nothing about what other processes did: it
is never a disk read. The probe times first loads from pages 64 KiB apart (beyond fault-around) against the
same loads again; any that waited for the disk (over 300 us; a minor fault is a few, a load tens of
nanoseconds) is a page nobody had cached, which it reports as ``LEAKED``. On a machine where every such
page happens to be cached the probe learns nothing either way: the test holds trivially there.
"""

import time

import numpy as np


class _Mem:
    def __init__(self, addr, n):
        self.__array_interface__ = {"data": (addr, True), "shape": (n,), "typestr": "|u1", "version": 3}


def _file_maps():
    out = []
    with open("/proc/self/maps") as f:
        for line in f.read().splitlines():
            p = line.split(maxsplit=5)
            if len(p) == 6 and p[1].startswith("r") and p[5].startswith("/") and not p[5].startswith(
                    ("/dev/", "/memfd:", "/proc/")) and not p[5].endswith("(deleted)") and ".so" in p[5]:
                lo, hi = (int(v, 16) for v in p[0].split("-"))
                out.append((lo, hi, p[5].rsplit("/", 1)[-1]))
    return out


def _first_loads_ns(maps, stride=1 << 16):
    """The time of a first load from pages ``stride`` apart (beyond the kernel's fault-around), in every
    mapping but its last ``stride`` bytes (which may lie past the file's end)."""
    times = []
    for lo, hi, _ in maps:
        arr = np.asarray(_Mem(lo, hi - lo))
        for off in range(0, hi - lo - stride, stride):
            t = time.perf_counter_ns()
            int(arr[off])
            times.append(time.perf_counter_ns() - t)
    return times


def forward(x, params, alloc):
    times = _first_loads_ns(_file_maps())
    again = _first_loads_ns(_file_maps())  # the same pages, mapped now: what a load costs without a fault
    first, base = sorted(times)[len(times) // 2], sorted(again)[len(again) // 2]
    disk = [t // 1000 for t in times if t > 300_000]
    word = "LEAKED" if len(disk) >= 2 else "no leak"
    raise RuntimeError(f"{word}: first loads from {len(times)} library pages: median {first} ns, {len(disk)} "
                       f"waited for the disk ({disk[:6]} us); the same loads again: median {base} ns")
