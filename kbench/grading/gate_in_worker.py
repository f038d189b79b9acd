"""The static gate, run where candidate text can do no harm: inside the candidate's fresh sandbox worker,
under the evaluation's deadline, before any candidate code runs there (so its answer is still the grader's).

Parsing and checking a hostile source can take memory (a 7000-deep expression makes ``ast.parse`` raise
MemoryError) or time (a quadratic alias chain): in the worker that is the worker's memory cap and the
evaluation's deadline, never the grading process's. Importing this module registers the gate with the
fork server, which imports it (and builds the gate's view of numpy) once, before it forks any worker.
"""

from __future__ import annotations

from kbench.grading import static_gate
from kbench.sandbox import server, worker


def check(src: str) -> tuple[list[tuple[str, int, str]], str]:
    """(findings as (rule, line, detail), or a one-line reason the source could not be checked)."""
    try:
        found = static_gate.check(src)
    except SyntaxError as e:
        return [], f"SyntaxError: {e.msg}" + (f" (line {e.lineno})" if e.lineno else "")
    except (MemoryError, RecursionError):  # the gate turns the parser's own into SyntaxError; this is a backstop
        return [], "SyntaxError: too deeply nested to parse"
    except (ValueError, TypeError) as e:  # NUL bytes, say
        return [], f"{type(e).__name__}: {e}"
    return [(r.rule, r.line, r.detail) for r in found], ""


def _preload_allowed_modules() -> None:
    """Import every module a candidate may import (the gate's allowed and inert modules) here, in the fork
    server: once its candidate's module runs a candidate worker opens no file (``confine.drop_reads``), and
    ``import cmath`` inside ``forward`` must still find the module."""
    import importlib

    for name in (*static_gate.ALLOWED_MODULES, *sorted(static_gate.INERT_IMPORTS)):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


worker.GATE = check
if __name__ not in server.PRELOAD:
    server.PRELOAD.append(__name__)
_preload_allowed_modules()
try:
    static_gate.prepare()  # what numpy offers, derived once here (and in the fork server), not per worker
except Exception:  # noqa: BLE001 - derived again at the first check, which reports any failure
    pass
