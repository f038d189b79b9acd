"""Task options for every command, and ``kbench task check FILE``.

``--tasks DIR`` (repeatable) adds the task files under DIR (``DIR/NAME.py``, or ``DIR/NAME/task.py`` with its
candidates beside it); ``--task-set NAME`` adds one of the task sets kbench ships beyond the lecture's nine
(``extra``). Both may also be set in ``<data dir>/settings.json`` (``"tasks": ["DIR", ...]``, ``"task_sets":
["extra"]``), which every command reads. A file that does not load is one line on stderr; the others load.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_USAGE = 2


def add_task_options(p: argparse.ArgumentParser, suffix: str = "") -> None:
    """``--tasks``/``--task-set`` on ``p`` (``suffix`` keeps the main parser's values apart from a subcommand's:
    argparse lets a subparser's defaults overwrite the main parser's)."""
    from kbench.core.tasks import SHIPPED_SETS

    p.add_argument("--tasks", metavar="DIR", action="append", default=[], dest=f"tasks{suffix}",
                   help="add the task files in DIR (DIR/NAME.py or DIR/NAME/task.py; repeatable)")
    p.add_argument("--task-set", metavar="NAME", action="append", default=[], dest=f"task_sets{suffix}",
                   choices=SHIPPED_SETS, help=f"add a task set kbench ships ({', '.join(SHIPPED_SETS)}; repeatable)")


def configured(args: argparse.Namespace) -> tuple[list[Path], list[str], list[str]]:
    """(task folders, task sets, problems) from the command line and the settings file."""
    from kbench_tui import settings

    s, unreadable = settings.read()  # one read: the settings and why the file cannot be used
    problems = []
    if unreadable is not None:  # a warning, not a refusal: the command line alone still works
        print(f"kbench: {_line(unreadable)}", file=sys.stderr)
    from kbench_cli.paths import dir_problem, is_dir

    dirs = [Path(d) for d in getattr(args, "tasks_main", []) + getattr(args, "tasks", [])]
    for d in dirs:
        why = dir_problem(d, f"--tasks {d}")
        if why is not None:
            problems.append(why)
    saved = s.get("tasks", [])
    if isinstance(saved, list):
        for d in saved:
            if isinstance(d, str) and is_dir(d):
                dirs.append(Path(d))
            else:
                print(f"kbench: settings.json names a task folder that is not there: {_line(str(d))}", file=sys.stderr)
    sets = list(getattr(args, "task_sets_main", []) + getattr(args, "task_sets", []))
    saved_sets = s.get("task_sets", [])
    if isinstance(saved_sets, list):
        sets += [x for x in saved_sets if isinstance(x, str)]
    return list(dict.fromkeys(dirs)), list(dict.fromkeys(sets)), problems


def _line(text: str) -> str:
    from kbench_cli.text import line

    return line(text)


def activate(args: argparse.Namespace) -> int | None:
    """Load what the command line and the settings name; None to go on, or an exit code (bad input)."""
    dirs, sets, problems = configured(args)
    if problems:
        print(f"kbench: error: {_line(problems[0])}", file=sys.stderr)
        return EXIT_USAGE
    if not dirs and not sets:
        return None
    from kbench.usertasks import activate as load

    done = load(dirs, sets)
    for e in done.errors:
        print(f"kbench: skipped {_line(e)}", file=sys.stderr)
    return None


# ------------------------------------------------------------------------------------------ kbench task

def add_parser(sub: argparse._SubParsersAction) -> None:
    from kbench_cli.cli import _Parser

    t = sub.add_parser("task", help="work with task files (kbench task check FILE)")
    tsub = t.add_subparsers(dest="task_command", parser_class=_Parser, metavar="SUBCOMMAND", required=True)
    c = tsub.add_parser("check", help="say what a grader would face with a task file: its reference's time, "
                                      "finite and informative outputs, determinism, the static gate")
    c.add_argument("file", help="a task file (NAME.py, or a folder with a task.py)")
    c.add_argument("--json", action="store_true", help="print one JSON object: the checks and the verdict")
    c.add_argument("--timeout", type=float, metavar="S",
                   help="wall-clock limit for each step that runs the task's code (default 120; 0 < S <= 86400)")
    t.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from kbench_cli.limits import timeout_problem
    from kbench_cli.paths import exists_problem, is_dir

    if (why := timeout_problem(args.timeout)) is not None:
        print(f"kbench: error: {why}", file=sys.stderr)
        return EXIT_USAGE
    path = Path(args.file)
    if is_dir(path):
        path = path / "task.py"
    why = exists_problem(path, str(args.file) if path == Path(args.file) else str(path))
    if why is not None:
        print(f"kbench: error: {_line(why)}", file=sys.stderr)
        return EXIT_USAGE
    if path.suffix != ".py":
        print(f"kbench: error: {_line(f'{path}: not a .py task file')}", file=sys.stderr)
        return EXIT_USAGE
    from kbench.core.taskfile import TaskFileError, read_text

    try:
        read_text(path)
    except TaskFileError as e:  # cannot even be read as text: bad input, not a broken task
        print(f"kbench: error: {_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    from kbench import task_check

    task, lines = task_check.check_file(path, args.timeout or task_check.CHECK_TIMEOUT_S)
    verdict = task_check.summary(lines)
    if args.json:
        from kbench.core.strict_json import dumps

        print(dumps({"file": str(path), "task": task.name if task else None, "ok": not task_check.failed(lines),
                     "verdict": verdict, "checks": [ln.as_dict() for ln in lines]}))
    else:
        marks = {"ok": "✓", "warn": "!", "fail": "✗"}
        width = max(len(ln.check) for ln in lines)
        for ln in lines:
            print(f"{marks[ln.verdict]} {ln.check:<{width}}  {_line(ln.text)}")
        print(_line(verdict))
    return 1 if task_check.failed(lines) else 0
