"""The command's standard streams: a failed or closed stdout ends the command with one line, never a traceback.

``guarded()`` wraps one run of ``kbench_cli.cli.main``. On the way in it gives every closed standard
descriptor (``kbench list >&-``) /dev/null, so no file kbench opens later (the results database) lands on
descriptor 1 or 2 where a stray write would corrupt it, and puts guards around ``sys.stdout`` and
``sys.stderr``:

- stdout: the first write or flush that fails (the reader of a pipe left, the disk is full, stdout was
  closed) is remembered, descriptor 1 is pointed at /dev/null (the Python docs' recipe for SIGPIPE: the
  interpreter's own flush at exit then has nowhere to fail, so no "Exception ignored" line) and
  ``OutputError`` is raised, which ``main`` turns into its exit code: ``EXIT_PIPE_CLOSED`` quietly for a
  closed pipe, ``EXIT_OUTPUT_FAILED`` with ``kbench: cannot write the output: <why>`` for the rest. The
  failure is remembered because some callers catch every exception (the grader's event sink): the exit
  code says it all the same.
- stderr: a failed write is dropped (descriptor 2 is pointed at /dev/null too): diagnostics that cannot
  be shown must not stop a grading run whose results are being stored.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading
from typing import Any, Iterator, TextIO

#: A closed pipe (``kbench scores --csv | head``): 128 + SIGPIPE, what a shell reports for a program that
#: pipe ended; never a verdict (0/1), bad input (2) or a grader failure (3).
EXIT_PIPE_CLOSED = 141
#: Any other failed write to stdout (a full disk, a closed stdout): EX_IOERR of sysexits.h, for the same reason.
EXIT_OUTPUT_FAILED = 74


class OutputError(OSError):
    """stdout could not be written (an OSError, but never a BrokenPipeError: rich handles those itself by
    exiting with code 1, which would read as a verdict)."""


class _Guarded:
    """A text stream that remembers its first failed write and points its descriptor at /dev/null then."""

    def __init__(self, stream: TextIO, *, is_stdout: bool, closed: bool = False) -> None:
        self._stream = stream
        self._is_stdout = is_stdout
        self._closed = closed  # a failure once something is written (a command that writes nothing is fine)
        self.failure: OSError | None = None

    def _broken(self, e: OSError) -> None:
        if self.failure is None:
            self.failure = e
        _to_devnull(self._stream)
        if self._is_stdout:
            failure = self.failure
            raise OutputError(failure.errno, failure.strerror) from e
        # stderr: nothing more can be said; the command goes on and its exit code still tells

    def write(self, text: str) -> int:
        if self._closed and self.failure is None and text:
            self.failure = OSError(errno.EBADF, "standard output is closed" if self._is_stdout else "closed")
        if self.failure is not None:
            self._broken(self.failure)
            return len(text)
        try:
            return self._stream.write(text)
        except OSError as e:
            self._broken(e)
            return len(text)

    def writelines(self, lines: Any) -> None:
        for text in lines:
            self.write(text)

    def flush(self) -> None:
        if self.failure is not None:
            if self._is_stdout:
                self._broken(self.failure)
            return
        try:
            self._stream.flush()
        except OSError as e:
            self._broken(e)

    def isatty(self) -> bool:
        return self.failure is None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, buffer...: the real stream's
        return getattr(self._stream, name)


def _to_devnull(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null, so the data still buffered in it can be flushed."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def _fill_closed_descriptors() -> set[int]:
    """/dev/null on every closed standard descriptor; the ones that were closed."""
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    return closed


def _stream(current: TextIO | None, fd: int, mode: str) -> TextIO:
    if current is not None:
        return current
    return open(fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115


def stdout_failure() -> OSError | None:
    """Why stdout could not be written during this run, if it could not."""
    out = sys.stdout
    return out.failure if isinstance(out, _Guarded) else None


def _quiet_thread_failures(hook: Any) -> Any:
    """A threading.excepthook that says nothing of a failed stdout (the main thread reports it once)."""
    def excepthook(args: threading.ExceptHookArgs) -> None:
        if not isinstance(args.exc_value, OutputError):
            hook(args)

    return excepthook


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """The standard streams guarded for one run of the command (restored after: tests call ``main``)."""
    closed = _fill_closed_descriptors()
    saved = sys.stdin, sys.stdout, sys.stderr, threading.excepthook
    if sys.stdin is None:
        sys.stdin = _stream(None, 0, "r")
    sys.stdout = _Guarded(_stream(sys.stdout, 1, "w"), is_stdout=True, closed=1 in closed)  # type: ignore[assignment]
    sys.stderr = _Guarded(_stream(sys.stderr, 2, "w"), is_stdout=False)  # type: ignore[assignment]
    threading.excepthook = _quiet_thread_failures(threading.excepthook)
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr, threading.excepthook = saved
