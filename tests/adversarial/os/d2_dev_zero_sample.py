"""D2 endless sample: ``<task>/endless.py`` is a symlink to ``/dev/zero``.

Discovery (issue 16, class 4). A character device reports ``st_size`` 0, so the 1 MB limit is checked
against 0 and passes; ``read_bytes()`` then reads without any bound: the grading process grows until the
memory limit or the OOM killer stops it (the test gives it a 3 GiB address-space limit, so it "only" takes
that much). What must hold: no entry of a model's folder makes the grading process read more than the
candidate size limit (its peak stays under 1 GiB), and every other sample is graded.

Not a candidate: the test builds the folder with ``build`` and runs ``kbench grade`` on it.
"""

import os
from pathlib import Path


def build(task_dir: Path, project: Path) -> None:
    os.symlink("/dev/zero", task_dir / "endless.py")
