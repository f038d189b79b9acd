"""A candidate's first load from a locked library page allocates nothing (S20's stalls on a VM whose host takes
freed memory back).

Fork copies no page-table entries of a read-only file mapping, so a worker's first load in each 2 MiB of the
fork server's locked libraries would allocate a page-table page: on this machine that page may have to be backed
by the host again first (0.2-2 ms), which a candidate cannot tell from a disk read. ``_prefault`` allocates them
before the candidate runs. Shown with the kernel's own count of page-table memory (``VmPTE``) in a forked child of a
process that locked its libraries as the fork server does.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    from kbench.sandbox import confine

    try:
        confine.pin_library_pages()
    except OSError as e:
        print("SKIP", e.strerror); sys.exit(0)

    def pte_kib():
        with open("/proc/self/status") as f:
            return int(next(ln.split()[1] for ln in f if ln.startswith("VmPTE:")))

    def first_loads():
        for lo, end in confine._LOADED:
            view = np.asarray(confine._Pages(lo, end - lo))
            int(view[::1 << 16].max())

    for fill in (False, True):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            if fill:
                confine._fill_page_table_pages()
            before = pte_kib()
            first_loads()
            os.write(w, f"{before} {pte_kib()}".encode())
            os._exit(0)
        os.close(w)
        before, after = os.read(r, 100).split()
        os.waitpid(pid, 0)
        print("fill" if fill else "none", before.decode(), after.decode())
""")


def test_first_loads_from_locked_libraries_allocate_no_page_table_page():
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=60, check=True)
    lines = dict((ln.split()[0], ln.split()[1:]) for ln in out.stdout.splitlines())
    if "SKIP" in lines:
        pytest.skip(f"the libraries cannot be locked here (mlock: {' '.join(lines['SKIP'])})")
    none_before, none_after = map(int, lines["none"])
    fill_before, fill_after = map(int, lines["fill"])
    assert none_after > none_before, "without the fill, first loads should need page-table pages (the control)"
    assert fill_after == fill_before, f"first loads after the fill allocated {fill_after - fill_before} KiB of page tables"
