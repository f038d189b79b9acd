"""H6 phase switch by call count: exact attention for the trials, a max-free softmax inside it from then on.

Issue 16, structured trial inputs: trials always come first (one per distribution), timed calls after, and
timed inputs are always normal. This kernel counts its calls: the first five get the stable softmax, every
later one ``exp(s)`` without subtracting the row maximum, which is fine for normal q and k and overflows to
inf/NaN for lognormal and offset ones. The checks of the timed calls only ever see normal inputs. Pure
numpy: it passes the gate. What must hold: a path that is wrong on a distribution the mode judges must not
be the one that is timed unchecked on it (the verdict is "wrong").
"""

_calls = [0]
_TRIALS = 5


def forward(x, params, alloc):
    q, k, v = x["q"], x["k"], x["v"]
    _calls[0] += 1
    s = q @ k.transpose(0, 2, 1)
    s *= 1.0 / math.sqrt(q.shape[-1])
    if _calls[0] <= _TRIALS:
        s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s *= 1.0 / s.sum(axis=-1, keepdims=True)
    return s @ v
