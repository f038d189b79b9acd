"""Helpers a task file's parameter maker may import (``from kbench.taskkit import weight, signed``).

A task file (``kbench.core.taskfile``) is plain Python; these are the conventions kbench's own tasks use for
their parameters, offered so a new task draws its parameters the same way:

* ``weight(rng, (fan_in, fan_out), randomize)``: a float32 weight scaled by 1/sqrt(fan_in); a random draw also
  varies the overall gain (0.5-2x), so a kernel that bakes in the default scale fails;
* ``signed(rng, draw)``: a scalar of magnitude 0.5-2 whose sign alternates with ``draw`` (0: negative, 1:
  positive): a coin-flip sign would let a sign bug through one evaluation in four;
* ``sample(rng, dist, shape)``: a float32 array of one of kbench's input distributions (``normal``, ...).

Nothing here runs candidate code; a task file's parameter maker runs in the grading process only for the
task sets kbench ships, and in a confined worker for every other file (``kbench.usertasks``).
"""

from __future__ import annotations

import math

import numpy as np

from kbench.core import distributions

__all__ = ["F32", "sample", "signed", "weight"]

F32 = np.float32


def sample(rng: np.random.Generator, dist: str, shape: tuple[int, ...]) -> np.ndarray:
    """A float32 array of ``shape`` drawn from the named distribution (``kbench.core.distributions``)."""
    return distributions.sample(rng, dist, tuple(shape))


def weight(rng: np.random.Generator, shape: tuple[int, int], randomize: bool) -> np.ndarray:
    """W scaled by 1/sqrt(fan_in); random draws also vary the overall gain."""
    gain = rng.uniform(0.5, 2.0) if randomize else 1.0
    w = distributions.sample(rng, "normal", tuple(shape))  # float32, filled in place (no float64 pass, no copy)
    w *= F32(gain / math.sqrt(shape[0]))
    return w


def signed(rng: np.random.Generator, draw: int) -> float:
    """A scalar of magnitude 0.5-2 whose sign alternates with ``draw`` (0: negative, 1: positive)."""
    return float(rng.uniform(0.5, 2.0)) * (-1.0 if draw % 2 == 0 else 1.0)
