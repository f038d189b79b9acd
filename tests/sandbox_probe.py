"""Run a snippet as candidate code in a real sandbox worker and get back the word it returns.

The snippet is the body of ``_attack()``; ``forward`` raises its outcome, so it comes back in the worker's
Failure message whatever the worker's role. Three ways to run it:

- ``candidate``: as every candidate runs (audit hook on, for readable refusals);
- ``reference``: every OS layer, no audit hook, no gate: the OS alone must stop it;
- ``native``: a candidate worker started with ``server.TEST_HARNESS = "native"`` — no audit hook, and
  ``ctypes``, ``libc`` and ``syscall(nr, *args) -> (rc, errno)`` in its namespace, as if its own native code
  ran there (what the threat model assumes a candidate can do with public numpy alone).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import pytest

from kbench.sandbox import protocol as P
from kbench.sandbox import server
from kbench.sandbox.arena import InputArena
from kbench.sandbox.server import Worker

RUNS = ("candidate", "reference", "native")

_TEMPLATE = '''
import os, sys, errno

def _each(**attempts):
    # Each named attempt (a callable) in turn: "name done" or "name blocked", joined by commas.
    words = []
    for name, attempt in attempts.items():
        try:
            got = attempt()
            words.append(name + (" blocked" if isinstance(got, tuple) and got[0] < 0 else " done"))
        except (OSError, RuntimeError, ValueError):
            words.append(name + " blocked")
    return ",".join(words)

def _attack():
{body}

def forward(x, params, alloc):
    try:
        outcome = _attack()
    except OSError as e:
        outcome = "blocked " + (errno.errorcode.get(e.errno, "?") if e.errno else type(e).__name__)
    except Exception as e:
        outcome = "blocked " + type(e).__name__
    raise RuntimeError("OUTCOME " + str(outcome))
'''


def source(body: str) -> str:
    return _TEMPLATE.format(body="\n".join("    " + line for line in body.strip().splitlines()))


@contextlib.contextmanager
def harness(name: str | None) -> Iterator[None]:
    saved, server.TEST_HARNESS = server.TEST_HARNESS, name
    try:
        yield
    finally:
        server.TEST_HARNESS = saved


def start(run: str, blas_threads: int = 1) -> Worker:
    with harness("native" if run == "native" else None):
        return Worker("reference" if run == "reference" else "candidate", blas_threads=blas_threads)


def skip_unless(w: Worker, needs: tuple[str, ...]) -> None:
    hello = w.layers()
    for layer in needs:
        if layer not in hello.active:
            reason = dict(hello.missing).get(layer, "not reported active")
            pytest.skip(f"the {layer} layer is missing on this machine: {reason}")


def ready(w: Worker, src: str) -> tuple[InputArena, tuple]:
    """Map a small inputs arena, load ``src`` as ``cand`` and give it an empty parameter set."""
    arena = InputArena(4096, 1, 4096, 1, "probe")
    x = arena.view("<f4", (16,), 0)
    x[:] = np.arange(16, dtype=np.float32)
    assert isinstance(w.call(P.MapArena("inputs", arena.size), 10.0, fd=arena.fd), P.Mapped)
    assert isinstance(w.call(P.Load(src, "cand"), 10.0), P.Loaded)
    assert isinstance(w.call(P.SetParams("p", (), {}), 10.0), P.ParamsKept)
    return arena, (P.array_spec("x", x, 0),)


def outcome(run: str, body: str, needs: tuple[str, ...] = (), blas_threads: int = 1) -> str:
    """Run the attack in a fresh worker; return its outcome word(s)."""
    with start(run, blas_threads) as w:
        skip_unless(w, needs)
        arena, spec = ready(w, source(body))
        k = w.run(P.Call("cand", "p", spec), 10.0, None)
        arena.close()
    assert isinstance(k.reply, P.Failure), k.reply
    assert "OUTCOME " in k.reply.error, k.reply.error
    return k.reply.error.split("OUTCOME ", 1)[1].split(" (line ")[0]
