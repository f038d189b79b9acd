"""The ``kbench`` command: the explorer (no arguments), ``eval``, ``list``, ``report``, ``calibrate``...

Bad input gets one line on stderr and exit code 2, never a traceback. ``kbench eval`` exits 0 when the
candidate is correct, 1 when it was evaluated and is not, 3 when the grader itself failed on the file
(an exception that is not a verdict: no verdict is given, one line says why). Every command: 141 when the
reader of its stdout left (quietly), 74 when stdout cannot be written otherwise (one line), 130 on Ctrl-C
(``kbench_cli.streams``); an OSError nothing else caught is one line naming the file, exit code 2.
"""

from __future__ import annotations

import argparse
import errno
import sys
import time
from pathlib import Path
from typing import NoReturn, Sequence

EXIT_USAGE = 2
EXIT_GRADER_FAILED = 3  # kbench eval: evaluate() raised instead of returning a verdict


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        self.exit(EXIT_USAGE, f"kbench: error: {message} (see kbench --help)\n")


def _fail(message: str) -> int:
    from kbench_cli.text import line

    print(f"kbench: error: {line(message)}", file=sys.stderr)  # a path with a newline stays one line
    return EXIT_USAGE


def _choice(what: str, known: Sequence[str]):  # noqa: ANN202 - an argparse type
    """An argparse type accepting one of ``known``, with "did you mean" in the error."""
    def parse(value: str) -> str:
        if value in known:
            return value
        from kbench_cli.eval_output import did_you_mean

        raise argparse.ArgumentTypeError(f"unknown {what} {value!r}; {did_you_mean(value, known)}")

    parse.__name__ = what
    return parse


def _parser() -> argparse.ArgumentParser:
    from kbench.core.distributions import ALL_DISTS

    from kbench import __version__

    # no abbreviations at the top: they are matched against the whole command line, so `kbench matrix --task T`
    # would read as an ambiguous `--tasks`/`--task-set` of the top level
    p = _Parser(prog="kbench", description="A miniature KernelBench on numpy. Without a command, opens the explorer.",
                allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"kbench {__version__}", help="print the version and exit")
    p.add_argument("--candidates", metavar="DIR", action="append", default=[],
                   help="add a folder of candidate files (DIR/<task>/<name>.py) to the explorer")
    p.add_argument("--model", metavar="[NAME=]DIR", action="append", default=[], dest="models_main",
                   help="open a model's samples (DIR/<task>/<sample>.py, as kbench grade takes them) in the explorer's "
                        "models screen beside every model graded into the store (repeatable; the name defaults "
                        "to the folder's)")
    from kbench_cli import tasks_cli

    tasks_cli.add_task_options(p, suffix="_main")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND",
                           help="what to do (without one: the explorer)")
    e = sub.add_parser("eval", help="grade one candidate file, streaming the evaluator's steps")
    e.add_argument("task", help="task name (see kbench list)")
    e.add_argument("file", help="candidate source file defining forward(x, params, alloc)")
    e.add_argument("--mode", type=_choice("mode", ("naive", "hardened")), default="hardened",
                   help="naive (KernelBench v0: 5 normal trials, in-process reference, blocked timing) or hardened "
                        "(the default: every check, interleaved timing)")
    e.add_argument("--dist", action="append", metavar="NAME", type=_choice("distribution", ALL_DISTS),
                   help=f"distribution for correctness trials (repeatable; one of {', '.join(ALL_DISTS)})")
    e.add_argument("--timeout", type=float, metavar="S", help="wall-clock limit for the evaluation (default 30)")
    e.add_argument("--json", action="store_true",
                   help="print the result as one strict JSON object instead of the log (non-finite numbers are null)")
    sub.add_parser("list", help="list tasks and library candidates")
    r = sub.add_parser("report", help="the lecture's four demos, measured now")
    r.add_argument("--quick", action="store_true", help="skip the slow whole-library matrix of demo 4")
    c = sub.add_parser("calibrate", help="A/A check: each task's reference graded against itself")
    c.add_argument("--repeats", type=int, default=3, metavar="N",
                   help="how many times each reference is graded against itself (default 3)")
    sub.add_parser("doctor", help="show which sandbox layers (Landlock, seccomp, ...) hold on this machine")
    from kbench_cli import batch, matrix_cli, prompt, scores

    prompt.add_parser(sub)
    batch.add_parser(sub)
    scores.add_parser(sub)
    matrix_cli.add_parser(sub)
    tasks_cli.add_parser(sub)
    for name in ("eval", "list", "report", "calibrate", "prompt", "grade", "scores", "matrix"):
        tasks_cli.add_task_options(sub.choices[name])
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command; every way its standard streams can fail ends in one line and an exit code
    (``kbench_cli.streams``: 141 when the reader of a pipe left, 74 when stdout cannot be written)."""
    from kbench_cli import streams

    with streams.guarded():
        try:
            code = _main(argv)
        except SystemExit as e:  # argparse's --help, --version and errors: their output is flushed like any
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else _print_exit(e.code))
        except streams.OutputError:
            code = None  # said below: the failure is remembered
        except OSError as e:  # last resort: a file kbench was given, or needs, cannot be used
            code = _fail(_os_error(e))
        try:
            sys.stdout.flush()  # the last buffered output fails here, not unreported at interpreter exit
        except streams.OutputError:
            pass
        failure = streams.stdout_failure()
        if failure is not None:
            return _output_failed(failure)
        return code if code is not None else 0


def _ignore_zero_sizes() -> None:
    """``COLUMNS=0`` (or ``LINES=0``) is how some shells and CI runners say "unknown"; rich would render every
    table into zero columns, printing nothing. Unknown it is: the terminal's own size, or rich's default."""
    import os

    for name in ("COLUMNS", "LINES"):
        if os.environ.get(name, "").strip() == "0":
            del os.environ[name]


def _main(argv: Sequence[str] | None) -> int:
    _ignore_zero_sizes()
    try:
        # the parser imports kbench (half a second): a Ctrl-C then is an interruption like any other
        return _dispatch(_parser().parse_args(argv))
    except KeyboardInterrupt:
        print("kbench: interrupted", file=sys.stderr)
        return 130


def _print_exit(message: str) -> int:
    """``sys.exit("text")``: the text on stderr, code 1, as the interpreter would."""
    print(message, file=sys.stderr)
    return 1


def _os_error(e: OSError) -> str:
    """An OSError as one line: the file it names and its plain-English reason."""
    why = e.strerror or str(e) or type(e).__name__
    return f"{e.filename}: {why}" if e.filename is not None else why


def _output_failed(failure: OSError) -> int:
    from kbench_cli import streams

    if failure.errno == errno.EPIPE:  # the reader left (`kbench list | head`): nothing to report
        return streams.EXIT_PIPE_CLOSED
    print(f"kbench: cannot write the output: {failure.strerror or failure}", file=sys.stderr)
    return streams.EXIT_OUTPUT_FAILED


def _dispatch(args: argparse.Namespace) -> int:
    if args.command not in ("task", "doctor"):
        from kbench_cli import tasks_cli

        code = tasks_cli.activate(args)  # --tasks, --task-set and the settings file's
        if code is not None:
            return code
    if args.command == "eval":
        return _eval(args)
    if args.command in ("prompt", "grade", "scores", "task", "matrix"):
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
    return _explore(args.candidates, args.tasks_main, args.task_sets_main, args.models_main)


def _explore(folders: list[str], task_dirs: list[str] | None = None, task_sets: list[str] | None = None,
             model_args: list[str] | None = None) -> int:
    from kbench_cli.paths import dir_problem

    dirs = [Path(f) for f in folders]
    for d in dirs:
        why = dir_problem(d, f"--candidates {d}")
        if why is not None:
            return _fail(why)
    from kbench_tui.folders import skipped
    from kbench_tui.models import check_model_dir

    from kbench_cli.text import line

    models = []
    for arg in model_args or []:
        found = _model_arg(arg)
        if isinstance(found, str):
            return _fail(found)
        models.append(found)
    problems = []
    for name, folder in models:
        why, found = check_model_dir(name, folder)
        if why is not None:
            return _fail(why)
        problems += [f"kbench: --model {line(name)}: not graded {line(str(p))}" for p in found]
    for d in dirs:  # said here too: the explorer's notices vanish after a few seconds
        for why in skipped(d):
            print(f"kbench: skipped {line(why)}", file=sys.stderr)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _fail("the explorer needs a terminal; try `kbench list`, `kbench eval` or `kbench report`")
    from kbench_tui.app import run

    # the task folders and sets are registered already (tasks_cli.activate); the app adds nothing twice
    run(candidate_dirs=dirs, task_dirs=[Path(d) for d in task_dirs or []], task_sets=list(task_sets or []),
        model_dirs=models)
    return 0


def _model_arg(value: str) -> "tuple[str, Path] | str":
    """``--model [NAME=]DIR`` as (name, folder), or why it cannot be opened (one line)."""
    from kbench_tui.models import split_model_arg

    from kbench_cli.batch import model_name_problem
    from kbench_cli.paths import dir_problem

    try:
        name, folder = split_model_arg(value)
    except OSError:  # NAME=DIR whose whole is no path at all (a name over 255 bytes): NAME=DIR it is
        name, _, rest = value.partition("=")
        folder = Path(rest)
    if value.endswith("=") and not Path(value).is_dir():  # Path("") is ".": a folder nobody named
        return f"--model {value}: no folder after '=' (give NAME=DIR)"
    return dir_problem(folder, f"--model {folder}") or model_name_problem(name, f"--model {value}") or (name, folder)


def _list() -> int:
    from rich.console import Console
    from rich.table import Table

    from kbench.core.library import active as candidates
    from kbench.core.tasks import active
    from kbench_cli.text import cell

    table = Table("task", "level", "candidates", "description")
    library = candidates()
    for t in active():  # the library's folder can be replaced (KBENCH_LIBRARY): its names are file names
        names = [c.name for c in library if c.task == t.name]
        table.add_row(cell(t.name), str(t.level), cell(", ".join(names)), cell(t.description))
    # piped: wide enough that no cell wraps (a terminal keeps its own width)
    Console(width=None if sys.stdout.isatty() else 250).print(table)
    return 0


def _eval(args: argparse.Namespace) -> int:
    import dataclasses

    from kbench.grading.pipeline import evaluate
    from kbench.core.library import CandidateFileError, read_source
    from kbench.core.modes import get as get_mode
    from kbench.core.tasks import TASK, mode_for

    if args.task not in TASK:
        from kbench_cli.eval_output import did_you_mean

        return _fail(f"unknown task {args.task!r}; {did_you_mean(args.task, TASK)}")
    try:
        src = read_source(Path(args.file))
    except CandidateFileError as e:
        return _fail(str(e))
    mode = mode_for(TASK[args.task], get_mode(args.mode))  # the task file's tolerance and distributions
    if args.dist:
        mode = mode.with_dists(tuple(dict.fromkeys(args.dist)))
    if args.timeout is not None:
        from kbench_cli.limits import timeout_problem

        if (why := timeout_problem(args.timeout)) is not None:
            return _fail(why)
        mode = dataclasses.replace(mode, timeout_s=args.timeout)
    from kbench.core.strict_json import dumps
    from kbench_cli.eval_output import StepPrinter

    name = Path(args.file).stem
    if args.json:
        try:
            result = evaluate(TASK[args.task], src, mode, name)
        except Exception as e:  # noqa: BLE001 - not a verdict: one JSON object saying so, never a traceback
            print(dumps({"task": args.task, "cand_name": name, "mode": mode.name, "status": None, "correct": False,
                         "error": _grader_failure(e)}))
            return EXIT_GRADER_FAILED
        print(dumps(result.to_dict()))
    else:
        with StepPrinter() as printer:
            t0 = time.perf_counter()
            try:
                result = evaluate(TASK[args.task], src, mode, name, on_event=printer)
            except Exception as e:  # noqa: BLE001 - the log ends in one line instead of a traceback
                printer.failed(time.perf_counter() - t0, _grader_failure(e))
                return EXIT_GRADER_FAILED
    return 0 if result.correct else 1


def _grader_failure(e: BaseException) -> str:
    """One line for an exception evaluate() let out (MemoryError from a parser, say): its type and text."""
    from kbench.core.status import failure_text

    return failure_text(e)


if __name__ == "__main__":
    sys.exit(main())
