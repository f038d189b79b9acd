"""H6 honest diag(a) @ B as ``np.einsum`` writing into an ``alloc`` buffer with ``out=``, with a shape check that raises."""


def forward(x, params, alloc):
    a, B = x["a"], x["B"]
    if a.shape[0] != B.shape[0]:
        raise ValueError(f"a has {a.shape[0]} rows, B has {B.shape[0]}")
    out = alloc(B.shape, np.float32)
    np.einsum("i,ij->ij", a, B, out=out)
    return out
