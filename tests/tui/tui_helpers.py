"""Helpers for the explorer's tests: build an app on the fake engine, wait for evaluations to end."""

from __future__ import annotations

import asyncio

from tui_fakes import FakeEngine

from kbench_tui.app import KbenchApp

SIZE = (200, 50)


def make_app(evaluate="fake", store=False, **kw) -> KbenchApp:  # type: ignore[no-untyped-def]
    """The fake engine and no database unless told: ``evaluate=None`` is the real engine, ``store=None``
    the default database (in the test's KBENCH_DATA_DIR)."""
    return KbenchApp(evaluate=FakeEngine() if evaluate == "fake" else evaluate, store=store, **kw)


async def idle(pilot, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until no evaluation is running or queued, then let the UI settle."""
    app = pilot.app
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        await pilot.pause()
        if not app.main_screen.scheduler.busy:
            await app.workers.wait_for_complete()
            await pilot.pause()
            # twice idle across a pause: a run a key queued may start only now, and a table whose cells the last
            # results changed lays its columns out on the next refresh (a snapshot taken before it had them narrow)
            if not app.main_screen.scheduler.busy:
                await pilot.pause()
                return
        await asyncio.sleep(0.02)
    raise AssertionError("evaluations did not finish in time")


def log_text(app) -> str:  # type: ignore[no-untyped-def]
    return app.main_screen.query_one("#log").plain


async def select(pilot, key: str) -> None:  # type: ignore[no-untyped-def]
    """Move the tree cursor to a candidate ('task/name', library)."""
    await pilot.pause()  # let the first paint's own cursor placement happen first
    tree = pilot.app.main_screen.query_one("#tree")
    tree.select_data(("cand", f"library:{key}"))
    await settled_selection(pilot)
    assert pilot.app.main_screen.selected()[1].key == key


async def settled_selection(pilot, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until the panes show the tree's selection: it is drawn after the next refresh
    (``MainScreen.on_candidate_tree_selected``), which one pause does not always reach on a loaded machine."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    await pilot.pause()
    while pilot.app.main_screen.selection_pending and loop.time() < end:
        await asyncio.sleep(0.01)
        await pilot.pause()
    assert not pilot.app.main_screen.selection_pending, "the selection was not drawn in time"
