"""H3 honest GELU in a module that declares ``__all__``, ``__version__`` and ``__author__``, and reads ``__name__``."""

__all__ = ["forward", "init"]
__version__ = "1.2.0"
__author__ = "a kernel writer"

_C = math.sqrt(2.0 / math.pi)
_LABEL = f"{__name__} v{__version__}"


def init(params):
    return params


def forward(x, params, alloc):
    a = x["x"]
    inner = _C * (a + 0.044715 * np.power(a, 3))
    return 0.5 * a * (1.0 + np.tanh(inner))
