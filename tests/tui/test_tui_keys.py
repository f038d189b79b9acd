"""Every key of the explorer, driven through Pilot on the fake engine."""

from __future__ import annotations

import threading
from pathlib import Path

from tui_helpers import SIZE, idle, log_text, make_app, select
from tui_fakes import FakeEngine

from kbench.core.distributions import ALL_DISTS, DISTS
from kbench.store import Store
from kbench_tui.screens.editor import EditorScreen
from kbench_tui.screens.help import HelpScreen
from kbench_tui.screens.main import MainScreen
from kbench_tui.screens.matrix import MatrixScreen


def _verdicts(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.main_screen.query_one("#verdicts").render())


async def test_first_paint_and_browse() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = app.main_screen
        assert isinstance(app.screen, MainScreen)
        assert screen.selected()[1].key == "L1_diag_matmul/einsum_diag"  # both sources on first paint
        assert "einsum" in screen.query_one("#cand-src").text and "np.diag" in screen.query_one("#ref-src").text
        await pilot.press("down", "down")
        assert screen.selected()[1].key == "L1_diag_matmul/hack_stale_alloc"
        await pilot.press("up")
        assert screen.selected()[1].key == "L1_diag_matmul/hack_cache_on_input"
        await pilot.press("up", "up")
        assert screen.selected() == ("L1_diag_matmul", None)  # a task node: its reference, no candidate
        assert screen.check_action("evaluate", ()) is None  # greyed: nothing to evaluate
        # the mouse: click a row of the tree
        await pilot.click("#tree", offset=(8, 6))  # row 5 under the border
        assert screen.selected()[1].key == "L1_diag_matmul/row_scale"


async def test_e_evaluates_in_current_mode_and_badges_update() -> None:
    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await idle(pilot)
        assert engine.calls == [("L1_diag_matmul", "einsum_diag", "hardened", ALL_DISTS)]
        log = log_text(app)
        assert "trial 7/7 edge" in log and "verdict: ✓ correct" in log and "on the 5 enabled distributions; the same on all 7 run" in log
        tree = app.main_screen.query_one("#tree")
        assert "✓" in tree.cursor_node.label.plain
        assert "✓ correct" in _verdicts(app)
        # e again on a known result does not re-run; r does
        await pilot.press("e")
        await idle(pilot)
        assert len(engine.calls) == 1 and "r re-runs" in log_text(app)
        await pilot.press("r")
        await idle(pilot)
        assert len(engine.calls) == 2


async def test_m_switches_mode_and_b_evaluates_both() -> None:
    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.main_screen
        await select(pilot, "L1_softmax/no_max")
        await pilot.press("m")
        assert screen.model.mode == "naive"
        assert "KernelBench v0" in screen.query_one("#status").render_text()
        await pilot.press("e")
        await idle(pilot)
        assert engine.calls[-1][2:] == ("naive", ("normal",))
        await pilot.press("b")  # naive is known: only hardened runs
        await idle(pilot)
        assert [c[2] for c in engine.calls] == ["naive", "hardened"]
        v = _verdicts(app)
        assert "naive" in v and "✓ correct" in v and "✗ wrong" in v
        await pilot.press("m")
        assert screen.model.mode == "hardened"


async def test_a_evaluates_everything_with_progress_then_nothing_left() -> None:
    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.main_screen
        n = len(screen.model.candidates)
        await pilot.press("a")
        assert screen.scheduler.batch_total == 2 * n
        assert "all" in screen.query_one("#status").render_text()
        assert screen.check_action("evaluate_all", ()) is None  # greyed while it runs
        await idle(pilot)
        # an error before any trial holds for every distribution set: no extra run on the enabled ones
        assert len(engine.calls) == 2 * n
        assert ("L1_layernorm", "numba_jit", "hardened", DISTS) not in engine.calls
        assert screen.model.evaluated("naive") == n == screen.model.evaluated("hardened")
        assert "background evaluation finished" in log_text(app)
        assert screen.query_one("#fastp").evaluated == (n, n, n)
        await pilot.press("a")  # nothing left to do: no new evaluation
        await pilot.pause()
        assert len(engine.calls) == 2 * n


async def test_escape_cancels_background_work_and_ui_stays_responsive() -> None:
    gate = threading.Event()
    engine = FakeEngine(gate)
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.main_screen
        await pilot.press("a")
        await pilot.pause()
        assert screen.scheduler.busy
        # browsing and toggles respond while a background evaluation is held mid-run
        await pilot.press("down", "down", "7")
        assert screen.selected()[1].name == "hack_stale_alloc" and "edge" in screen.model.enabled
        await pilot.press("escape")
        assert not screen.scheduler.queues["batch"]
        gate.set()
        await idle(pilot)
        assert len(engine.calls) == 1
        assert "cancelled" in log_text(app)
        assert screen.check_action("cancel", ()) is None


async def test_number_keys_toggle_distributions() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = app.main_screen
        for i, d in enumerate(ALL_DISTS, 1):
            before = d in screen.model.enabled
            await pilot.press(str(i))
            assert (d in screen.model.enabled) != before
            await pilot.press(str(i))
            assert (d in screen.model.enabled) == before
        assert screen.model.enabled == DISTS
        status = screen.query_one("#status").render_text()
        assert "○exponential" in status and "●normal" in status


async def test_d_toggles_the_diff() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_softmax/no_max")
        pane = app.main_screen.query_one("#diff-pane")
        assert not pane.display
        await pilot.press("d")
        assert pane.display and not app.main_screen.query_one("#sources").display
        diff = str(app.main_screen.query_one("#diff").render())
        assert '-     e = np.exp(x - x.max(axis=-1, keepdims=True))' in diff
        assert '+     e = np.exp(x["x"])' in diff
        await pilot.press("d")
        assert not pane.display


async def test_v_opens_the_matrix() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_softmax/no_max")
        await pilot.press("e")
        await idle(pilot)
        await pilot.press("v")
        assert isinstance(app.screen, MatrixScreen)
        table = app.screen.query_one("#matrix")
        assert table.row_count == 4
        row = [str(c) for c in table.get_row_at(1)]
        assert row[0] == "no_max" and row[5] == "✗ 0/1" and row[2] == "✓ 1/1"
        await pilot.press("t")
        assert table.row_count == len(app.model.candidates)
        await pilot.press("4", "5")  # toggles work here too
        assert "lognormal" not in app.model.enabled
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_f1_and_question_mark_open_help() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        for key in ("f1", "question_mark"):
            await pilot.press(key)
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, MainScreen)


async def test_x_exports_and_names_the_files(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    app = make_app(store=store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down", "e")
        await idle(pilot)
        await pilot.press("x")
        await pilot.pause()
        files = sorted((tmp_path / "exports").iterdir())
        assert [f.suffix for f in files] == [".csv", ".json"]
        notes = [str(n.message) for n in app._notifications]
        assert any(str(files[0]) in m and str(files[1]) in m for m in notes)


async def test_n_opens_the_editor_from_the_selected_candidate_and_discarding_asks() -> None:
    from kbench_tui.screens.editor import ConfirmDiscard

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_gelu/exact_erf")
        await pilot.press("n")
        assert isinstance(app.screen, EditorScreen)
        assert app.screen.query_one("#editor").text == app.main_screen.selected()[1].src  # starts from it
        assert app.screen.query_one("#editor-name").value == "exact_erf_1"  # a library file: a copy
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("n", "x")  # an edit: Esc asks; n keeps editing, y discards
        await pilot.press("escape")
        assert isinstance(app.screen, ConfirmDiscard)
        await pilot.press("n")
        assert isinstance(app.screen, EditorScreen) and app.screen.dirty
        await pilot.press("escape", "y")
        assert isinstance(app.screen, MainScreen)
        tree = app.main_screen.query_one("#tree")
        await pilot.press("up")
        while app.main_screen.selected()[1] is not None:
            await pilot.press("up")
        await pilot.press("n")  # on a task node: the reference, as a new file
        assert app.screen.query_one("#editor-name").value == "my_kernel_1"
        assert tree is not None


async def test_editor_auto_indents_and_selects_all() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_gelu/exact_erf")
        await pilot.press("n")
        ta = app.screen.query_one("#editor")
        ta.load_text("def forward(x, params, alloc):")
        ta.move_cursor((0, len(ta.text)))
        await pilot.press("enter", *"y = 1", "enter")
        assert ta.text == "def forward(x, params, alloc):\n    y = 1\n    "
        await pilot.press("ctrl+a")
        assert ta.selected_text == ta.text


async def test_q_quits() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


async def test_every_key_is_in_the_palette_and_help() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down")
        names = [c.title for c in app.get_system_commands(app.main_screen)]
        for want in ("evaluate (e)", "mode (m)", "both (b)", "all (a)", "diff (d)", "matrix (v)", "new (n)",
                     "export (x)", "re-run (r)", "help (F1/?)", "toggle edge (7)", "zoom (z)", "scores (s)",
                     "count (c)", "edit/new (n)"):
            assert any(want in n for n in names), want
        ids = {b.id for b in MainScreen.BINDINGS}
        assert len(ids) == len(MainScreen.BINDINGS) and None not in ids
        await pilot.press("f1")
        md = app.screen._md
        for key in ("`e`", "`m`", "`b`", "`a`", "`escape`", "`1`", "`4`", "`7`", "`d`", "`v`", "`n`", "`x`", "`r`",
                    "`q`", "`F1, ?`", "`↑ ↓`", "`z`", "`s`", "`c`"):
            assert key in md, key


async def test_palette_runs_a_key_and_themes_switch() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"kbench: diff")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.main_screen.query_one("#diff-pane").display
        tree = app.main_screen.query_one("#tree")
        first = tree.root.children[0].children[0].children[0]
        before = first.label.plain
        app.theme = "textual-light"
        await pilot.pause()
        assert app.theme == "textual-light" and app.current_theme.dark is False
        assert first.label.plain == before and before  # the badges survive a theme change
        app.theme = "textual-dark"
        await pilot.pause()
        assert app.current_theme.dark is True


async def test_code_follows_light_and_dark_and_the_theme_is_remembered() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await idle(pilot)
        log = app.main_screen.query_one("#log")
        verdict = next(t for t in log.texts if "✓ correct" in t.plain)
        app.theme = "textual-light"
        await pilot.pause()
        assert app.main_screen.query_one("#cand-src").theme == "github_light"
        light_ok = app.theme_variables["text-success"]
        assert any(light_ok in str(span.style) for span in verdict.spans)  # the log recoloured too
        app.theme = "textual-dark"
        await pilot.pause()
        assert app.main_screen.query_one("#ref-src").theme == "vscode_dark"
        app.theme = "textual-light"
        await pilot.pause()
    again = make_app()
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.theme == "textual-light"
        assert again.main_screen.query_one("#cand-src").theme == "github_light"
        await pilot.press("n")
        assert again.screen.query_one("#editor").theme == "github_light"


async def test_screenshot_from_the_palette_without_a_downloads_folder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/Downloads
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.deliver_screenshot()  # what the palette's "Screenshot" command calls
        for _ in range(50):
            await pilot.pause(0.05)
            if list((tmp_path / "exports").glob("*.svg")):
                break
        assert list((tmp_path / "exports").glob("*.svg"))


async def test_ctrl_s_saves_everything_typed_before_it(tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_gelu/exact_erf")
        await pilot.press("n")
        app.screen.query_one("#editor-name").value = "typed"
        await pilot.press("ctrl+a", *'"""Typed fast."""', "ctrl+s")
        await idle(pilot)
        path = tmp_path / "data" / "candidates" / "L1_gelu" / "typed.py"
        assert path.read_text() == '"""Typed fast."""'


async def test_the_tree_posts_a_typed_selection_the_panes_follow() -> None:
    from kbench_tui.widgets.candidate_tree import CandidateTree

    seen: list[CandidateTree.Selected] = []

    def hook(message) -> None:  # type: ignore[no-untyped-def]
        if isinstance(message, CandidateTree.Selected):
            seen.append(message)

    app = make_app()
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        screen = app.main_screen
        await pilot.press("down")
        await pilot.pause()
        last = seen[-1]
        assert (last.task, last.candidate) == screen.selected()
        assert last.candidate.key == "L1_diag_matmul/hack_cache_on_input"
        assert "hack_cache_on_input" in str(screen.query_one("#log").border_title)  # the log follows it
        await pilot.press("up", "up")
        await pilot.pause()
        assert (seen[-1].task, seen[-1].candidate) == ("L1_diag_matmul", None)  # a task node: no candidate
