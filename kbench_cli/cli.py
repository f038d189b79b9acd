"""The ``kbench`` command: the explorer (no arguments), ``eval``, ``list``, ``report``, ``calibrate``.

Bad input gets one line on stderr and exit code 2, never a traceback. ``kbench eval`` exits 0 when the
candidate is correct, 1 when it was evaluated and is not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn, Sequence

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        self.exit(EXIT_USAGE, f"kbench: error: {message} (see kbench --help)\n")


def _fail(message: str) -> int:
    print(f"kbench: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    from kbench.core.distributions import ALL_DISTS

    p = _Parser(prog="kbench", description="A miniature KernelBench on numpy. Without a command, opens the explorer.")
    p.add_argument("--candidates", metavar="DIR", action="append", default=[],
                   help="add a folder of candidate files (DIR/<task>/<name>.py) to the explorer")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    e = sub.add_parser("eval", help="grade one candidate file, streaming the evaluator's steps")
    e.add_argument("task", help="task name (see kbench list)")
    e.add_argument("file", help="candidate source file defining forward(x, params, alloc)")
    e.add_argument("--mode", choices=("naive", "hardened"), default="hardened")
    e.add_argument("--dist", action="append", metavar="NAME", choices=ALL_DISTS,
                   help=f"distribution for correctness trials (repeatable; one of {', '.join(ALL_DISTS)})")
    e.add_argument("--timeout", type=float, metavar="S", help="wall-clock limit for the evaluation (default 30)")
    e.add_argument("--json", action="store_true", help="print the result as one JSON object instead of the log")
    sub.add_parser("list", help="list tasks and library candidates")
    r = sub.add_parser("report", help="the lecture's four demos, measured now")
    r.add_argument("--quick", action="store_true", help="skip the slow whole-library matrix of demo 4")
    c = sub.add_parser("calibrate", help="A/A check: each task's reference graded against itself")
    c.add_argument("--repeats", type=int, default=3, metavar="N")
    sub.add_parser("doctor", help="show which sandbox layers (Landlock, seccomp, ...) hold on this machine")
    from kbench_cli import batch, prompt, scores

    prompt.add_parser(sub)
    batch.add_parser(sub)
    scores.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "eval":
            return _eval(args)
        if args.command in ("prompt", "grade", "scores"):
            return args.run(args)
        if args.command == "list":
            return _list()
        if args.command == "doctor":
            from kbench_cli.doctor import run_doctor

            return run_doctor()
        if args.command == "report":
            from kbench_cli.report import run_report

            return run_report(quick=args.quick)
        if args.command == "calibrate":
            from kbench_cli.report import run_calibrate

            if args.repeats < 1:
                return _fail("--repeats must be at least 1")

            return run_calibrate(args.repeats)
        return _explore(args.candidates)
    except KeyboardInterrupt:
        print("kbench: interrupted", file=sys.stderr)
        return 130


def _explore(folders: list[str]) -> int:
    dirs = [Path(f) for f in folders]
    for d in dirs:
        if not d.is_dir():
            return _fail(f"--candidates {d}: not a directory")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _fail("the explorer needs a terminal; try `kbench list`, `kbench eval` or `kbench report`")
    from kbench_tui.app import run

    run(candidate_dirs=dirs)
    return 0


def _list() -> int:
    from rich.console import Console
    from rich.table import Table

    from kbench.core.library import LIBRARY
    from kbench.core.tasks import TASKS

    table = Table("task", "level", "candidates", "description")
    for t in TASKS:
        names = [c.name for c in LIBRARY if c.task == t.name]
        table.add_row(t.name, str(t.level), ", ".join(names), t.description)
    Console().print(table)
    return 0


def _eval(args: argparse.Namespace) -> int:
    import dataclasses

    from kbench.grading.pipeline import evaluate
    from kbench.core.library import CandidateFileError, read_source
    from kbench.core.modes import get as get_mode
    from kbench.core.tasks import TASK

    if args.task not in TASK:
        return _fail(f"unknown task {args.task!r} (known: {', '.join(TASK)})")
    try:
        src = read_source(Path(args.file))
    except CandidateFileError as e:
        return _fail(str(e))
    mode = get_mode(args.mode)
    if args.dist:
        mode = mode.with_dists(tuple(dict.fromkeys(args.dist)))
    if args.timeout is not None:
        if not 0 < args.timeout <= 86400:
            return _fail("--timeout must be a number of seconds between 0 and 86400")
        mode = dataclasses.replace(mode, timeout_s=args.timeout)
    result = evaluate(TASK[args.task], src, mode, Path(args.file).stem, on_event=None if args.json else _printer())
    if args.json:
        print(json.dumps(result.to_dict(), default=str))
    return 0 if result.correct else 1


def _printer():  # noqa: ANN202
    """An event sink printing the step log, coloured by verdict."""
    from rich.console import Console

    console = Console(highlight=False)
    style = {True: "green", False: "bold red", None: "dim"}

    def on_event(ev) -> None:  # noqa: ANN001
        console.print(f"[dim]{ev.elapsed:6.2f}s[/] {ev.step:<7} ", end="")
        console.print(ev.message, style=style[ev.ok], markup=False)

    return on_event


if __name__ == "__main__":
    sys.exit(main())
