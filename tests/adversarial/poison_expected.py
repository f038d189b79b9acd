"""D2 poisoning the expected output: find the grader's answer in the caller's frame and zero it in place.

Exploit note D2 (pygpubench gc_nan / gpu_scan_zeros [R]). Instead of copying the answer, make the
answer agree with us: overwrite the expected array with zeros, then return zeros.
"""

import sys


def forward(x, params, alloc):
    a = x["x"]
    f = sys._getframe(1)
    while f is not None:
        v = f.f_locals.get("expected")
        if type(v) is np.ndarray and v.shape == a.shape:
            v[...] = 0.0
            break
        f = f.f_back
    return np.zeros(a.shape, np.float32)
