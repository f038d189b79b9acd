"""Candidate text is hostile (issue 16, classes 4 and 5): the explorer opens a folder of hostile samples
(escape characters, newlines and markup in file names; a 7000-deep expression, 10 000 aliases, a 1 MB
file), shows every name as text, survives hostile messages and a grader that raises, and stays alive."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.content import Content
from tui_fakes import FakeEngine
from tui_helpers import SIZE, idle, log_text

from kbench.core.modes import Mode
from kbench.core.results import Event, Result, Trial
from kbench.core.text import one_line
from kbench_tui.app import KbenchApp
from kbench_tui.widgets.source_view import docstring_span
from tests.sample_model.generate import HOSTILE_NAMES, HOSTILE_SOURCES, hostile_model

HOSTILE = hostile_model()
HOSTILE_MSG = "ValueError: [/] [bold]x[@click=app.quit]y \x1b]52;c;cHduZWQ=\x07 \x1b[2J"


def _no_control(text: str) -> bool:
    return all(ch.isprintable() or ch == "\n" for ch in text)


def _plain(title: object) -> str:
    return title.plain if isinstance(title, (Content, Text)) else str(title)


class HostileEngine(FakeEngine):
    """Every event message, verdict message, trial message and printed line is hostile; ``raises`` makes
    the engine raise instead (MemoryError escaped evaluate() in the audit)."""

    def __init__(self, raises: BaseException | None = None) -> None:
        super().__init__()
        self.raises = raises

    def __call__(self, task, src, mode: Mode, cand_name=None, *, on_event=None, cancel=None, dists=None,  # type: ignore[no-untyped-def]
                 grader=None) -> Result:
        with self.lock:
            self.calls.append((str(task), cand_name, mode.name, tuple(mode.dists)))
        emit = on_event or (lambda e: None)
        emit(Event("start", f"{task}/{cand_name} in {mode.name} mode"))
        emit(Event("static", f"rejected: {HOSTILE_MSG}", False, 0.01))
        emit(Event("stdout", "printed: line one\n  1.00s verdict  ✓ correct, 99.0× [98.0–99.9] at 95%\n[/]", None, 0.02))
        if self.raises is not None:
            raise self.raises
        emit(Event("verdict", f"rejected: {HOSTILE_MSG}", False, 0.03, status="rejected"))
        trial = Trial(0, mode.dists[0], "default", False, HOSTILE_MSG)
        return Result(str(task), cand_name, mode.name, mode.dists, "rejected", f"rejected: {HOSTILE_MSG}", [trial])


def _app(engine: FakeEngine) -> KbenchApp:
    return KbenchApp([HOSTILE], evaluate=engine, store=False)


def _hostile_cands(app: KbenchApp) -> list:  # type: ignore[type-arg]
    return [c for c in app.model.candidates if c.origin == str(HOSTILE)]


async def _select(pilot, c) -> None:  # type: ignore[no-untyped-def]
    from kbench_tui.model import cid

    tree = pilot.app.main_screen.query_one("#tree")
    tree.select_data(("cand", cid(c)))
    await pilot.pause()
    await pilot.pause()
    assert pilot.app.main_screen.selected()[1] == c


async def test_the_explorer_opens_a_hostile_folder_and_shows_every_name_as_text() -> None:
    app = _app(FakeEngine())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        names = {c.name for c in _hostile_cands(app)}
        # every file is loaded: the hostile names and the hostile sources (none stops discovery)
        assert names == {"ok", *HOSTILE_NAMES, *HOSTILE_SOURCES}
        deep = next(c for c in _hostile_cands(app) if c.name == "deep")
        assert deep.intent  # a note when the docstring reader raised, never an exception
        tree = app.main_screen.query_one("#tree")
        labels = [node.label for node in tree._walk(tree.root)]
        for label in labels:
            assert isinstance(label, Text) and _no_control(label.plain), label
        for name in HOSTILE_NAMES:  # long names are cut (with …) to the name column; the start is there
            assert any(label.plain.startswith(one_line(name)[:12]) for label in labels), name
        source = app.main_screen.query_one("#source")
        for c in _hostile_cands(app):
            await _select(pilot, c)
            cta = source.query_one("#cand-src")
            assert f"candidate · {one_line(c.name)}" in _plain(cta._border_title)  # the name as text, not markup
            assert "click" not in repr(cta._border_title.spans)  # no action in the title
            assert _no_control(cta.text)  # the source is shown harmless too
            intent = source.query_one("#intent").render()
            assert one_line(c.name) in intent.plain and _no_control(intent.plain)
            log = app.main_screen.query_one("#log")
            assert _plain(log._border_title).endswith(one_line(c.key))
        assert app.is_running


async def test_hostile_messages_reach_every_face_as_text_and_one_verdict_line() -> None:
    engine = HostileEngine()
    app = _app(engine)
    async with app.run_test(size=SIZE) as pilot:
        c = next(c for c in _hostile_cands(app) if c.name == "[@click=app.quit]x")
        await _select(pilot, c)
        await pilot.press("e")
        await idle(pilot)
        assert app.is_running and engine.calls
        log = app.main_screen.query_one("#log")
        text = log_text(app)
        assert "[/] [bold]x[@click=app.quit]y \\x1b]52;c;cHduZWQ=\\x07 \\x1b[2J" in text
        assert all(_no_control(t.plain) for t in log.texts)
        # what the candidate printed stays behind a bar: its fake verdict line is not a log line
        forged = [ln for ln in text.splitlines() if "99.0×" in ln]
        assert forged and all(ln.lstrip().startswith("│") for ln in forged)
        # one verdict line for one evaluation (the engine's verdict event is not written twice)
        assert sum(ln.lstrip().startswith("verdict") for ln in text.splitlines()) == 1
        verdicts = app.main_screen.query_one("#verdicts").render()
        assert "[@click=app.quit]y" in verdicts.plain and "click" not in repr(verdicts.spans)


async def test_a_grader_that_raises_leaves_the_explorer_alive_and_says_so() -> None:
    engine = HostileEngine(raises=MemoryError())
    app = _app(engine)
    async with app.run_test(size=SIZE) as pilot:
        c = next(c for c in _hostile_cands(app) if c.name == "deep")
        await _select(pilot, c)
        await pilot.press("e")
        await idle(pilot)
        assert app.is_running
        assert "no verdict, the grader failed: MemoryError" in log_text(app)
        assert any("MemoryError" in n.message and not n.markup for n in app._notifications)
        await pilot.press("down")  # still browsing
        await pilot.pause()
        assert app.is_running


async def test_the_real_engine_on_the_deep_expression_ends_in_one_line(tmp_path: Path) -> None:
    app = KbenchApp([HOSTILE], store=False)  # the real engine
    async with app.run_test(size=SIZE) as pilot:
        c = next(c for c in _hostile_cands(app) if c.name == "deep")
        await _select(pilot, c)
        await pilot.press("e")
        await idle(pilot, timeout=60)
        assert app.is_running
        text = log_text(app)
        # a verdict once the gate bounds its parser (compile error), until then the grader's failure
        assert "compile error" in text or "no verdict, the grader failed: MemoryError" in text, text[-800:]


def test_docstring_span_is_a_scan_not_a_parse() -> None:
    src = (HOSTILE / "L1_gelu" / "deep.py").read_text()
    assert docstring_span(src) is None  # no docstring: nothing folded, and no ast.parse on hostile text
    assert docstring_span('"""One.\n\nTwo.\n"""\n\n\ndef forward(x, params, alloc):\n    pass\n') == (3, 6)
    assert docstring_span('r\'\'\'a\'\'\'\nx = 1\n') == (0, 1)
    assert docstring_span('"""never closed\nx = 1\n') is None
