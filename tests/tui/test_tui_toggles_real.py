"""The live distribution toggles on the real engine (one candidate each, a few seconds)."""

from __future__ import annotations

from tui_helpers import SIZE, idle, make_app, select


def _hardened_p0(app) -> str:  # type: ignore[no-untyped-def]
    s = app.model.scores()
    return f"{s.rows[0][2]:.2f}"


async def _evaluate(pilot, key: str):  # type: ignore[no-untyped-def]
    app = pilot.app
    await select(pilot, key)
    await pilot.press("e")
    await idle(pilot, timeout=90)
    return app.main_screen.selected()[1]


async def test_no_distribution_is_a_safe_harbour_for_no_max() -> None:
    # Lognormal and offset were once the only distributions with logits an unstabilised exp cannot take; every
    # distribution now carries a few (structured._hazards), so switching them off leaves no_max wrong, read off
    # the all-7 run at once
    app = make_app(evaluate=None)
    async with app.run_test(size=SIZE) as pilot:
        c = await _evaluate(pilot, "L1_softmax/no_max")
        screen, tree = app.main_screen, app.main_screen.query_one("#tree")
        assert app.model.verdict(c).result.status == "wrong"
        await pilot.press("4", "5")
        assert not screen.scheduler.busy
        assert app.model.verdict(c).result.status == "wrong"
        assert "✗ wrong" in tree.cursor_node.label.plain
        assert _hardened_p0(app) == "0.00"


async def test_edge_on_makes_no_eps_wrong() -> None:
    app = make_app(evaluate=None)
    async with app.run_test(size=SIZE) as pilot:
        c = await _evaluate(pilot, "L1_layernorm/no_eps")
        tree = app.main_screen.query_one("#tree")
        assert app.model.verdict(c).result.status == "correct"
        # the log names the OS layers that confined the candidate, as the result recorded them
        isolation = app.model.full(c).isolation
        assert "seccomp" in isolation and "landlock" in isolation
        assert "isolation: " + ", ".join(isolation) in app.main_screen.query_one("#log").plain
        await pilot.press("7")
        assert not app.main_screen.scheduler.busy
        assert app.model.verdict(c).result.status == "wrong"
        assert "edge" in app.model.verdict(c).result.msg
        assert "✗ wrong" in tree.cursor_node.label.plain


async def test_what_a_candidate_prints_shows_in_its_log(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kbench_tui.model import cid

    (tmp_path / "L1_gelu").mkdir()
    (tmp_path / "L1_gelu" / "chatty.py").write_text(
        '"""Honest GELU that talks."""\n'
        "def forward(x, params, alloc):\n"
        "    a = x['x']\n"
        "    print('inner loop done \\x1b[2J')\n"
        "    return 0.5 * a * (1 + np.tanh(0.7978845608 * (a + 0.044715 * a ** 3)))\n")
    app = make_app(evaluate=None, candidate_dirs=[tmp_path])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        c = next(c for c in app.model.candidates if c.name == "chatty")
        app.main_screen.query_one("#tree").select_data(("cand", cid(c)))
        await pilot.pause()
        await pilot.press("e")
        await idle(pilot, timeout=90)
        log = app.main_screen.query_one("#log").plain
        assert "printed: inner loop done \\x1b[2J" in log  # shown, and escaped: it cannot clear the screen
        assert app.model.full(c).stdout.startswith("inner loop done")
