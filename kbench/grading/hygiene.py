"""The hardened checks on one call, as a table: the fact the worker measured, what a breach is called,
and the mode flag that turns the check on. Any breach rejects the candidate (checked on timed calls too,
so a kernel cannot behave only while it is being checked).

Add a check here: a fact the worker reports about every call (``kbench.sandbox``'s call reply), a
sentence for the breach, and the ``Mode`` flag that enables it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kbench.core.modes import Mode


@dataclass(frozen=True)
class HygieneCheck:
    fact: str  # the call reply's field
    breach: Callable[[Any], str]  # the sentence, given the fact's value
    enabled: Callable[[Mode], bool]


CHECKS: tuple[HygieneCheck, ...] = (
    HygieneCheck("threads_started",
                 lambda n: f"started {n} thread(s) still running after forward() returned",
                 lambda m: m.exact_checks),
    HygieneCheck("inputs_changed",
                 lambda names: f"modified input {', '.join(map(str, names))} in place",
                 lambda m: m.exact_checks),
    HygieneCheck("aliases",
                 lambda names: f"output shares memory with {', '.join(map(str, names))}",
                 lambda m: m.exact_checks),
)


def first_breach(mode: Mode, facts: Callable[[str], Any]) -> str | None:
    """The first breach among the enabled checks, given a lookup of the call's facts."""
    for check in CHECKS:
        if check.enabled(mode):
            value = facts(check.fact)
            if value:
                return check.breach(value)
    return None
