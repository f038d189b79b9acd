"""Responsive layout, zoom, the scores panel and set, and the per-candidate log (fake engine)."""

from __future__ import annotations

from tui_helpers import idle, log_text, make_app, select

from kbench.core.library import LIBRARY


async def test_80x24_shows_the_candidate_and_the_log_and_s_shows_scores() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.main_screen
        await select(pilot, "L1_softmax/no_max")
        assert screen.has_class("-narrow") and screen.has_class("-short")
        cand, ref, log = (screen.query_one(s) for s in ("#cand-src", "#ref-src", "#log"))
        assert cand.region.width >= 40 and cand.region.height >= 5 and log.region.height >= 6
        assert not ref.display or ref.region.width == 0
        assert screen.query_one("#results").region.width == 0
        await pilot.press("s")
        assert screen.query_one("#results").region.width > 40 and screen.query_one("#centre").region.width == 0
        await pilot.press("s")
        await pilot.press("z")  # zoom: no tree, both sources
        assert screen.query_one("#tree").region.width == 0 and ref.region.width > 30 and cand.region.width > 30
        await pilot.press("z")
        assert screen.query_one("#tree").region.width > 0


async def test_120x30_has_both_sources_wide_enough_and_200x50_has_scores() -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.main_screen
        await select(pilot, "L1_softmax/no_max")
        assert screen.query_one("#ref-src").region.width >= 35 and screen.query_one("#cand-src").region.width >= 35
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        assert screen.has_class("-wide") and screen.query_one("#results").region.width == 44


async def test_the_log_is_per_candidate_titled_and_shows_follow_state() -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.main_screen
        await select(pilot, "L1_softmax/no_max")
        await pilot.press("e")
        await idle(pilot)
        log = screen.query_one("#log")
        assert log.border_title == "log · L1_softmax/no_max" and "on the 5 enabled distributions; the same on all 7 run" in log_text(app)
        await select(pilot, "L1_softmax/inplace")
        assert log.border_title == "log · L1_softmax/inplace"
        assert "no_max" not in log_text(app) and "nothing evaluated for L1_softmax/inplace" in log_text(app)
        await select(pilot, "L1_softmax/no_max")  # its history comes back
        assert "the same on all 7 run" in log_text(app)
        assert log.border_subtitle == "following"
        log.scroll_home(animate=False)
        await pilot.pause()
        assert log.border_subtitle.startswith("paused")
        log.focus()
        await pilot.press("end")
        await pilot.pause()
        assert log.border_subtitle == "following"


async def test_c_switches_which_candidates_the_scores_count() -> None:
    import dataclasses

    lib = next(c for c in LIBRARY if c.key == "L1_softmax/no_max")
    mine = dataclasses.replace(lib, name="my_softmax", origin="user")
    app = make_app(candidates=[*LIBRARY, mine])
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.main_screen.query_one("#fastp")
        assert table.evaluated[2] == len(LIBRARY)
        await pilot.press("c")
        assert table.evaluated[2] == 1 and app.model.scope == "mine"
        assert "your own" in table.counts and "your own" in table.border_subtitle
        await pilot.press("c")
        assert table.evaluated[2] == len(LIBRARY) + 1
