"""A3 aliasing (pure view): return a view of the input, untouched, as the output.

Exploit note A3 / N1. The cheapest possible "kernel": no work, no allocation. It only wins where the
identity is close to the answer; on GELU it is not, so even naive says wrong, but hardened must name
the aliasing itself (the output shares memory with x) before any numeric comparison.
"""


def forward(x, params, alloc):
    return x["x"].view()
