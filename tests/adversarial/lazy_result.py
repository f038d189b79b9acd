"""C2 lazy result: return a promise that computes GELU only when someone converts it to an array.

Exploit note C2 (GPU MODE eigh #161 [R]; DeepReinforce lazy evaluation). ``forward`` returns at once
with an object that has the right ``shape`` and ``dtype``; the real work happens inside
``__array__``, i.e. inside the grader's comparison, which is not timed.
"""

_C = math.sqrt(2.0 / math.pi)


class Deferred:
    def __init__(self, a):
        self._a = a
        self.shape = a.shape
        self.dtype = np.dtype(np.float32)
        self.ndim = a.ndim
        self.size = a.size

    def __array__(self, dtype=None, copy=None):
        a = self._a
        out = (0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))).astype(np.float32)
        return out if dtype is None else out.astype(dtype)

    def __len__(self):
        return self.shape[0]


def forward(x, params, alloc):
    return Deferred(x["x"])
