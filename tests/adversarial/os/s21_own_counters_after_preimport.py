"""S21 own counters after the preimport: which files were cached, from the disk reads done on its behalf.

Issue 16, class 3 (found by the 12-02 audit of the read drop). The candidate's source only names a module,
in dead code. Before the drop the worker imports it for the candidate, and reads its files from disk exactly
when nobody had them cached. The candidate's top level then reads its own counters: blocks read and major
faults (``getrusage``), the same and its I/O waits in ``/proc/self/stat``, ``/proc/self/io`` and
``/proc/self/status``. No file of the installation is opened and nothing is timed. Naming a module or not is
also a bit left for the next worker to read the same way. What must hold: no counter of disk reads done for it
can be read by the candidate.
"""

import os

if False:  # noqa: SIM108 - only named: the worker imports it before the drop
    import pydoc_data.topics  # noqa: F401


def _counters():
    seen = []
    try:
        import resource

        r = resource.getrusage(resource.RUSAGE_SELF)
        if r.ru_inblock or r.ru_majflt:
            seen.append(f"getrusage: {r.ru_inblock} blocks read, {r.ru_majflt} major faults")
    except (OSError, ImportError):
        pass
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        majflt, blkio = int(fields[9]), int(fields[39])
        if majflt or blkio:
            seen.append(f"/proc/self/stat: {majflt} major faults, {blkio} ticks of block I/O")
    except (OSError, ValueError, IndexError):
        pass
    for name, key in (("io", "read_bytes"), ("status", "voluntary_ctxt_switches")):
        try:
            with open(f"/proc/self/{name}") as f:
                value = next((ln.split()[1] for ln in f if ln.startswith(key + ":")), None)
            if value is not None:
                seen.append(f"/proc/self/{name}: {key} {value}")
        except OSError:
            pass
    return "LEAKED " + "; ".join(seen) if seen else "no counter readable"


AT_LOAD = _counters()


def forward(x, params, alloc):
    raise RuntimeError(AT_LOAD)
