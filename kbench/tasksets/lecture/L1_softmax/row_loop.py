"""One row at a time, like a GPU kernel with one thread block per row.

Each 4 KB row stays in L1 cache for the max, exp and sum passes, so the three
sweeps over the row should cost about as much as one trip to main memory.
"""


def forward(x, params, alloc):
    x = x["x"]
    out = alloc(x.shape)
    for i in range(x.shape[0]):
        row = x[i]  # 1024 floats = 4 KB, stays hot in L1 across the passes below
        e = np.exp(row - row.max())
        out[i] = e / e.sum()
    return out
