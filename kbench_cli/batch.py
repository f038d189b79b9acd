"""``kbench grade DIR...``: grade a model's samples into the result store, resumably, with a progress bar.

Each DIR is one model (``DIR/<task>/<sample>.py``; the model's name defaults to the folder's). What is
already stored under the full key is skipped; everything else is graded, each sample in its own
sandbox worker, and stored the moment it finishes. Exit codes: 0 every sample found is graded and
stored, 1 something was reported (an unknown task folder, an unreadable file, a result that could not
be stored), 2 bad input.

Sample file names, folder names and verdict messages are candidate text: every line that shows them
goes through ``kbench_cli.text.line`` (a newline in a file name cannot forge a "correct" line).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from pathlib import Path

EXIT_USAGE = 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    from kbench.core.distributions import ALL_DISTS

    g = sub.add_parser("grade", help="grade folders of model samples (DIR/<task>/<sample>.py) into the store")
    g.add_argument("dirs", nargs="+", metavar="DIR", help="one folder of samples per model")
    g.add_argument("--model", action="append", metavar="NAME",
                   help="the model's name (default: the folder's name); once per DIR, in order")
    g.add_argument("--mode", choices=("naive", "hardened", "both"), default="hardened")
    g.add_argument("--dist", action="append", metavar="NAME", choices=ALL_DISTS,
                   help="hardened-mode distribution (repeatable; naive always uses KernelBench's 5 normal draws)")
    g.add_argument("--correctness-only", action="store_true",
                   help="skip the timing step (verdicts only; fast_p needs timing)")
    g.add_argument("--timeout", type=float, metavar="S", help="wall-clock limit per sample (default 30)")
    g.add_argument("--workers", type=int, metavar="N",
                   help="grading processes for correctness (default: this machine's cores; at most 4 × them, "
                        f"{max_workers()} here); timing always runs one at a time")
    g.add_argument("--scheduler", metavar="tcp://HOST:8786|local",
                   help="grade on a Dask cluster (needs the dask extra); 'local' starts one on this machine")
    g.set_defaults(run=run)


def usable_cores() -> int:
    """The cores this process may run on (``kbench.core.parallel.USABLE_CPUS``)."""
    from kbench.core.parallel import USABLE_CPUS

    return USABLE_CPUS


def max_workers() -> int:
    """The most correctness workers ``--workers`` accepts: each is a grading process of ~250 MB, and past a
    few per core they only queue for the cores (an unbounded N started one per sample, or overflowed)."""
    return 4 * usable_cores()


def model_name_problem(name: str, label: str) -> str | None:
    """Why ``name`` cannot name a model (one line), or None. The store keeps the explorer's own candidates
    under the empty model (``kbench.store``) and ``kbench scores`` lists only the others: results under an
    empty or blank name would be stored and never shown."""
    from kbench.store import stored_text

    if not stored_text(name).strip():
        return f"{label}: a model needs a name that is not empty or blank"
    return None


def _fail(message: str) -> int:
    from kbench_cli.text import line

    print(f"kbench: error: {line(message)}", file=sys.stderr)
    return EXIT_USAGE


def _modes(args: argparse.Namespace) -> list:
    from kbench.core.modes import HARDENED, NAIVE

    modes = {"naive": [NAIVE], "hardened": [HARDENED], "both": [NAIVE, HARDENED]}[args.mode]
    out = []
    for m in modes:
        if args.dist and m.name == "hardened":
            m = m.with_dists(tuple(dict.fromkeys(args.dist)))
        if args.correctness_only:
            m = dataclasses.replace(m, timing=None)
        if args.timeout is not None:
            m = dataclasses.replace(m, timeout_s=args.timeout)
        out.append(m)
    return out


def run(args: argparse.Namespace) -> int:
    from kbench.batch.samples import discover, jobs_for
    from kbench.store import Store

    from kbench_cli.paths import dir_problem

    dirs = [Path(d) for d in args.dirs]
    for d in dirs:
        why = dir_problem(d, str(d))
        if why is not None:
            return _fail(why)
    names = args.model or []
    if names and len(names) != len(dirs):
        return _fail(f"--model given {len(names)} time(s) for {len(dirs)} folder(s); give it once per DIR or not at all")
    names = names or [d.resolve().name for d in dirs]
    for name, d in zip(names, dirs):  # a given name, or the folder's ("/" has none)
        why = model_name_problem(name, f"--model {name!r}" if args.model else f"{d} (no folder name; give --model)")
        if why is not None:
            return _fail(why)
    if len(set(names)) != len(names):
        return _fail(f"two folders would be the same model ({', '.join(sorted(n for n in names if names.count(n) > 1))}); "
                     "name them with --model")
    from kbench_cli.limits import timeout_problem

    if (why := timeout_problem(args.timeout)) is not None:
        return _fail(why)
    workers = args.workers if args.workers is not None else usable_cores()
    if not 1 <= workers <= max_workers():
        return _fail(f"--workers must be between 1 and {max_workers()} (4 × this machine's {usable_cores()} "
                     "usable cores)")
    try:
        modes = _modes(args)
    except ValueError as e:
        return _fail(str(e))

    samples, problems = [], []
    for d, name in zip(dirs, names):
        s, p = discover(d, name)
        samples += s
        problems += p
    from kbench_cli.text import line

    for p in problems:
        print(f"kbench: not graded: {line(p)}", file=sys.stderr)
    if not samples:
        return _fail("no samples to grade (expected DIR/<task>/<sample>.py)")

    from kbench.batch.grade import grade, plan

    store = Store()
    if store.path is None:  # results only in memory would be lost at exit, and the timing lane needs the directory
        store.close()
        return _fail(f"kbench grade needs a writable data directory ({store.notice}); set KBENCH_DATA_DIR")
    if store.notice:
        print(f"kbench: {line(store.notice)}", file=sys.stderr)
    runner = _runner(args.scheduler, workers)
    if isinstance(runner, str):
        store.close()
        return _fail(runner)
    try:
        todo = plan(_per_task(jobs_for(samples, modes), bool(args.dist)), store)
        unstored = _grade_with_progress(todo, store, runner, grade)
    finally:
        runner.close()
        store.close()
    return 1 if problems or unstored else 0


def _per_task(jobs: list, keep_dists: bool) -> list:
    """Each job's mode with its task file's tolerance and distributions (``kbench.core.tasks.mode_for``; the nine
    declare none, so their jobs are unchanged). ``keep_dists``: the command line named the distributions."""
    from kbench.core.tasks import TASK, mode_for

    out = []
    for j in jobs:
        m = mode_for(TASK[j.sample.task], j.mode)
        if keep_dists and m.dists != j.mode.dists:
            m = m.with_dists(j.mode.dists)
        out.append(j if m == j.mode else dataclasses.replace(j, mode=m))
    return out


def _runner(scheduler: str | None, workers: int):  # noqa: ANN202 - a Runner, or an error message
    from kbench.store import default_path

    lock_dir = default_path().parent
    if scheduler is None:
        from kbench.batch.pool import LocalPool

        return LocalPool(workers, lock_dir)
    try:
        from kbench.batch.dask_runner import DaskRunner, DaskUnavailable
    except ImportError:
        return "--scheduler needs Dask: pip install 'kbench[dask]'"
    try:
        return DaskRunner(scheduler, correctness_workers=workers)
    except DaskUnavailable as e:
        return str(e)


_STYLE = {"correct": "green", "wrong": "red", "rejected": "yellow", "compile_error": "magenta",
          "runtime_error": "magenta", "not graded": "bold red"}


def _grade_with_progress(todo, store, runner, grade) -> int:  # noqa: ANN001
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from kbench.batch.pool import NotGraded
    from kbench.core.results import STATUSES
    from kbench.core.status import speedup_phrase
    from kbench_cli.text import line

    console = Console(stderr=True, highlight=False, emoji=False)
    counts: Counter[str] = Counter()
    n = len(todo.todo)
    print(f"{n} sample(s) to grade" + (f", {todo.already} already stored under the same key (resumed)"
                                      if todo.already else ""), file=sys.stderr)

    def tally() -> str:
        return "  ".join(f"[{_STYLE[s]}]{counts[s]} {s}[/]" for s in (*STATUSES, "not graded") if counts[s])

    live = console.is_terminal
    progress = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[tally]}"),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console,
                        disable=not live)
    done = 0
    with progress:
        bar = progress.add_task("grade", total=n, tally="")

        def on_result(job, result, stored: bool) -> None:  # noqa: ANN001
            nonlocal done
            done += 1
            counts["not graded" if isinstance(result, NotGraded) else result.status] += 1
            progress.update(bar, advance=1, tally=tally())
            head = f"[{done}/{n}] {line(job.sample.model)} {job.sample.task}/{line(job.sample.name)} {job.mode.name}: "
            if isinstance(result, NotGraded):
                text = head + f"not graded ({line(result.msg, 300)}); a re-run tries it again"
            else:
                t = result.timing
                text = (head + result.status + (f" {speedup_phrase(t.speedup, t.speedup_ci, t.noise)}" if t else "")
                        + ("" if stored else " (NOT STORED)"))
            if live:
                progress.console.print(text, markup=False)
            else:
                print(text, file=sys.stderr, flush=True)

        unstored = grade(todo.todo, store, runner, on_result)
    summary = ", ".join(f"{counts[s]} {s}" for s in (*STATUSES, "not graded") if counts[s]) or "nothing new"
    print(f"graded {done}: {summary}; results in {line(store.path or 'memory (not saved)')}; see `kbench scores`",
          file=sys.stderr)
    if unstored:
        print(f"kbench: {unstored} sample(s) not graded or not stored" + (f" ({line(store.notice)})" if store.notice else "")
              + "; run the same command again to retry them", file=sys.stderr)
    return unstored
