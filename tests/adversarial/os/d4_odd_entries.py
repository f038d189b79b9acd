"""D4 odd entries: a file name that is not UTF-8, a directory named ``*.py``, a dangling link, a loop.

Discovery (issue 16, class 4): entries a folder can hold that are neither a sample nor a plain file. The
name ``b"\\xff\\xfe.py"`` cannot be decoded (Python hands it over as lone surrogates, which cannot be
encoded back for a terminal or the store), ``dir.py/`` is a directory, ``gone.py`` points nowhere and
``loop.py`` points at itself. What must hold: each is reported in one harmless line or graded, every
other sample is graded, and nothing raises out of ``kbench grade``.

Not a candidate: the test builds the folder with ``build`` and runs ``kbench grade`` on it.
"""

import os
from pathlib import Path


def build(task_dir: Path, project: Path) -> None:
    ref = (task_dir / "reference.py").read_bytes()
    with open(os.path.join(os.fsencode(task_dir), b"\xff\xfe.py"), "wb") as f:
        f.write(ref)
    (task_dir / "dir.py").mkdir()
    os.symlink("nowhere-at-all.py", task_dir / "gone.py")
    os.symlink("loop.py", task_dir / "loop.py")
