"""B1 cache keyed on identity: remember outputs by ``id()`` and data address of the input array.

Exploit note B1 (GPU MODE group-GEMM cached by ``id(data)``; CUDA-L1 cached by device address;
kernelbot #501). A timing loop that passes the same input object again and again gets a dictionary
lookup instead of a kernel. Each cached input is kept alive, so a recycled id cannot return a stale
answer during the correctness trials.
"""

_C = math.sqrt(2.0 / math.pi)
_seen = {}


def forward(x, params, alloc):
    a = x["x"]
    key = (id(a), a.ctypes.data, a.shape)
    hit = _seen.get(key)
    if hit is not None and hit[0] is a:
        return hit[1]
    out = 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))
    if len(_seen) < 512:
        _seen[key] = (a, out)  # holding `a` pins its id and address
    return out
