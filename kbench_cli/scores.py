"""``kbench scores``: per-model scores from the result store, models side by side (or JSON / CSV).

Exit codes: 0 scores printed, 1 no graded samples, 2 bad input or no store to read (the store's notice
says why: locked, KBENCH_DATA_DIR not a directory...). A store that moved a broken database aside, or is read
from a data directory kbench cannot write, says so on stderr first.
"""

from __future__ import annotations

import argparse
import csv
import sys

from kbench.core.strict_json import dumps
from kbench.batch.scores import K_GRID, P_GRID, Score
from kbench.core.results import STATUSES

EXIT_USAGE = 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("scores", help="per-model scores of graded samples: status rates, fast_p, fast_p@k, geomean")
    s.add_argument("--model", action="append", metavar="NAME", help="only this model (repeatable)")
    out = s.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the scores as one JSON list")
    out.add_argument("--csv", action="store_true", help="print the scores as CSV, one row per model, mode and level")
    s.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from kbench.batch.scores import scores
    from kbench.store import Store, stored_text
    from kbench_cli.text import line

    # read only: a data directory kbench cannot write is read as it is rather than replaced by an empty memory
    with Store(read_only_fallback=True) as store:
        if store.path is None:  # nothing to read: the store says why (locked, not a directory, ...)
            return _fail(f"kbench scores cannot read the result store ({store.notice})")
        if store.notice:  # read from a read-only copy, or a broken file moved aside: where it went
            print(f"kbench: {line(store.notice)}", file=sys.stderr)
        known = store.models()
        wanted = [stored_text(m) for m in args.model] if args.model else None  # the store keeps names escaped
        if wanted:
            unknown = [m for m in wanted if m not in known]
            if unknown:
                print("kbench: error: " + line(f"no graded samples for model {', '.join(map(repr, unknown))} "
                      f"(known: {', '.join(known) or 'none; run kbench grade first'})"), file=sys.stderr)
                return EXIT_USAGE
        rows = scores(store.all(), wanted)
        where = store.path or "memory"
    if not rows:
        print(f"kbench: no graded samples in {line(where)}; grade some with `kbench grade DIR`", file=sys.stderr)
        return 1
    # `kbench scores --csv | head`, a full disk: kbench_cli.streams, for every command
    if args.json:
        print(dumps([r.to_dict() for r in rows]))
    elif args.csv:
        _csv(rows)
    else:
        _tables(rows)
    return 0


def _fail(message: str) -> int:
    from kbench_cli.text import line

    print(f"kbench: error: {line(message)}", file=sys.stderr)
    return EXIT_USAGE



def _flat(r: Score) -> dict[str, object]:
    d: dict[str, object] = {"model": r.model, "mode": r.mode, "level": r.level, "tasks": r.tasks,
                            "samples": r.samples}
    d.update({f"{s}_rate": v for s, v in r.rates.items()})
    d.update({f"fast_{p:g}": v for p, v in r.fast_p.items()})
    d.update({f"fast_{p:g}_point": v for p, v in r.fast_p_point.items()})
    d.update({f"fast_1_at_{k}": v for k, v in r.fast_p_at_k.items()})
    d.update({f"fast_1_at_{k}_point": v for k, v in r.fast_p_at_k_point.items()})
    d["geomean_speedup"] = r.geomean_speedup
    d["machines"] = " | ".join(r.machines)
    d["isolation"] = " | ".join(r.isolation)
    return d


def _csv(rows: list[Score]) -> None:
    from kbench.store import text_cell

    flat = [_flat(r) for r in rows]
    w = csv.DictWriter(sys.stdout, fieldnames=list(flat[0]))
    w.writeheader()
    w.writerows({k: text_cell(v) for k, v in row.items()} for row in flat)


def _pct(v: float) -> str:
    return f"{v:.0%}" if v in (0.0, 1.0) else f"{v:.1%}"


def _tables(rows: list[Score]) -> None:
    from rich.console import Console
    from rich.table import Table

    from kbench_cli.text import cell, markup

    console = Console(highlight=False, emoji=False)
    columns = sorted({(r.model, r.mode) for r in rows})
    for level in sorted({r.level for r in rows}, key=lambda lv: (lv == "all", lv)):
        cells = {(r.model, r.mode): r for r in rows if r.level == level}
        first = next(iter(cells.values()))
        title = f"level {level}" if level != "all" else "all levels"
        table = Table(title=f"{title}: {first.tasks} tasks", title_justify="left",
                      caption="fast_p, fast_1@k: noise-aware \\[point estimate]", caption_justify="left")
        table.add_column("")
        for m, mode in columns:  # a model's name is a folder's name: never markup
            table.add_column(cell(m) + "\n" + cell(mode), justify="right")

        def row(label: str, fn) -> None:  # noqa: ANN001
            table.add_row(label, *(fn(cells[c]) if c in cells else "–" for c in columns))

        row("samples (tasks with samples)", lambda r: f"{r.samples} ({r.tasks_with_samples}/{r.tasks})")
        for s in STATUSES:
            row(f"{s.replace('_', ' ')}", lambda r, s=s: _pct(r.rates[s]))
        for p in P_GRID:
            row(f"fast_{p:g}", lambda r, p=p: f"{_pct(r.fast_p[p])} \\[{_pct(r.fast_p_point[p])}]" if r.timed
                else "untimed")
        for k in K_GRID:
            row(f"fast_1@{k}", lambda r, k=k: f"{_pct(r.fast_p_at_k[k])} \\[{_pct(r.fast_p_at_k_point[k])}]"
                if r.timed else "untimed")
        row("geomean speedup (correct)", lambda r: f"{r.geomean_speedup:.2f}x" if r.geomean_speedup else "–")
        console.print(table)
    seen: set[tuple[str, str]] = set()
    for r in rows:
        if r.level == "all" and (r.model, r.mode) not in seen:
            seen.add((r.model, r.mode))
            console.print(f"[bold]{markup(r.model)}[/] ({markup(r.mode)}): measured on "
                          f"{markup('; '.join(r.machines) or 'unknown')}; "
                          f"isolation layers: {markup('; '.join(r.isolation) or 'not recorded')}")
