"""Live behaviour: streaming, superseding, the editor's save-and-evaluate path, stored results."""

from __future__ import annotations

import asyncio
import os
import time
import sqlite3
import threading
from pathlib import Path

from tui_helpers import SIZE, idle, log_text, make_app, select
from tui_fakes import FakeEngine, fake_result

from kbench.core.results import Event
from kbench.store import Store
from kbench_tui.screens.editor import EditorScreen
from kbench_tui.screens.main import MainScreen


async def _wait_for(pilot, cond, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.02)
        await pilot.pause()


async def test_log_receives_step_lines_before_the_evaluation_finishes() -> None:
    gate = threading.Event()
    app = make_app(FakeEngine(gate))
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_softmax/no_max")
        await pilot.press("e")
        await _wait_for(pilot, lambda: "trial 1/7 normal" in log_text(app))
        # the engine is still inside the evaluation (held on the gate): no verdict yet
        assert app.main_screen.scheduler.busy
        assert "verdict" not in log_text(app) and "⟳ evaluating" in str(app.main_screen.query_one("#verdicts").render())
        assert app.main_screen.check_action("evaluate", ()) is None  # greyed while it runs
        assert app.main_screen.check_action("rerun", ()) is None and app.main_screen.check_action("cancel", ())
        gate.set()
        await idle(pilot)
        assert "verdict" in log_text(app)


async def test_re_evaluating_supersedes_and_drops_late_events() -> None:
    gate = threading.Event()
    seen_cancel: list[bool] = []

    def evaluate(task, src, mode, cand_name=None, *, on_event=None, cancel=None, **kw):  # type: ignore[no-untyped-def]
        if cand_name == "no_max":
            on_event(Event("start", "first run starts"))
            gate.wait(10)
            seen_cancel.append(cancel.is_set())
            on_event(Event("trial", "LATE EVENT FROM THE FIRST RUN", True))
        else:
            on_event(Event("start", "second run starts"))
        return fake_result(task, cand_name, mode)

    app = make_app(evaluate)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_softmax/no_max")
        await pilot.press("e")
        await _wait_for(pilot, lambda: "first run starts" in log_text(app))
        await select(pilot, "L1_softmax/inplace")
        await pilot.press("e")  # supersedes: cancels the first run; the second waits for the thread
        gate.set()
        await idle(pilot)
        log = log_text(app)
        assert seen_cancel == [True]
        assert "second run starts" in log and "LATE EVENT" not in log
        # the first run's result is still a valid result for no_max: kept, just not narrated
        no_max = app.model.get("library:L1_softmax/no_max")
        assert app.model.verdict(no_max) is not None


async def test_edit_grade_fix_in_the_editor_then_in_place_then_on_disk(tmp_path: Path) -> None:
    """Real engine: a syntax error shows in the editor with its line selected; you stay, fix it, save
    again (in place); n on your own candidate edits that file; a change on disk is reloaded."""
    app = make_app(evaluate=None)  # the real engine; a syntax error stops it at the static check
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_gelu/exact_erf")
        await pilot.press("n")
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        editor.query_one("#editor-name").value = "my_gelu"
        editor.query_one("#editor").text = '"""Forgot a parenthesis."""\ndef forward(x, params, alloc):\n    return (x["x"]\n'
        await pilot.press("ctrl+s")
        await idle(pilot, timeout=90)
        assert app.screen is editor  # you stay in the editor
        verdict = str(editor.query_one("#editor-verdict").render())
        assert "compile error" in verdict and "SyntaxError" in verdict and "line 3" in verdict
        assert editor.error_line == 3 and editor.query_one("#editor").selection.start == (2, 0)
        path = tmp_path / "data" / "candidates" / "L1_gelu" / "my_gelu.py"
        assert path.exists()
        assert "compile error" in log_text(app) and "SyntaxError" in log_text(app)
        # fix and save again: the same file, in place (not "exists, pick another name")
        editor.query_one("#editor").text = '"""Fixed."""\ndef forward(x, params, alloc):\n    return (x["x"] * 2)\n'
        await pilot.press("ctrl+s")
        await idle(pilot, timeout=90)
        assert "Fixed." in path.read_text() and "wrong" in str(editor.query_one("#editor-verdict").render())
        await pilot.press("escape")  # nothing unsaved: closes without asking
        assert isinstance(app.screen, MainScreen)
        c = app.main_screen.selected()[1]
        assert (c.name, c.origin, c.intent) == ("my_gelu", "user", "Fixed.")
        assert "my_gelu ✎" in app.main_screen.query_one("#tree").cursor_node.label.plain
        # n on your own candidate: that file, in place
        await pilot.press("n")
        assert app.screen.in_place and app.screen.query_one("#editor-name").value == "my_gelu"
        assert "Fixed." in app.screen.query_one("#editor").text
        await pilot.press("escape")
        # a change on disk is picked up without a restart
        path.write_text('"""Changed on disk."""\ndef forward(x, params, alloc):\n    return x["x"]\n')
        os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        app.main_screen.check_disk()
        await pilot.pause()
        c = app.main_screen.selected()[1]
        assert c.intent == "Changed on disk." and "Changed on disk." in app.main_screen.query_one("#cand-src").text
        assert "reloaded" in log_text(app)
        assert app.model.verdict(c) is None  # a new version: not evaluated yet
    # and it is there at the next start
    again = make_app()
    assert any(c.name == "my_gelu" and c.origin == "user" for c in again.model.candidates)


async def test_results_survive_a_restart_marked_as_stored(tmp_path: Path) -> None:
    engine = FakeEngine()
    app = make_app(engine, store=Store(tmp_path / "db"))
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_softmax/no_max")
        await pilot.press("b")
        await idle(pilot)
    assert len(engine.calls) == 2
    engine2 = FakeEngine()
    app2 = make_app(engine2, store=Store(tmp_path / "db"))
    async with app2.run_test(size=SIZE) as pilot:
        await select(pilot, "L1_softmax/no_max")
        verdicts = str(app2.main_screen.query_one("#verdicts").render())
        assert verdicts.count("stored 20") == 2 and "✗ wrong" in verdicts
        assert "✗ wrong" in app2.main_screen.query_one("#tree").cursor_node.label.plain
        await pilot.press("e")  # known: reported, not re-run
        await idle(pilot)
        assert engine2.calls == [] and "(stored 20" in log_text(app2)
        await pilot.press("r")
        await idle(pilot)
        assert len(engine2.calls) == 1
        assert "stored" not in str(app2.main_screen.query_one("#verdicts").render()).split("\n")[0]


async def test_a_corrupt_database_is_moved_aside_with_a_message(tmp_path: Path) -> None:
    db = tmp_path / "data" / "results.sqlite3"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    app = make_app(store=None)  # the default store, in KBENCH_DATA_DIR
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        notes = [str(n.message) for n in app._notifications]
        assert any("moved to" in n for n in notes)
        await pilot.press("e")
        await idle(pilot)
    assert sqlite3.connect(db).execute("select count(*) from results").fetchone()[0] == 1


async def test_a_candidates_folder_with_skipped_entries_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "samples"
    (folder / "L1_gleu").mkdir(parents=True)
    (folder / "L1_gelu").mkdir()
    (folder / "L1_gelu" / "bad.py").write_bytes(b'"""caf\xe9"""\n')
    (folder / "L1_gelu" / "good.py").write_text('"""Fine."""\ndef forward(x, params, alloc):\n    return x["x"]\n')
    app = make_app(candidate_dirs=[folder])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        notes = "\n".join(str(n.message) for n in app._notifications)
        assert "L1_gleu/: not a task name (did you mean L1_gelu?)" in notes and "bad.py" in notes
        assert any(c.name == "good" for c in app.model.candidates)
