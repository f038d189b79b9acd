"""Turn candidate source into callables. This executes the candidate: call it only where that is safe
(the sandbox worker, or in-process for the trusted library as the lecture's demo 4 does).

A candidate loads the way a module does, so the Python it is written in behaves as in a file of its own:
its code is compiled with no compiler flags inherited from kbench (kbench's own ``from __future__ import
annotations`` must not turn the candidate's annotations into strings), and while its body runs it is a real
module registered in ``sys.modules`` under the name ``kbench.core.tasks.base_namespace`` gives it
(``dataclasses`` looks string annotations up there: without it every ``@dataclass`` with annotated fields
crashes at load under ``from __future__ import annotations``). The registration is removed when loading ends.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any, Callable

#: The largest candidate source kbench reads, parses, checks or loads (in UTF-8 bytes). One constant for every
#: reader: the library, ``kbench eval``/``grade``, the static gate and the loader.
MAX_SOURCE_BYTES = 1_000_000

_MISSING = object()


def source_bytes(src: str) -> int:
    """The size of ``src`` in UTF-8 (lone surrogates from undecodable files counted as 3 bytes)."""
    return len(src.encode("utf-8", "surrogatepass"))


def too_large(src: str) -> str | None:
    """A one-line reason when ``src`` is over ``MAX_SOURCE_BYTES``; cheap (no encoding) for small sources."""
    if len(src) * 4 <= MAX_SOURCE_BYTES:
        return None
    size = source_bytes(src)
    return None if size <= MAX_SOURCE_BYTES else \
        f"the source is {size:,} bytes; candidates are limited to {MAX_SOURCE_BYTES:,} bytes"


def _arity_error(fn: Callable[..., Any], name: str, n: int) -> str | None:
    try:
        inspect.signature(fn).bind(*([None] * n))
    except TypeError:
        return f"{name}() must accept {n} positional argument{'s' if n > 1 else ''}"
    except ValueError:  # builtins without a signature: let the call decide
        return None
    return None


def compile_candidate(src: str) -> types.CodeType:
    """``compile`` as a file of its own would be compiled (no inherited future flags). Raises SyntaxError for
    source nested too deeply for the parser (which itself raises MemoryError or RecursionError)."""
    try:
        return compile(src, "<candidate>", "exec", dont_inherit=True)
    except (MemoryError, RecursionError):
        raise SyntaxError("too deeply nested to parse") from None


def load_candidate(src: str, namespace: dict[str, Any]) -> tuple[Callable[..., Any] | None,
                                                               Callable[..., Any] | None, str | None]:
    """Execute ``src`` as a module whose globals start as a copy of ``namespace``; return (forward, init or
    None, error or None).

    Errors are one line: "SyntaxError: invalid syntax (line 3)", "NameError: name 'x' is not
    defined (line 7)", "no forward() defined", "forward() must accept 3 positional arguments".
    """
    big = too_large(src)
    if big:
        return None, None, f"ValueError: {big}"
    try:
        code = compile_candidate(src)
    except SyntaxError as e:
        return None, None, f"SyntaxError: {e.msg}" + (f" (line {e.lineno})" if e.lineno else "")
    except (ValueError, TypeError) as e:  # e.g. source with NUL bytes
        return None, None, f"{type(e).__name__}: {e}"
    name = str(namespace.get("__name__", "candidate"))
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    ns = module.__dict__
    previous = sys.modules.get(name, _MISSING)
    sys.modules[name] = module
    try:
        exec(code, ns)  # noqa: S102 - this is what loading a candidate means
    except BaseException as e:  # noqa: BLE001 - SystemExit/KeyboardInterrupt from a candidate are its errors too
        line = _candidate_line(e)
        return None, None, f"{type(e).__name__}: {e}" + (f" (line {line})" if line else "")
    finally:
        if previous is _MISSING:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
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
