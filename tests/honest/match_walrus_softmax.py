"""H5 honest softmax that dispatches with ``match`` on the input's rank and uses walrus assignments."""


def _softmax_2d(a):
    if (m := a.max(axis=1, keepdims=True)) is not None:
        e = np.exp(a - m)
    return e / (s := e.sum(axis=1, keepdims=True))


def forward(x, params, alloc):
    a = x["x"]
    match a.ndim:
        case 1:
            return _softmax_2d(a[None, :])[0]
        case 2:
            return _softmax_2d(a)
        case _:
            flat = a.reshape(-1, a.shape[-1])
            return _softmax_2d(flat).reshape(a.shape)
