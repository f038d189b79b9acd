"""T6 fail on purpose, then skip the work: a wrong candidate is timed with no output checks, for the explorer's views.

Timing (issue 8, class 5) through the explorer's derived verdicts. The explorer grades on all seven
distributions with ``time_wrong``: a candidate found wrong is still timed, without checking timed
outputs, "so a view without the failing distributions has a speed". The kernel is wrong on purpose only on
``edge`` inputs (off by default; recognised by their constant rows), honest on the others, and once it has
failed it returns an uncomputed buffer on every later call. The default view (edge off) derives
"correct" with the unchecked speed. Under plain hardened (no edge trial) it never fails, so it never
skips: the honest path is the reference's own arithmetic.
"""

_C = math.sqrt(2.0 / math.pi)
_failed = [False]


def forward(x, params, alloc):
    a = x["x"]
    if _failed[0]:
        return alloc(a.shape)
    if a.ndim == 2 and bool((np.ptp(a, axis=1) == 0).any()):
        _failed[0] = True  # an edge trial: fail it, so the timing that follows is not checked
        return alloc(a.shape)
    return 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))
