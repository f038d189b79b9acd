"""S18 the whole prefix is in the view: read the virtualenv's own configuration (``$VIRTUAL_ENV/pip.conf``).

Issue 16, the filesystem view: "a mount namespace whose root holds only the installation, read-only". The view
binds ``sys.prefix`` and ``sys.base_prefix`` whole, not the parts an import needs (the standard library,
site-packages, the interpreter and its libraries). What users keep in a prefix comes with it: pip's
per-environment configuration (``pip.conf`` with a private index URL and its token), a ``.env`` when the
virtualenv is the project folder itself, activation scripts with exported variables. The test writes a
``pip.conf`` holding only a comment with a canary into the virtualenv for the length of the run; the kernel
puts what it reads in its error message. What must hold: a worker reads nothing of the prefix that Python
and numpy do not load.
"""

import os
import sys


def forward(x, params, alloc):
    seen = []
    for name in ("pip.conf", "pyvenv.cfg"):
        try:
            with open(os.path.join(sys.prefix, name)) as f:
                seen.append(f.read(200).replace("\n", " "))
        except OSError as e:
            seen.append(f"{name}: {e.strerror}")
    raise RuntimeError("prefix: " + " | ".join(seen))
