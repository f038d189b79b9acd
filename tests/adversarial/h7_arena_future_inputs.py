"""H7 future inputs from the sealed arena: answer in advance every input the arena shows before it is handed over.

Issue 16, "visibility of future timing inputs". A worker maps its task's whole input arena (every slot and
every parameter set, read-only), not just the slot of its current call: the reference workers' slots hold the
inputs of trials still to come, and the timing slot is drawn into between pairs. During its untimed calls
(the trials) the kernel reads every slot of the arena that is not its own input, computes those answers in
advance and keys them by content; every later call first looks its input up. What must hold: a timed input
is drawn only after the kernel's last call and the grader never stages one where a worker sees it early, so
no timed call ever hits: correct and about 1.0x.
"""

import ctypes

_C = math.sqrt(2.0 / math.pi)
_answers = {}
_calls = [0]


def _gelu(a):
    return 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))


def _arena():
    with open("/proc/self/maps") as f:
        for ln in f:
            if "kbench-inputs" in ln:
                lo, hi = (int(v, 16) for v in ln.split()[0].split("-"))
                return np.frombuffer((ctypes.c_char * (hi - lo)).from_address(lo), np.float32)
    return None


def forward(x, params, alloc):
    a = x["x"]
    _calls[0] += 1
    hit = _answers.get(a[:4].tobytes() + a[-4:].tobytes())
    if hit is not None:
        return hit
    if _calls[0] <= 5:  # untimed: look ahead
        arena = _arena()
        slot = -(-a.size * 4 // 4096) * 4096 // 4
        if arena is not None:
            for off in range(0, arena.size - a.size + 1, slot):
                w = arena[off:off + a.size].reshape(a.shape)
                if w.any() and not np.array_equal(w, a):
                    _answers[w[:4].tobytes() + w[-4:].tobytes()] = _gelu(w)
    return _gelu(a)
