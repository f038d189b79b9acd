"""G4 gate evasion, aliased getattr: ``g = getattr; g(np.lib, '_utils_' + 'impl')``.

getattr is refused only when called by that name; bound to another name it reaches any attribute, named by a
computed string. Once it holds ``os``, the payload the test appends (``_gate_payload.py``) runs.
"""

g = getattr
os = g(g(g(np, 'l' + 'ib'), '_utils_' + 'impl'), 'o' + 's')

_TAG = "G4"
