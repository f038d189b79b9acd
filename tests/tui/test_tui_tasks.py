"""Task files in the explorer: a newcomer's one file under --tasks shows as a task node with its candidates
beside it, graded by the real engine in both modes; the extra set appears only when asked for."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tui_helpers import SIZE, idle, make_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_newcomer import FAST, README_TASK  # noqa: E402

from kbench import usertasks  # noqa: E402
from kbench.core.tasks import TASKS  # noqa: E402


@pytest.fixture(autouse=True)
def _forget_tasks():
    yield
    usertasks.deactivate()


def _task_nodes(app) -> dict[str, str]:  # type: ignore[no-untyped-def]
    tree = app.main_screen.query_one("#tree")
    return {n.data[1]: n.label.plain for n in tree._walk(tree.root) if n.data and n.data[0] == "task"}


async def test_a_newcomers_task_file_in_the_explorer(tmp_path: Path) -> None:
    (tmp_path / "my_tasks").mkdir()
    (tmp_path / "my_tasks" / "my_rmsnorm.py").write_text(README_TASK)
    cands = tmp_path / "cands" / "my_rmsnorm"
    cands.mkdir(parents=True)
    (cands / "fast.py").write_text(FAST)
    app = make_app(evaluate=None, task_dirs=[tmp_path / "my_tasks"], candidate_dirs=[tmp_path / "cands"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        nodes = _task_nodes(app)
        assert nodes["my_rmsnorm"] == "my_rmsnorm ⌂" and set(nodes) == {t.name for t in TASKS} | {"my_rmsnorm"}
        tree = app.main_screen.query_one("#tree")
        key = f"{tmp_path / 'cands'}:my_rmsnorm/fast"
        tree.select_data(("cand", key))
        await pilot.pause()
        task, cand = app.main_screen.selected()
        assert task == "my_rmsnorm" and cand is not None and cand.name == "fast"
        ref = app.main_screen.query_one("#ref-src")
        assert "def forward(x, params, alloc):" in ref.text and "make_params" not in ref.text
        assert "my_rmsnorm" in str(ref.border_title)
        await pilot.press("b")  # both modes, the real engine
        await idle(pilot, timeout=120)
        for mode in ("naive", "hardened"):
            known = app.model.verdict(cand, mode)
            assert known is not None and known.result.status == "correct", (mode, known and known.result.msg)
        assert "✓" in tree.cursor_node.label.plain


async def test_the_extra_set_only_when_asked_for() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert set(_task_nodes(app)) == {t.name for t in TASKS}  # the lecture's nine, exactly
    usertasks.deactivate()
    app = make_app(task_sets=["extra"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        nodes = _task_nodes(app)
        assert nodes["L1_rmsnorm"] == "L1_rmsnorm (extra)" and "L3_transformer_block" in nodes
        assert any(c.task == "L2_conv1d" and c.origin == "library" for c in app.model.candidates)


async def test_a_bad_task_file_is_a_warning_and_the_rest_load(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "broken.py").write_text("def forward(x, params, alloc:\n")
    (tmp_path / "t" / "good.py").write_text(README_TASK)
    app = make_app(task_dirs=[tmp_path / "t"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        notes = "\n".join(str(n.message) for n in app._notifications)
        assert "broken.py: SyntaxError" in notes
        assert "good" in _task_nodes(app)
