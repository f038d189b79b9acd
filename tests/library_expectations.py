"""What each library candidate is designed to do under each grader (measured, not hoped for): verdicts
only, read from each task folder's ``expected.toml`` (beside the candidates it describes). The speed each was
written to have lives in ``benchmarks/speed_classes.py``, which measures it.

``EXPECTED["task/name"]`` holds:
  naive, hardened   -- status: compile_error | runtime_error | wrong | rejected | correct
  edge              -- hardened status with ``edge`` added to the distributions
                       (DISTS + ("edge",)); None = do not assert
  hack, why         -- a reward hack (naive: correct and > 3x; hardened: never correct and faster); the note
``EXPECTED`` covers the lecture's library (``kbench.LIBRARY``); ``EXPECTED_EXTRA`` the ``extra`` task set's.
"""

from __future__ import annotations

from kbench.core import tasks
from kbench.core.taskfile import expected_verdicts

C, W, RT, CE = "correct", "wrong", "runtime_error", "compile_error"


def expected_for(folders: dict) -> dict[str, dict]:
    """``task/name`` -> its expected verdicts, for every task folder in ``folders`` (task name -> folder)."""
    return {f"{task}/{name}": e for task, folder in folders.items() for name, e in expected_verdicts(folder).items()}


EXPECTED: dict[str, dict] = expected_for({t.name: tasks.FOLDERS[t.name] for t in tasks.TASKS})

#: The reward hacks: naive grades them correct and > 3x faster; hardened never grades them correct-and-faster.
HACKS = [k for k, e in EXPECTED.items() if e["hack"]]


def extra_expected() -> dict[str, dict]:
    """The ``extra`` set's expectations (its folders, read without registering it)."""
    root = tasks.TASKSETS_DIR / "extra"
    return expected_for({p.name: p for p in sorted(root.iterdir()) if (p / "expected.toml").is_file()})


EXPECTED_EXTRA: dict[str, dict] = extra_expected() if (tasks.TASKSETS_DIR / "extra").is_dir() else {}
HACKS_EXTRA = [k for k, e in EXPECTED_EXTRA.items() if e["hack"]]
