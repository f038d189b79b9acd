"""Defences as switches (g, N, H, the palette, F1) and the matrix's hack × defence view (f, r, x).

The fake engine for the keys; the real engine, correctness only, for the one flip the issue names:
NaN-filled alloc off makes ``L1_diag_matmul/hack_stale_alloc`` correct."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from tui_helpers import SIZE, idle, make_app, select

from kbench.core import defences as catalogue
from kbench_tui.screens.defences import DefenceScreen
from kbench_tui.screens.main import MainScreen
from kbench_tui.screens.matrix import MatrixScreen


def _correctness_only_engine():  # type: ignore[no-untyped-def]
    """The real engine without the timing step: cheap, and enough for a verdict that is correct or not."""
    from kbench.grading.pipeline import evaluate
    from kbench_tui.app import prepare_engine

    prepare_engine()  # the fork server starts while stderr is still a file (as the app does for the real engine)

    def run(task, src, mode, name=None, **kw):  # type: ignore[no-untyped-def]
        return evaluate(task, src, dataclasses.replace(mode, timing=None, time_wrong=False), name, **kw)

    return run


async def _switch(pilot, name: str) -> None:  # type: ignore[no-untyped-def]
    """On the defences screen: move to ``name``'s row and press space."""
    screen = pilot.app.screen
    assert isinstance(screen, DefenceScreen)
    screen.query_one("#defences").move_cursor(row=catalogue.NAMES.index(name))
    await pilot.press("space")
    await pilot.pause()


async def test_nan_alloc_off_flips_hack_stale_alloc_to_correct_on_the_real_engine() -> None:
    app = make_app(evaluate=_correctness_only_engine())
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_diag_matmul/hack_stale_alloc")
        await pilot.press("e")
        await idle(pilot, timeout=120)
        screen, model = app.main_screen, app.model
        c = screen.selected()[1]
        assert model.verdict(c).result.status == "wrong" and "NaN" in model.verdict(c).result.msg
        await pilot.press("g")
        await _switch(pilot, "nan_alloc")
        assert model.off == {"nan_alloc"}
        # it changes the run: not derivable, so it runs in the background and the log says so until it lands
        assert "need a run of their own without nan_alloc" in screen.query_one("#log").plain
        await idle(pilot, timeout=120)
        assert "landed: L1_diag_matmul/hack_stale_alloc, its own run without nan_alloc" in \
            screen.query_one("#log").plain
        assert model.verdict(c).result.status == "correct"
        assert "✓" in screen.query_one("#tree").cursor_node.label.plain
        assert "hack_stale_alloc: ✓" in str(app.screen.query_one("#defences-title").render())
        await _switch(pilot, "nan_alloc")  # back on: the hardened run's verdict, at once
        assert not screen.scheduler.busy and model.verdict(c).result.status == "wrong"


async def test_the_gate_off_lets_a_gate_rejected_attack_load_on_the_real_engine(tmp_path: Path) -> None:
    from kbench_tui.model import cid

    (tmp_path / "L1_gelu").mkdir()
    src = (Path(__file__).parent.parent / "adversarial" / "allclose_patch.py").read_text()
    (tmp_path / "L1_gelu" / "allclose_patch.py").write_text(src)
    app = make_app(evaluate=_correctness_only_engine(), candidate_dirs=[tmp_path])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        c = next(c for c in app.model.candidates if c.name == "allclose_patch")
        app.main_screen.query_one("#tree").select_data(("cand", cid(c)))
        await pilot.pause()
        await pilot.press("e")
        await idle(pilot, timeout=120)
        assert app.model.verdict(c).result.status == "rejected" and "module-patch" in app.model.verdict(c).result.msg
        await pilot.press("g")
        await _switch(pilot, "gate")
        await idle(pilot, timeout=120)
        r = app.model.verdict(c).result
        assert r.status == "wrong" and r.trials, (r.status, r.msg)  # it loaded and ran; the grader judged it


async def test_fresh_inputs_and_roofline_off_let_the_content_hash_hack_through_on_the_real_engine() -> None:
    """One switch needs its own run (fresh inputs: the cache hits), the other is derived on top of that run
    (the roofline floor that still rejected the hits as implausibly fast). Verdicts only: how fast the hits read
    is measured in benchmarks/naive_fooled.py."""
    app = make_app(evaluate=None)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L3_mlp_block/hack_content_hash")
        await pilot.press("e")
        await idle(pilot, timeout=120)
        c, model = app.main_screen.selected()[1], app.model
        assert model.verdict(c).result.status == "correct" and not model.verdict(c).result.breaches
        await pilot.press("g")
        await _switch(pilot, "fresh_inputs")
        await idle(pilot, timeout=120)
        fresh_off = model.verdict(c).result
        assert fresh_off.timing is not None  # how fast its hits read: benchmarks/naive_fooled.py
        # Implausibly fast is a judgement on measured times: idle, the hits fall below a quarter of the roofline
        # floor; with a busy loop beside the suite they did not always (a037422, CI under load).
        assert (fresh_off.status == "rejected" and "roofline_floor" in fresh_off.breaches) \
            or (fresh_off.status == "correct" and "roofline_floor" not in fresh_off.breaches), fresh_off.msg
        await _switch(pilot, "roofline_floor")
        assert not app.main_screen.scheduler.busy  # derived from the run without fresh inputs
        assert model.verdict(c).result.status == "correct"


async def test_g_shows_every_defence_and_a_derived_switch_redraws_without_a_run() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_softmax/no_max")
        await pilot.press("e")
        await idle(pilot)
        await pilot.press("g")
        assert isinstance(app.screen, DefenceScreen)
        table = app.screen.query_one("#defences")
        assert table.row_count == len(catalogue.DEFENCES)
        for i, d in enumerate(catalogue.DEFENCES):
            row = [str(v) for v in table.get_row_at(i)]
            assert row[0] == "● on" and row[1] == d.name and row[2] == d.title and row[4] == d.catches
            assert row[3] == ("derived" if d.derived else "own run")
        c = app.main_screen.selected()[1]
        await _switch(pilot, "property_checks")
        assert app.model.off == {"property_checks"} and not app.main_screen.scheduler.busy
        assert app.model.verdict(c) is not None  # derived: known at once, nothing queued
        assert str(table.get_row_at(catalogue.NAMES.index("property_checks"))[0]) == "○ off"
        assert "def 13/14" in app.main_screen.query_one("#status").render_text()
        await pilot.press("enter")  # enter switches the highlighted one too
        assert app.model.off == set()
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("g", "g")  # g closes it too
        assert isinstance(app.screen, MainScreen)


async def test_presets_reproduce_the_naive_and_hardened_verdicts_exactly() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        for key in ("L1_softmax/no_max", "L1_diag_matmul/hack_stale_alloc", "L1_gelu/cube_by_mult"):
            await select(pilot, key)
            await pilot.press("b")  # both modes
            await idle(pilot)
        model, screen = app.model, app.main_screen
        tree = screen.query_one("#tree")
        badges_hardened = {k: n.label.plain for k, n in tree._cand_nodes.items()}
        hardened = {c.key: model.verdict(c) for c in model.candidates}
        await pilot.press("g")
        await _switch(pilot, "check_timed")
        await _switch(pilot, "nan_alloc")
        await pilot.press("escape")
        await idle(pilot, timeout=120)
        await pilot.press("N")
        assert model.mode == "naive" and model.effective_off() == set(catalogue.NAMES)
        assert all(model.verdict(c) is model.known(c, "naive") for c in model.candidates)
        await pilot.press("m")  # what m shows in naive is exactly the preset's
        await pilot.press("m")
        assert all(model.verdict(c) is model.known(c, "naive") for c in model.candidates)
        await pilot.press("H")
        await pilot.pause()
        assert model.mode == "hardened" and not model.off and not screen.scheduler.busy
        assert {c.key: model.verdict(c) for c in model.candidates} == hardened
        assert {k: n.label.plain for k, n in tree._cand_nodes.items()} == badges_hardened
        await pilot.press("g", "N")  # the presets on the defences screen too
        assert model.mode == "naive"
        await pilot.press("H")
        assert model.mode == "hardened" and not model.off


async def test_every_defence_is_in_the_palette_and_the_help() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        names = [c.title for c in app.get_system_commands(app.main_screen)]
        for d in catalogue.DEFENCES:
            assert f"kbench: defence {d.name} off ({d.title})" in names, d.name
        for want in ("defences (g)", "naive preset (N)", "hardened preset (H)"):
            assert any(want in n for n in names), want
        cmd = next(c for c in app.get_system_commands(app.main_screen) if c.title.startswith("kbench: defence gate"))
        cmd.callback()
        await pilot.pause()
        assert app.model.off == {"gate"}
        await pilot.press("f1")
        md = app.screen._md
        assert "`g`" in md and "`N`" in md and "`H`" in md and "## Defences" in md
        for d in catalogue.DEFENCES:
            assert f"`{d.name}` ({d.title})" in md


async def test_matrix_f_shows_hack_by_defence_r_runs_the_missing_cells_x_exports() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_diag_matmul/hack_stale_alloc")
        await pilot.press("e")
        await idle(pilot)
        await pilot.press("v", "f")
        screen = app.screen
        assert isinstance(screen, MatrixScreen) and screen.view == "defences"
        table = screen.query_one("#matrix")
        head = [str(c.label) for c in table.ordered_columns]
        assert head[:2] == ["candidate", "all on"] and len(head) == 2 + len(catalogue.NAMES)
        row = [str(v) for v in table.get_row_at(2)]  # hack_stale_alloc (the fake rejects hardened hacks)
        assert row[0] == "hack_stale_alloc" and row[1].startswith("⊘")
        nan_col = head.index("nan_alloc *")
        assert row[nan_col] == "·"  # needs its own run
        assert row[head.index("check_timed")].startswith("⊘")  # derived at once
        await pilot.press("r")
        await idle(pilot)
        row = [str(v) for v in table.get_row_at(2)]
        assert row[nan_col].startswith("✓")  # the fake's run without nan_alloc
        await pilot.press("x")
        await pilot.pause()
        exports = sorted(Path(os.environ["KBENCH_EXPORT_DIR"]).glob("kbench-matrix-defences-*.json"))
        assert exports, "no export written"
        data = json.loads(exports[-1].read_text())
        assert data["columns"] == head and any(r[0] == "hack_stale_alloc" for r in data["rows"])
        await pilot.press("f")
        assert screen.view == "dists"


# -- snapshots (fake results, fixed theme and size) --------------------------------------------------------

def _seeded():  # type: ignore[no-untyped-def]
    from tui_fakes import fake_result

    from kbench.core.modes import NAIVE
    from kbench_tui.model import EXPLORER_HARDENED

    app = make_app()
    for c in app.model.candidates:
        app.model.record(c.digest, c.task, fake_result(c.task, c.name, NAIVE))
        app.model.record(c.digest, c.task, fake_result(c.task, c.name, EXPLORER_HARDENED))
    return app


def test_snapshot_defences_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """`g` at 120x30 with one defence that needs its own run switched off (the fake has run it)."""
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        pilot.app.theme = "textual-dark"
        await select(pilot, "L1_diag_matmul/hack_stale_alloc")
        await pilot.press("g")
        await _switch(pilot, "nan_alloc")
        await idle(pilot)

    assert snap_compare(_seeded(), terminal_size=(120, 30), run_before=before)


def test_snapshot_matrix_defences_view(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """`v f` at 200x50 on one task, after `r` ran the cells that need their own run."""
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        pilot.app.theme = "textual-dark"
        await select(pilot, "L1_diag_matmul/hack_stale_alloc")
        await pilot.press("v", "f", "r")
        await idle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(_seeded(), terminal_size=SIZE, run_before=before)
