"""Fuse the bias + GELU epilogue in place on the GEMM output.

Instead of a chain of temporaries, the bias add and every GELU step overwrite
preallocated buffers, like a fused CUDA epilogue would keep values in registers.
"""


def forward(x, params, alloc):
    h = x["x"] @ params["W"]
    h += params["b"]
    c = np.float32(math.sqrt(2.0 / math.pi))
    # t = c * (h + 0.044715 * h**3), built in one scratch buffer.
    t = alloc(h.shape)
    np.power(h, 3, out=t)
    t *= np.float32(0.044715)
    t += h
    t *= c
    np.tanh(t, out=t)
    t += 1.0
    # out = 0.5 * h * (1 + tanh(...)), written back into h.
    h *= t
    h *= np.float32(0.5)
    return h
