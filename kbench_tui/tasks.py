"""Tasks beyond the lecture's nine in the explorer (no Textual here): the task folders given with ``--tasks``,
the task sets given with ``--task-set``, and both from ``<data dir>/settings.json`` (``"tasks"``,
``"task_sets"``). They are loaded before the explorer opens (their candidates join the tree beside them); each
file that does not load is one warning, and the others still load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from rich.text import Text

from kbench.core import tasks
from kbench.core.tasks import Task

from . import settings


def load(task_dirs: Iterable[Path] = (), task_sets: Iterable[str] = ()) -> list[str]:
    """Register the given task folders and sets and those the settings file names; one warning per problem."""
    saved, unreadable = settings.read()
    dirs = [Path(d) for d in task_dirs]
    warnings = [] if unreadable is None else [unreadable]
    for d in saved.get("tasks", []) if isinstance(saved.get("tasks"), list) else []:
        if isinstance(d, str) and Path(d).is_dir():
            dirs.append(Path(d))
        else:
            warnings.append(f"settings.json names a task folder that is not there: {d}")
    sets = list(task_sets) + [s for s in saved.get("task_sets", []) if isinstance(s, str)] \
        if isinstance(saved.get("task_sets", []), list) else list(task_sets)
    if not dirs and not sets:
        return warnings
    from kbench.usertasks import activate

    done = activate(list(dict.fromkeys(dirs)), list(dict.fromkeys(sets)))
    return warnings + [f"skipped {e}" for e in done.errors]


def shown() -> tuple[Task, ...]:
    """The tasks the tree shows, in order: the nine, then every registered one."""
    return tasks.active()


def label(task: Task) -> Text:
    """A task node's label: its name (bold), marked ⌂ when it comes from a --tasks folder, with its set's name
    when it comes from a task set kbench ships beyond the lecture's."""
    from kbench.core.text import one_line

    text = Text(one_line(task.name), style="bold")
    if task.origin in tasks.SHIPPED_SETS:
        text.append(f" ({task.origin})", style="dim")
    elif task.origin != tasks.LECTURE:
        text.append(" ⌂")
    return text


def with_task_tolerance(evaluate: Callable[..., Any]) -> Callable[..., Any]:
    """``evaluate`` with each task file's own tolerance applied (the explorer picks the distributions itself)."""
    import dataclasses

    def run(task: "str | Task", src: str, mode: Any, *args: Any, **kw: Any) -> Any:
        t = tasks.get(task) if isinstance(task, str) else task
        tuned = tasks.mode_for(t, mode)
        if tuned is not mode and tuned.dists != mode.dists:
            tuned = dataclasses.replace(tuned, dists=mode.dists)
        return evaluate(task, src, tuned, *args, **kw)

    return run
