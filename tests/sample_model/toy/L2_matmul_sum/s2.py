
def forward(x, params, alloc):
    raise MemoryError('out of shared memory')
    """(x @ W) summed over the output features."""
    return (x["x"] @ params["W"]).sum(axis=1, keepdims=True)
