"""H2 honest softmax as a class with ``__slots__``, ``__init__``, ``__call__``, a property and a staticmethod."""


class RowSoftmax:
    __slots__ = ("axis", "_calls")

    def __init__(self, axis: int = -1) -> None:
        self.axis = axis
        self._calls = 0

    @property
    def calls(self) -> int:
        return self._calls

    @staticmethod
    def _shifted(a, axis):
        return a - a.max(axis=axis, keepdims=True)

    def __call__(self, a):
        self._calls += 1
        e = np.exp(self._shifted(a, self.axis))
        e /= e.sum(axis=self.axis, keepdims=True)
        return e


_softmax = RowSoftmax()


def forward(x, params, alloc):
    return _softmax(x["x"])
