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
    whichever ones its worker ran before, and one that left a task set registered (the explorer loads the
    sets its settings name) made the extra set's "off by default" fail there."""
    from kbench import usertasks

    usertasks.deactivate()
    yield
    usertasks.deactivate()


def pytest_collection_modifyitems(items: list) -> None:
    """The slow modules first: on two workers each module runs on one, and a long one started last (the lecture,
    ~2 min) would leave the other worker idle at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: the order within is kept

