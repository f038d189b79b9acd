"""P2 huge type name: the worker echoes the output's 700 MB type name in its reply header, unbounded.

The grader trusts what the worker controls (issue 8, class 3). When ``forward`` returns something that is
not an ndarray, the reply says what it was: ``out_type = module + "." + qualname``, both the candidate's.
A class whose name is 700 MB long makes a 700 MB JSON header that the grader receives, decodes and
parses (reply cap: 1 GiB): its memory goes well past 1 GiB, from one return value.
"""

_NAME = "A" * (700 << 20)
_Huge = type(_NAME, (), {})


def forward(x, params, alloc):
    return _Huge()
