"""D1 FIFO sample: a named pipe called ``<task>/stuck.py`` in a model's folder.

The grading process computes what the candidate controls (issue 16, class 4: discovery). A model's folder
is the candidate's: its names, sizes, texts and file types. ``kbench grade`` (and the explorer's scan) read
every ``.py`` entry; a FIFO's ``st_size`` is 0, so the size check passes, and opening it for reading blocks
until a writer comes: none ever does. (A symlink to ``/dev/stdin`` or ``/dev/tty`` does the same.) What must
hold: every other sample is graded and the command ends; the FIFO is reported as not graded, in one line.

Not a candidate: the test builds the folder with ``build`` and runs ``kbench grade`` on it.
"""

import os
from pathlib import Path


def build(task_dir: Path, project: Path) -> None:
    os.mkfifo(task_dir / "stuck.py")
