"""D3 symlinked secret: ``<task>/leak.py`` points at the project's ``.env`` next to the model's folder.

Discovery (issue 16, class 4) reading outside the folder it was given. ``kbench grade`` follows the link
and grades the file it points at: ``API_TOKEN=<secret>`` is valid Python, so loading it raises
``NameError: name '<secret>' is not defined``, and that line is the verdict message: printed by ``kbench
grade``, kept in the results store, exported with it. What must hold: nothing outside the samples folder is
read as a sample (a link leading out of it is reported, not graded), and the secret shows nowhere.

Not a candidate: the test builds the folder with ``build`` (the project's ``.env`` holds the canary) and
runs ``kbench grade`` on it.
"""

import os
from pathlib import Path


def build(task_dir: Path, project: Path) -> None:
    os.symlink(os.path.relpath(project / ".env", task_dir), task_dir / "leak.py")
