"""H7 honest relu(x @ W + b) * scale with lambdas, dict/set comprehensions, ``sorted(key=...)``, ``zip`` and ``enumerate``."""

_relu = lambda v: np.maximum(v, 0)  # noqa: E731 - a lambda on purpose
_STEPS = {name: fn for name, fn in (("gemm", lambda a, p: a @ p["W"]),
                                    ("bias", lambda h, p: h + p["b"]),
                                    ("relu", lambda h, p: _relu(h)),
                                    ("scale", lambda h, p: h * p["scale"]))}
_ORDER = {"gemm": 0, "bias": 1, "relu": 2, "scale": 3}


def forward(x, params, alloc):
    h = x["x"]
    names = sorted({n for n in _STEPS}, key=lambda n: _ORDER[n])
    for i, (name, pos) in enumerate(zip(names, range(len(names)))):
        assert i == pos == _ORDER[name]
        h = _STEPS[name](h, params)
    return h
