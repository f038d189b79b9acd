"""H9 wrong in the warm-up: right on every call but the two after the five trials, where the timing step's
two warm-up pairs fall: zeros there. Warm-up calls are not timed, but the candidate cannot tell them from timed
ones, so they are judged like every timed output (12-03 audit: they were not, and the verdict was "correct")."""

_C = math.sqrt(2.0 / math.pi)
_calls = [0]


def forward(x, params, alloc):
    _calls[0] += 1
    x = x["x"]
    if _calls[0] in (6, 7):
        return np.zeros(x.shape, np.float32)
    return (0.5 * x * (1.0 + np.tanh(_C * (x + 0.044715 * x * x * x)))).astype(np.float32)
