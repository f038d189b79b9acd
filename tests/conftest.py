"""Shared fixtures: one Grader per test session (its reference worker and reference outputs are reused)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("KBENCH_DATA_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), f"kbench-test-{os.getpid()}"))


@pytest.fixture(scope="session")
def grader():
    from kbench import Grader

    g = Grader(seed=12345)
    yield g
    g.close()


@pytest.fixture(autouse=True, scope="module")
def _lecture_registries_only():
    """Each module starts and ends with the lecture's task registries: on two workers a module runs after
    whichever modules its worker ran before, and none may see what another registered."""
    from kbench import usertasks

    usertasks.deactivate()
    yield
    usertasks.deactivate()


def pytest_collection_modifyitems(items: list) -> None:
    """The modules holding a slow test first: on two workers each module runs on one, and a long one started
    last (the lecture, ~2 min) would leave the other worker idle at the end. Whole modules move: sorting tests
    by their own mark put the extra set's parametrized verdicts (and their module fixture, which registers the
    set) before its "off by default" test."""
    slow = {item.module for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.module not in slow)  # whole modules move: the order within one is kept
