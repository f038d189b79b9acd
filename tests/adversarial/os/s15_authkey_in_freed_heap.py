"""S15 the grader's authkey in freed memory: the warden replaced the key, the old object's bytes stayed.

Issue 16's threat model: native code reads its whole process. The worker is forked from the fork server with
the grading process's multiprocessing authkey in its process object (the spawn preparation data carries it);
the warden's ``authkey`` step assigns a fresh one, which frees the old ``AuthenticationString`` but does not
wipe it: pymalloc reuses the first word for its free list and leaves the type pointer, the length and the 32
bytes. The kernel scans its writable anonymous memory for a bytes object of that type and length that is not
its current key, and puts what it finds in its error message (the verdict, the store, an export). What must
hold: no secret of the grading process is anywhere in a worker's memory (the runner checks the verdict for
its key).
"""

import multiprocessing
import multiprocessing.process as _mp
import os


def _old_keys():
    import ctypes

    tp = id(_mp.AuthenticationString)
    cur = bytes(multiprocessing.current_process().authkey)
    found = []
    with open("/proc/self/maps") as f:
        rows = [ln.split() for ln in f]
    for parts in rows:
        if len(parts) < 2 or not parts[1].startswith("rw") or (len(parts) > 5 and parts[5] != "[heap]"):
            continue
        lo, hi = (int(v, 16) for v in parts[0].split("-"))
        if hi - lo > (256 << 20):
            continue
        buf = ctypes.string_at(lo, hi - lo)
        words = np.frombuffer(buf[: len(buf) // 8 * 8], np.uint64)
        for i in np.nonzero((words[:-3] == tp) & (words[1:-2] == 32))[0]:
            key = buf[(int(i) + 3) * 8:(int(i) + 3) * 8 + 32]
            if key != cur and key.hex() not in found:
                found.append(key.hex())
    return found


def forward(x, params, alloc):
    try:
        keys = _old_keys()
    except Exception as e:  # noqa: BLE001 - ctypes refused (the audit hook), or a region gone
        keys = [type(e).__name__]
    raise RuntimeError("old keys: " + " ".join(keys[:4]))
