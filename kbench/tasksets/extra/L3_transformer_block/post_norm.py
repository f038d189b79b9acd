"""Post-norm block (the original Transformer's): norm after each residual add.

Same attention and MLP; the normalisation is applied to the sum, as in "Attention Is All
You Need".
"""


def _rms(h, g):
    return h / np.sqrt((h * h).mean(axis=-1, keepdims=True) + 1e-6) * g


def _attn(a, p):
    t, d = a.shape
    dh = d // 4
    q = (a @ p["Wq"]).reshape(t, 4, dh).transpose(1, 0, 2)
    k = (a @ p["Wk"]).reshape(t, 4, dh).transpose(1, 0, 2)
    v = (a @ p["Wv"]).reshape(t, 4, dh).transpose(1, 0, 2)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(t, d) @ p["Wo"]


def _gelu(h):
    return 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))


def forward(x, params, alloc):
    h = _rms(x["x"] + _attn(x["x"], params), params["g1"])
    return _rms(h + _gelu(h @ params["W1"]) @ params["W2"], params["g2"])
