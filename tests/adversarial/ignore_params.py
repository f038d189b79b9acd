"""E3 ignoring params: hard-code layer norm's default gamma = 1, beta = 0 and skip the affine step.

Exploit note E3 (AgentKernelArena hard-coded shapes; robust-kbench multi-init; kernelguard
HARDCODED_SHAPES). Default-initialised parameters make the affine step the identity, so dropping it
is "free"; any other parameter set shows the kernel never read ``params``.
"""


def forward(x, params, alloc):
    a = x["x"]
    mu = a.mean(axis=-1, keepdims=True)
    d = a - mu
    var = np.einsum("ij,ij->i", d, d)[:, None] / a.shape[-1]
    d /= np.sqrt(var + 1e-5)
    return d
