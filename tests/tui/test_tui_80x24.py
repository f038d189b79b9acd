"""80x24 first (issue 19): at the default terminal size a new user sees a candidate's code after one
arrow key, one verdict line per evaluation, whole names in the tree, and a within-noise estimate kept."""

from __future__ import annotations

from tui_fakes import FakeEngine, fake_result
from tui_helpers import idle, log_text, make_app, select

from kbench.core.library import LIBRARY
from kbench.core.results import Result, Timing
from kbench_tui.widgets.source_view import docstring_span

SMALL = (80, 24)


def _visible_lines(ta) -> list[str]:  # type: ignore[no-untyped-def]
    top = int(ta.scroll_offset.y)
    rows = ta.scrollable_content_region.height
    return [ta.document.get_line(i) for i in range(top, min(top + rows, ta.document.line_count))]


async def test_one_arrow_key_shows_the_candidates_code() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("down")  # from the first candidate to the next one, as a new user would
        await pilot.pause()
        await pilot.pause()
        _, cand = app.main_screen.selected()
        assert cand is not None
        cta = app.main_screen.query_one("#cand-src")
        shown = _visible_lines(cta)
        last_doc, first_code = docstring_span(cand.src)  # type: ignore[misc]
        assert int(cta.scroll_offset.y) == first_code  # the docstring is folded away
        assert any(line.startswith(("def ", "import ", "from ")) for line in shown), shown
        assert f"lines 1–{last_doc + 1}" in cta._border_subtitle.plain  # and the border says where it went
        # a tall terminal has room for both: nothing is folded there
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        await pilot.pause()
        assert int(cta.scroll_offset.y) == 0 and cta.border_subtitle is None


async def test_e_writes_one_verdict_line_at_80x24() -> None:
    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await select(pilot, "L1_gelu/cube_by_mult")
        await pilot.press("e")
        await idle(pilot)
        lines = log_text(app).splitlines()
        assert sum(line.lstrip().startswith("verdict") for line in lines) == 1, lines
        assert engine.calls


async def test_names_are_whole_in_the_tree_at_80_columns() -> None:
    app = make_app()
    for c in app.model.candidates:  # badges of every kind, so the widest badges are on screen
        from kbench_tui.model import EXPLORER_HARDENED

        app.model.record(c.digest, c.task, fake_result(c.task, c.name, EXPLORER_HARDENED))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        tree = app.main_screen.query_one("#tree")
        tree.refresh_badges(app.model)
        labels = [node.label.plain for node in tree._walk(tree.root) if node.data and node.data[0] == "cand"]
        room = tree.scrollable_content_region.width - 4
        for c in LIBRARY:
            assert any(lbl.startswith(c.name + " ") for lbl in labels), c.name  # whole, never "hack_cac…"
        assert all(len(lbl.rstrip()) <= room for lbl in labels), [lbl for lbl in labels if len(lbl.rstrip()) > room]


class NoiseEngine(FakeEngine):
    """Every candidate is correct at 0.75x with the interval 0.46-1.72 (within noise)."""

    def __call__(self, task, src, mode, cand_name=None, **kw):  # type: ignore[no-untyped-def]
        super().__call__(task, src, mode, cand_name, **kw)
        t = Timing(method="interleaved", t_ref=0.01, t_cand=0.01 / 0.75, speedup=0.75, speedup_ci=(0.46, 1.72),
                   n_samples=12, noise=True)
        return Result(str(task), cand_name, mode.name, mode.dists, "correct", "0.75x", [], t)


async def test_within_noise_keeps_the_estimate_in_badge_verdict_row_and_log() -> None:
    app = make_app(NoiseEngine())
    async with app.run_test(size=(200, 50)) as pilot:
        await select(pilot, "L1_gelu/cube_by_mult")
        await pilot.press("e")
        await idle(pilot)
        verdicts = str(app.main_screen.query_one("#verdicts").render())
        assert "✓ correct, 0.75× [0.46–1.72] at 95%, within noise" in verdicts
        assert "✓ correct, 0.75× [0.46–1.72] at 95%, within noise" in log_text(app)
        tree = app.main_screen.query_one("#tree")
        label = next(n.label.plain for n in tree._walk(tree.root) if n.data == ("cand", "library:L1_gelu/cube_by_mult"))
        assert "≈0.75×" in label and "1.0×" not in label
