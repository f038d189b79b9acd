"""``kbench matrix``: the hack × defence matrix — each cell the verdict with that one defence off.

Exit codes: 0 the matrix is printed, 1 it is printed but a file or folder of a ``--candidates`` folder was
skipped (each one line on stderr, ``kbench: not graded: ...``, as ``kbench grade`` says them), 2 bad input.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
from pathlib import Path

EXIT_USAGE = 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("matrix", help="hack × defence: each library hack (and --candidates folder) graded with one "
                                      "defence off at a time")
    s.add_argument("--candidates", metavar="DIR", action="append", default=[],
                   help="also every candidate of this folder (DIR/<task>/<name>.py; repeatable)")
    s.add_argument("--task", action="append", metavar="T", help="only candidates of this task (repeatable)")
    s.add_argument("--defence", action="append", metavar="NAME",
                   help="only this defence's column (repeatable; default: every defence of the catalogue)")
    s.add_argument("--correctness-only", action="store_true",
                   help="no timing: a cell says correct or not (cheap; speed hacks then look like honest kernels)")
    s.add_argument("--timeout", type=float, metavar="S",
                   help="wall-clock limit per evaluation (default 30; 0 < S <= 86400)")
    s.add_argument("--no-store", action="store_true", help="neither read nor write the result store")
    out = s.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the matrix as one strict JSON object")
    out.add_argument("--csv", action="store_true", help="print the matrix as CSV, one row per candidate and defence")
    s.set_defaults(run=run)


def _fail(message: str) -> int:
    from kbench_cli.text import line

    print(f"kbench: error: {line(message)}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    from kbench.batch import matrix as mx
    from kbench.core import defences as catalogue
    from kbench.core.tasks import TASK
    from kbench_cli.eval_output import did_you_mean

    for d in args.defence or []:
        if d not in catalogue.BY_NAME:
            return _fail(f"unknown defence {d!r}; {did_you_mean(d, catalogue.NAMES)}")
    for t in args.task or []:
        if t not in TASK:
            return _fail(f"unknown task {t!r}; {did_you_mean(t, TASK)}")
    from kbench_cli.limits import timeout_problem

    if (why := timeout_problem(args.timeout)) is not None:
        return _fail(why)
    from kbench_cli.paths import dir_problem

    cands, skipped = mx.library_hacks(), []
    for folder in args.candidates:
        why = dir_problem(folder, f"--candidates {folder}")
        if why is not None:
            return _fail(why)
        found, problems = _folder(Path(folder), args.task)
        cands += found
        skipped += problems
    if args.task:
        cands = [c for c in cands if c.task in args.task]
    from kbench_cli.text import line

    for problem in skipped:  # as kbench grade says them; the exit code is then 1
        print(f"kbench: not graded: {line(problem)}", file=sys.stderr)
    if not cands:
        return _fail("no candidates: the library has no hacks for these tasks, and no --candidates folder has any")
    names = tuple(dict.fromkeys(args.defence)) if args.defence else catalogue.NAMES
    base = mx.CORRECTNESS_BASE if args.correctness_only else mx.TIMED_BASE
    if args.timeout is not None:  # part of the mode: results stored under another limit are not reused
        base = dataclasses.replace(base, timeout_s=args.timeout)
    quiet = args.json or args.csv or not sys.stderr.isatty()

    def progress(e: "mx.MatrixEvent") -> None:
        if not quiet:
            what = e.defence or "hardened"
            print(f"\r[{e.done}/{e.total}] {e.candidate} · {what} · {e.how}".ljust(78)[:78], end="", file=sys.stderr)

    from kbench.store import Store

    store = None if args.no_store else Store()
    notice = store.notice if store is not None else None
    if notice:  # the store fell back to memory, or moved a broken file aside: say where it went
        print(f"kbench: {line(notice)}", file=sys.stderr)
    try:
        m = mx.compute(cands, names, base=base, store=store, on_event=progress)
    finally:
        if store is not None:
            store.close()
        if not quiet:
            print("\r" + " " * 78 + "\r", end="", file=sys.stderr)
    if store is not None and store.notice and store.notice != notice:  # a result that could not be stored
        print(f"kbench: {line(store.notice)}", file=sys.stderr)
    # a closed pipe or a full disk on stdout: kbench_cli.streams, for every command
    if args.json:
        from kbench.core.strict_json import dumps

        print(dumps(m.to_dict()))
    elif args.csv:
        _csv(m)
    else:
        _table(m)
    return 1 if skipped else 0


def _folder(folder: Path, tasks: "list[str] | None") -> "tuple[list, list[str]]":
    """The candidate files of ``folder`` (``DIR/<task>/<name>.py``) and one line per file or folder skipped
    (of ``tasks`` only, when given), found as ``kbench grade`` finds a model's samples."""
    from kbench.batch.samples import discover
    from kbench.core.taskfile import NOT_CANDIDATES

    samples, problems = discover(folder, "matrix")
    # a task folder's own task.py is not a candidate; the origin is the folder, as the explorer shows it
    cands = [dataclasses.replace(s.candidate, origin=str(folder)) for s in samples
             if s.candidate.path is None or s.candidate.path.name not in NOT_CANDIDATES]
    return cands, [str(p) for p in problems if not tasks or _task_of(folder, p.path) in tasks]


def _task_of(folder: Path, path: Path) -> str | None:
    """The first part of ``path`` under ``folder``: the task folder it is or lies in (None: ``folder`` itself)."""
    try:
        parts = path.relative_to(folder).parts
    except ValueError:
        return None
    return parts[0] if parts else None


#: The status vocabulary's theme variables as rich colours.
_RICH = {"text-success": "green", "text-error": "red", "text-warning": "yellow", "text-muted": "dim"}


def _csv(m: "object") -> None:
    from kbench.store import text_cell

    w = csv.writer(sys.stdout)
    w.writerow(["task", "candidate", "origin", "defence_off", "how", "status", "speedup", "speedup_ci_lo",
                "speedup_ci_hi", "through", "caught_by", "msg"])
    d = m.to_dict()  # type: ignore[attr-defined]
    for row in d["rows"]:
        for name, cell in [("(none)", row["hardened"]), *row["cells"].items()]:
            lo, hi = cell["speedup_ci"] or (None, None)
            w.writerow([text_cell(v) for v in (row["task"], row["candidate"], row["origin"], name, cell["how"],
                                               cell["status"], cell["speedup"], lo, hi, cell["through"],
                                               cell["caught_by"], cell["msg"])])


def _table(m: "object") -> None:
    from rich.console import Console
    from rich.table import Table

    from kbench.batch import matrix as mx
    from kbench.core import defences as catalogue
    from kbench.core.status import look
    from kbench_cli.text import cell

    assert isinstance(m, mx.Matrix)
    kind = "timed" if m.timed else "correctness only"
    table = Table(title=f"hack × defence ({kind}): each cell the verdict of hardened with that one defence off",
                  caption="reverse = it gets through only with that defence off (correct" + (" and faster than the reference, 95 % "
                          "interval above 1.0)" if m.timed else ")") + "; ⊘ name / ✗ name: the defence that still "
                          "caught it; – through: already through with every defence on, not run; "
                          f"{m.runs} evaluations run, {m.stored} from the store",
                  caption_justify="left")
    table.add_column("candidate")
    table.add_column("all on")
    for d in m.defences:
        table.add_column(d + ("" if d in catalogue.DERIVED else " *"), overflow="fold")
    for r in m.rows:
        cells = [cell(r.candidate.key if r.candidate.origin == "library" else f"{r.candidate.key} ⌂")]
        for res, how in [(r.hardened, r.hardened_how), *((r.cells[d].result, r.cells[d].how) for d in m.defences)]:
            text, key = mx.cell_text(res, how)
            style = _RICH.get(look(key).style, "")
            if res is not r.hardened and mx.through(res, m.timed) and not mx.through(r.hardened, m.timed):
                style = "bold reverse red"
            cells.append(cell(text, style))
        table.add_row(*cells)
    # piped: wide enough that no cell wraps (a terminal keeps its own width)
    Console(width=None if sys.stdout.isatty() else 400).print(table)
    print("* a run of its own (the defence changes the run); the others are derived from the one hardened run")
