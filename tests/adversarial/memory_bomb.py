"""R1 memory bomb (robustness, no exploit-note id): allocate and touch memory until the allocator gives up.

Denial of service: first a single 32 GiB request (``np.ones((1 << 16, 1 << 16))``); when that is
refused, a growing list of 128 MiB blocks that are really written, every block kept alive, so the
resident size climbs until the worker's limit stops it.
"""

_hog = []


def forward(x, params, alloc):
    try:
        _hog.append(np.ones((1 << 16, 1 << 16)))
    except MemoryError:
        pass
    while True:
        _hog.append(np.ones((1 << 12, 1 << 12)))  # 128 MiB, every page touched
