"""Snapshots of the four screens, on fake results (deterministic: fixed theme, size, no dates)."""

from __future__ import annotations

import pytest
from tui_helpers import SIZE, idle, make_app, select
from tui_fakes import fake_result

from kbench.core.modes import NAIVE
from kbench_tui.model import EXPLORER_HARDENED

SELECTED = "L1_softmax/no_max"


def _seeded():  # type: ignore[no-untyped-def]
    app = make_app()
    for c in app.model.candidates:
        if c.key != SELECTED:
            app.model.record(c.digest, c.task, fake_result(c.task, c.name, NAIVE))
            app.model.record(c.digest, c.task, fake_result(c.task, c.name, EXPLORER_HARDENED))
    return app


async def _main(pilot) -> None:  # type: ignore[no-untyped-def]
    pilot.app.theme = "textual-dark"
    await select(pilot, SELECTED)
    await pilot.press("b")  # streams the fake engine's (fixed) step events into the log
    await idle(pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 30), (200, 50)], ids=["80x24", "120x30", "200x50"])
def test_main_screen(snap_compare, size) -> None:  # type: ignore[no-untyped-def]
    """The responsive layout: at 80x24 the candidate and the log beside a narrow tree; at 120x30 both
    sources, scores on s; at 200x50 everything."""
    assert snap_compare(_seeded(), terminal_size=size, run_before=_main)


def test_narrow_zoomed_with_scores(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _main(pilot)
        await pilot.press("z")

    assert snap_compare(_seeded(), terminal_size=(80, 24), run_before=before)


def test_narrow_scores(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _main(pilot)
        await pilot.press("s")

    assert snap_compare(_seeded(), terminal_size=(80, 24), run_before=before)


def test_main_screen_diff_naive(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _main(pilot)
        await pilot.press("m", "d")

    assert snap_compare(_seeded(), terminal_size=SIZE, run_before=before)


def test_matrix(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _main(pilot)
        await pilot.press("v", "t")

    assert snap_compare(_seeded(), terminal_size=SIZE, run_before=before)


def test_editor(snap_compare, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KBENCH_DATA_DIR", "/home/student/.local/share/kbench")  # shown on screen; nothing is saved

    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        pilot.app.theme = "textual-dark"
        await select(pilot, SELECTED)
        await pilot.press("n")
        await pilot.pause()
        editor = pilot.app.screen.query_one("#editor")
        editor.cursor_blink = False
        pilot.app.screen.query_one("#editor-name").cursor_blink = False

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=before)


def test_help(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        pilot.app.theme = "textual-dark"
        await pilot.press("f1")

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=before)
