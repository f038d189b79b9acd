"""A pre-norm transformer block: x + attention(rmsnorm(x)), then + a GELU MLP of rmsnorm of that.

Four heads over 256 tokens of width 256, no mask; the MLP is 256 -> 1024 -> 256 with the tanh GELU
written with h**3.
"""

from kbench.taskkit import weight

LEVEL = 3
T, D, HEADS, F = 256, 256, 4, 1024
INPUTS = {"x": (T, D)}
OUTPUT = (T, D)
FLOPS = 2.0 * T * D * D * 4 + 4.0 * T * T * D + 4.0 * T * D * F + 30.0 * T * F
BYTES = 4 * (4 * D * D + 2 * D * F + 30 * T * D + 3 * HEADS * T * T + 16 * T * F)
MIN_FLOPS = 2.0 * T * D * D * 4 + 4.0 * T * T * D + 4.0 * T * D * F
MIN_BYTES = 4 * 2 * T * D


def make_params(rng, randomize, draw):
    p = {name: weight(rng, (D, D), randomize) for name in ("Wq", "Wk", "Wv", "Wo")}
    p["W1"] = weight(rng, (D, F), randomize)
    p["W2"] = weight(rng, (F, D), randomize)
    for g in ("g1", "g2"):
        p[g] = (1.0 + 0.2 * rng.standard_normal(D)).astype(np.float32) if randomize else np.ones(D, np.float32)
    return p


def rmsnorm(h, g):
    return h / np.sqrt((h * h).mean(axis=-1, keepdims=True) + 1e-6) * g


def attention(a, p):
    t, d = a.shape
    dh = d // HEADS
    q = (a @ p["Wq"]).reshape(t, HEADS, dh).transpose(1, 0, 2)
    k = (a @ p["Wk"]).reshape(t, HEADS, dh).transpose(1, 0, 2)
    v = (a @ p["Wv"]).reshape(t, HEADS, dh).transpose(1, 0, 2)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    o = (e / e.sum(axis=-1, keepdims=True)) @ v
    return o.transpose(1, 0, 2).reshape(t, d) @ p["Wo"]


def gelu(h):
    return 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))


def forward(x, params, alloc):
    """h = x + attention(rmsnorm(x, g1)); out = h + gelu(rmsnorm(h, g2) @ W1) @ W2."""
    h = x["x"] + attention(rmsnorm(x["x"], params["g1"]), params)
    return h + gelu(rmsnorm(h, params["g2"]) @ params["W1"]) @ params["W2"]
