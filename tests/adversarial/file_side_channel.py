"""D4 file side channel: cache outputs in files, in the working directory and under /tmp and /dev/shm.

Exploit note D4 (GPU MODE eigh /dev/shm replay [R]; pygpubench replace_torch wrote into the cwd [R]).
Outputs are stored under a fingerprint of the input; a later call, or a later *evaluation* (the
absolute paths outlive the sandbox directory), replays them. Writes that the sandbox refuses are
silently skipped so the kernel keeps working.
"""

import os

_C = math.sqrt(2.0 / math.pi)
_DIRS = (os.getcwd(), "/tmp", "/dev/shm")


def _key(a):
    flat = a.reshape(-1)
    return "kbench_adv_sidechannel_%016x" % (hash(flat[:: max(1, flat.size // 64)][:64].tobytes()) & (2**64 - 1))


def forward(x, params, alloc):
    a = x["x"]
    name = _key(a)
    for d in _DIRS:
        p = os.path.join(d, name)
        try:
            with open(p, "rb") as f:
                data = f.read()
            if len(data) == a.nbytes:
                return np.frombuffer(data, np.float32).reshape(a.shape).copy()
        except OSError:
            pass
    out = 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))
    for d in _DIRS:
        try:
            with open(os.path.join(d, name), "wb") as f:
                f.write(out.tobytes())
        except OSError:  # PermissionError from the sandbox: keep going
            pass
    return out
