"""H8 view without a derived check: exact softmax for the trials, every row scaled by 1.005 while timed.

The hardened verdict is right: the first timed output fails the row-sum property ("correct only while being
checked"). The hole is in the views kbench derives from that one run (``kbench.core.defences.derive``, the
explorer's switches, ``kbench matrix``): the timed check's failure is recorded only as a ``check_timed`` breach,
which the view "without property checks" keeps, so it says ``wrong`` and names ``check_timed``; graded for
real without property checks the same kernel is ``correct`` (0.5 % is inside rtol = 1e-2 everywhere, and no
check but the row sums sees it). Pure numpy, it passes the gate; its speed is the reference's (about 1x).
"""

_calls = [0]


def forward(x, params, alloc):
    _calls[0] += 1
    z = x["x"]
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    if _calls[0] > 5:  # past the five trials: every call is a timed one
        p *= np.float32(1.005)
    return p
