"""The candidate library: the candidates beside each task file of the lecture's set
(``kbench/tasksets/lecture/<task>/<name>.py``), plus those of any task set or folder registered later.

A candidate's intent (what the "LLM" tried) is the first line of its module docstring. Files are read
as text, never parsed or executed here: the docstring is read with the tokenizer, which stops at the first
statement, so a file that does not parse (or nests too deeply for the parser) still has a name, a source and an
intent ("(no docstring)" when none can be read).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from kbench.core.loader import MAX_SOURCE_BYTES  # one constant for every reader of a source
from kbench.core import tasks as _tasks
from kbench.core.taskfile import NOT_CANDIDATES
from kbench.core.tasks import TASK

__all__ = ["MAX_SOURCE_BYTES", "Candidate", "CandidateFileError", "LIBRARY", "LIBRARY_DIR", "active", "find",
           "intent_of", "library_for", "load_folder", "load_task_folder", "read_source", "register", "unregister"]

#: Where the shipped library lives: the lecture's task folders (package data, in a checkout and in a wheel alike),
#: each ``<task>/`` holding ``task.py`` and its candidates. ``KBENCH_LIBRARY`` replaces it (same layout).
LIBRARY_DIR = Path(os.environ.get("KBENCH_LIBRARY") or str(_tasks.TASKSETS_DIR / _tasks.LECTURE))

#: How much of a file the intent reader looks at: a docstring's first line is near the top.
_INTENT_SCAN_CHARS = 64_000


@dataclass(frozen=True)
class Candidate:
    task: str
    name: str
    intent: str
    src: str
    path: Path | None = None
    origin: str = "library"  # "library", "user" or a folder given with --candidates

    @property
    def key(self) -> str:
        return f"{self.task}/{self.name}"

    @functools.cached_property  # hashed once: the explorer looks results up by it for every view it draws
    def digest(self) -> str:
        """Content hash: stored results are keyed on it, so an edited file is evaluated afresh."""
        return hashlib.sha256(self.src.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _string_value(token: str) -> str | None:
    """The value of one string literal token, without the parser (None for bytes and f-strings)."""
    i = 0
    while i < len(token) and token[i] not in "'\"":
        i += 1
    prefix, body = token[:i].lower(), token[i:]
    if "b" in prefix or "f" in prefix:
        return None
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    body = body[len(quote):len(body) - len(quote)] if body.endswith(quote) and len(body) >= 2 * len(quote) else \
        body[len(quote):]
    if "r" in prefix or "\\" not in body:
        return body
    try:  # the escapes of a str literal: \n, \x41, \u00e9, \N{...}; other characters pass through
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except (UnicodeError, ValueError):
        return body


def _module_docstring(src: str) -> str | None:
    """The module docstring of ``src`` read from its first tokens: one or more string literals (optionally
    parenthesised) forming the first statement. None when the first statement is anything else."""
    tokens = tokenize.generate_tokens(io.StringIO(src[:_INTENT_SCAN_CHARS]).readline)
    parts: list[str] = []
    opened = 0
    for tok in tokens:
        if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING, tokenize.INDENT):
            continue
        if tok.type == tokenize.OP and tok.string == "(" and not parts:
            opened += 1
            continue
        if tok.type == tokenize.STRING:
            value = _string_value(tok.string)
            if value is None:
                return None
            parts.append(value)
            continue
        if tok.type == tokenize.OP and tok.string == ")" and parts and opened:
            opened -= 1
            continue
        if parts and not opened and (tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER)
                                     or tok.type == tokenize.OP and tok.string == ";"):
            return "".join(parts)
        return None
    return "".join(parts) if parts and not opened else None


def intent_of(src: str) -> str:
    """First line of the module docstring; found without executing or parsing anything (the tokenizer reads
    only as far as the first statement), so it is cheap on any file and never raises."""
    try:
        doc = _module_docstring(src)
    except Exception:  # noqa: BLE001 - tokenizer errors (unterminated strings, bad indentation, NUL bytes...)
        doc = None
        stripped = src[:_INTENT_SCAN_CHARS].lstrip()
        for quote in ('"""', "'''"):
            if stripped.startswith(quote):  # a broken file may still open with a readable docstring
                doc = stripped[3:].split(quote, 1)[0]
    try:
        doc = inspect.cleandoc(doc) if doc else None
    except Exception:  # noqa: BLE001 - never: cleandoc is plain string work, but intent_of must not raise
        pass
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else "(no docstring)"


class CandidateFileError(ValueError):
    """A candidate file that cannot even be read as text (the message is one line)."""


def read_source(path: Path, within: Path | None = None) -> str:
    """Read a candidate file as text with a clear one-line error for what cannot be read.

    Only a regular file is read (a FIFO would block the reader, /dev/zero never end: the file is opened
    without blocking and checked on its descriptor), at most ``MAX_SOURCE_BYTES``; ``within``: a folder the
    file must really lie in (a sample linked to a secret outside the folder it was found in is not read)."""
    if within is not None:
        real, root = os.path.realpath(path), os.path.realpath(within)
        if not real.startswith(root.rstrip(os.sep) + os.sep):
            raise CandidateFileError(f"{path} links outside {within}; not read")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise CandidateFileError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise CandidateFileError(f"{path} is a directory, not a candidate file")
        if not stat.S_ISREG(st.st_mode):
            raise CandidateFileError(f"{path} is not a regular file; not read")
        if st.st_size > MAX_SOURCE_BYTES:
            raise CandidateFileError(f"{path} is {st.st_size / 1e6:.1f} MB; candidate files are limited to "
                                     f"{MAX_SOURCE_BYTES / 1e6:.0f} MB")
        chunks, got = [], 0
        while got <= MAX_SOURCE_BYTES:  # a file growing while it is read stops at the limit too
            b = os.read(fd, MAX_SOURCE_BYTES + 1 - got)
            if not b:
                break
            chunks.append(b)
            got += len(b)
    except OSError as e:
        raise CandidateFileError(f"cannot read {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_SOURCE_BYTES:
        raise CandidateFileError(f"{path} is over {MAX_SOURCE_BYTES / 1e6:.0f} MB; candidate files are limited to "
                                 f"{MAX_SOURCE_BYTES / 1e6:.0f} MB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CandidateFileError(f"{path} is not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})") from None


def load_task_folder(task: str, folder: Path, origin: str, within: Path | None = None) -> list[Candidate]:
    """The candidates in one task's folder (every ``*.py`` beside its ``task.py``); unreadable files skipped, and
    files that lie outside ``within`` (default: the task's folder) are not read."""
    out: list[Candidate] = []
    for f in sorted(folder.glob("*.py")):
        if f.name in NOT_CANDIDATES:
            continue
        try:
            src = read_source(f, within=within or folder)
        except CandidateFileError:
            continue
        out.append(Candidate(task, f.stem, intent_of(src), src, f, origin))
    return out


def load_folder(folder: Path, origin: str) -> list[Candidate]:
    """Candidates in ``folder/<task>/*.py`` (a task's own ``task.py`` is not one); files that cannot be read are
    skipped with no crash."""
    out: list[Candidate] = []
    if not folder.is_dir():
        return out
    for task_dir in sorted(p for p in folder.iterdir() if p.is_dir() and p.name in TASK):
        out += load_task_folder(task_dir.name, task_dir, origin, within=folder)
    return out


def _task_order(c: Candidate) -> tuple[int, str]:
    names = list(TASK)
    return (names.index(c.task), c.name)


LIBRARY: tuple[Candidate, ...] = tuple(sorted(load_folder(LIBRARY_DIR, "library"), key=_task_order))
_EXTRA: list[Candidate] = []


def register(cands: "list[Candidate] | tuple[Candidate, ...]") -> None:
    """Candidates of registered tasks (a task set's own, a --tasks folder's) join ``active()``."""
    keys = {(c.origin, c.key) for c in _EXTRA}
    _EXTRA.extend(c for c in cands if (c.origin, c.key) not in keys)


def unregister(tasks: "list[str] | None" = None) -> None:
    """Forget registered candidates (of ``tasks``, or all)."""
    _EXTRA[:] = [] if tasks is None else [c for c in _EXTRA if c.task not in tasks]


def active() -> tuple[Candidate, ...]:
    """The library and every registered task's candidates, in task order."""
    return LIBRARY + tuple(_EXTRA)


def library_for(task: str) -> list[Candidate]:
    return [c for c in active() if c.task == task]


def find(task: str, name: str) -> Candidate:
    for c in active():
        if c.task == task and c.name == name:
            return c
    raise KeyError(f"no library candidate {task}/{name}")
