"""Turn candidate source into callables. This executes the candidate: call it only where that is safe
(the sandbox worker, or in-process for the trusted library as the lecture's demo 4 does)."""

from __future__ import annotations

import inspect
from typing import Any, Callable


def _arity_error(fn: Callable[..., Any], name: str, n: int) -> str | None:
    try:
        inspect.signature(fn).bind(*([None] * n))
    except TypeError:
        return f"{name}() must accept {n} positional argument{'s' if n > 1 else ''}"
    except ValueError:  # builtins without a signature: let the call decide
        return None
    return None


def load_candidate(src: str, namespace: dict[str, Any]) -> tuple[Callable[..., Any] | None,
                                                               Callable[..., Any] | None, str | None]:
    """Execute ``src`` in a copy of ``namespace``; return (forward, init or None, error or None).

    Errors are one line: "SyntaxError: invalid syntax (line 3)", "NameError: name 'x' is not
    defined (line 7)", "no forward() defined", "forward() must accept 3 positional arguments".
    """
    ns = dict(namespace)
    try:
        code = compile(src, "<candidate>", "exec")
    except SyntaxError as e:
        return None, None, f"SyntaxError: {e.msg}" + (f" (line {e.lineno})" if e.lineno else "")
    except (ValueError, TypeError) as e:  # e.g. source with NUL bytes
        return None, None, f"{type(e).__name__}: {e}"
    try:
        exec(code, ns)  # noqa: S102 - this is what loading a candidate means
    except BaseException as e:  # noqa: BLE001 - SystemExit/KeyboardInterrupt from a candidate are its errors too
        line = _candidate_line(e)
        return None, None, f"{type(e).__name__}: {e}" + (f" (line {line})" if line else "")
    fwd = ns.get("forward")
    if not callable(fwd):
        return None, None, "no forward() defined" if fwd is None else "forward is not callable"
    err = _arity_error(fwd, "forward", 3)
    if err:
        return None, None, err
    init = ns.get("init")
    if init is not None and not callable(init):
        return None, None, "init is not callable"
    if init is not None:
        err = _arity_error(init, "init", 1)
        if err:
            return None, None, err
    return fwd, init, None


def _candidate_line(e: BaseException) -> int | None:
    tb, line = e.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<candidate>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def error_line(e: BaseException) -> str:
    """One line for an exception raised by candidate code, pointing at the candidate's line."""
    line = _candidate_line(e)
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}"[:300] + (f" (line {line})" if line else "")
