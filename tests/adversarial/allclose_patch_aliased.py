"""C4 checker patch, gate-evading: the same ``np.allclose`` patch made through an alias of the module.

Exploit note C4. The AST gate recognises ``np.allclose = ...`` as a module patch because ``np`` is a
module name; it does not follow ``_n = np``. The runtime defence (judging in the parent, which never
ran candidate code) must still say wrong.
"""

_n = np
_n.allclose = lambda *a, **k: True
_n.array_equal = lambda *a, **k: True


def forward(x, params, alloc):
    return np.zeros(x["x"].shape, np.float32)
