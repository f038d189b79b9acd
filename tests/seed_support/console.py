"""The three printing helpers the lecture script imports from its course's ``console`` module."""

from rich.console import Console
from rich.table import Table

_console = Console(highlight=False, width=160)


def print_header(title: str) -> None:
    _console.rule(title)


def print_observations(lines: list[str]) -> None:
    for line in lines:
        _console.print(f"• {line}", markup=False)


def print_table(headers: list[str], rows: list[list[object]], aligns: list[str] | None = None) -> None:
    justify = {"<": "left", ">": "right", "^": "center"}
    table = Table(*headers)
    for i, col in enumerate(table.columns):
        col.justify = justify.get((aligns or [])[i] if aligns and i < len(aligns) else "<", "left")
    for row in rows:
        table.add_row(*(str(v) for v in row))
    _console.print(table)
