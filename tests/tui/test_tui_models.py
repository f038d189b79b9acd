"""The models screen (o): graded models side by side. Two models are graded into a temporary store through
the batch API (``kbench.batch.grade`` with a runner that gives each sample its designed verdict, so no
sandbox runs), then the explorer opens them: rows per model, badges, the scores ``kbench scores``
computes, one curve per model; a model folder opened with ``kbench --model`` shows its sources and grades
a sample with ``e``/``r``; hostile file names stay text; bad ``--model`` folders are one line, exit 2."""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest
from rich.text import Text
from tui_fakes import FAKE_ISOLATION, FakeEngine
from tui_helpers import SIZE

from kbench.batch.grade import grade, plan
from kbench.batch.samples import Job, discover, jobs_for
from kbench.batch.scores import scores
from kbench.core.modes import HARDENED
from kbench.core.results import Result, Timing, Trial
from kbench.core.text import one_line
from kbench.store import Store
from kbench_cli.cli import main
from kbench_tui.app import KbenchApp
from kbench_tui.models import GradedModels
from kbench_tui.screens.models import ModelsScreen
from tests.sample_model.generate import EXPECTED, HOSTILE_NAMES, hostile_model, toy_model

TOY = toy_model()
#: Per model, the speedup of each correct sample (beta is slower, one of its wins within noise).
SPEEDS = {"alpha": 3.0, "beta": 1.3}


class DesignedRunner:
    """A ``kbench.batch.grade.Runner``: each sample's designed verdict (``EXPECTED``), timed when correct."""

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, Result]]:
        for job in jobs:
            c, m = job.sample.candidate, job.mode
            status = EXPECTED[f"{c.task}/{c.name}"]
            if job.sample.model == "beta" and c.key == "L1_softmax/s2":
                status = "correct"  # the two models differ on one sample's verdict too
            trials = [Trial(i, d, "default", status == "correct", "max abs err 1e-06") for i, d in enumerate(m.dists)]
            s = SPEEDS[job.sample.model] * (0.7 if c.task == "L3_attention" else 1.0)
            timing = Timing(method="interleaved", t_ref=0.01, t_cand=0.01 / s, speedup=s,
                            speedup_ci=(round(s * 0.8, 3), round(s * 1.2, 3)), n_samples=12,
                            noise=s * 0.8 <= 1.0 <= s * 1.2) if status == "correct" and m.timing else None
            yield job, Result(c.task, c.name, m.name, m.dists, status, f"{status} (designed)", trials, timing,
                              isolation=FAKE_ISOLATION)

    def close(self) -> None:
        pass


def graded_store(path: Path, models: tuple[str, ...] = ("alpha", "beta")) -> Store:
    """The toy model graded for each name into a store at ``path`` (hardened, designed verdicts)."""
    store = Store(path)
    for name in models:
        samples, _ = discover(TOY, name)
        todo = plan(jobs_for(samples, [HARDENED]), store).todo
        assert grade(todo, store, DesignedRunner()) == 0
    return store


def _labels(tree) -> list[str]:  # type: ignore[no-untyped-def]
    return [node.label.plain for node in tree._walk(tree.root)]


async def test_two_graded_models_side_by_side(tmp_path: Path) -> None:
    store = graded_store(tmp_path / "results.sqlite3")
    expected = {(s.model, s.level): s for s in scores(store.all())}  # what kbench scores prints
    app = KbenchApp(evaluate=FakeEngine(), store=store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ModelsScreen)
        tree = screen.query_one("#models-tree")
        # every task of the toy model, each with a row per model counting its samples by verdict
        for task in ("L1_gelu", "L1_softmax", "L2_matmul_sum", "L3_attention"):
            rows = [n for n in tree._walk(tree.root) if n.data and n.data[0] == "model" and n.data[1].startswith(task)]
            assert [r.label.plain.split()[0] for r in rows] == ["alpha", "beta"]
        gelu_alpha = next(n for n in tree._walk(tree.root) if n.data == ("model", "L1_gelu\0alpha"))
        assert gelu_alpha.label.plain == "alpha ✓2 ✗1 ⊘1 !1"  # s0 s1 correct, s2 wrong, s4 rejected, s3 error
        badges = {n.data[1]: n.label.plain for n in tree._walk(tree.root) if n.data and n.data[0] == "sample"}
        assert badges["alpha\0L1_softmax\0s2"].split()[-1] == "wrong"
        assert badges["beta\0L1_softmax\0s2"].endswith("✓ 1.30×")
        assert "✓ 3" in badges["alpha\0L1_gelu\0s0"]
        # the table: one column per model, kbench scores' numbers
        table = screen.query_one("#models-fastp")
        assert table.shown == ["alpha", "beta"]
        m = screen.models
        for name in ("alpha", "beta"):
            assert m.score(name).fast_p == expected[(name, "all")].fast_p
        assert m.score("alpha").fast_p[1.5] > m.score("beta").fast_p[1.5]  # beta's 1.3× wins do not count at 1.5
        # one curve per model, on one plot, with a legend naming both
        curve = screen.query_one("#models-curve")
        assert curve.drawn == ["alpha", "beta"]
        rendered = curve.render().plain
        assert "━ alpha" in rendered and "━ beta" in rendered
        vals = m.curve("alpha", [0.5, 2.0, 5.0])
        assert vals is not None and vals[0] > vals[2] == 0.0  # nothing is 5× faster
        # the palette offers the screen's keys (those that can act now); F1 lists them all
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "kbench: scores (s)" in titles and "kbench: library (o)" in titles
        assert "kbench: evaluate (e)" not in titles  # the cursor is on a task: nothing to grade
        await pilot.press("f1")
        await pilot.pause()
        assert "Models side by side" in app.screen._md and "`r`" in app.screen._md
        await pilot.press("escape")
        await pilot.press("o")  # back to the library
        await pilot.pause()
        assert app.screen is app.main_screen


async def test_m_switches_between_stored_modes(tmp_path: Path) -> None:
    store = graded_store(tmp_path / "results.sqlite3", ("alpha",))
    samples, _ = discover(TOY, "alpha")
    untimed = dataclasses.replace(HARDENED, timing=None)
    grade(jobs_for(samples[:3], [untimed]), store, DesignedRunner())  # a correctness-only run: a second mode
    app = KbenchApp(evaluate=FakeEngine(), store=store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await pilot.pause()
        screen = app.screen
        assert len(screen.models.labels) == 2 and screen.models.mode == HARDENED.digest
        assert screen.models.label == f"hardened {HARDENED.digest[:6]}"  # two stored modes share the name
        assert screen.models.mode_to_grade() == HARDENED
        await pilot.press("m")
        assert screen.models.mode == untimed.digest and screen.models.label.endswith("(untimed)")
        assert screen.query_one("#models-curve").drawn == []  # untimed: no curve, not a flat zero
        assert screen.query_one("#models-fastp").shown == ["alpha"]
        assert screen.models.mode_to_grade() == untimed  # r re-grades in the column's own mode
        await pilot.press("m")
        assert screen.models.mode == HARDENED.digest


async def test_a_model_folder_opens_and_a_sample_is_graded_like_a_candidate(tmp_path: Path) -> None:
    engine = FakeEngine()
    store = Store(tmp_path / "results.sqlite3")
    app = KbenchApp(evaluate=engine, store=store, model_dirs=[("toy", TOY)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ModelsScreen)  # kbench --model opens on the models screen
        tree = screen.query_one("#models-tree")
        tree.select_data(("sample", "toy\0L1_gelu\0s1"))
        await pilot.pause()
        await pilot.pause()
        src = screen.query_one("#cand-src")
        assert "cube" in src.text or "x * x * x" in src.text
        assert (TOY / "L1_gelu" / "s1.py").read_text() .strip().splitlines()[-1].strip() in src.text
        assert "not graded" in screen.query_one("#verdicts").render().plain
        await pilot.press("e")
        while screen.scheduler.busy:
            await pilot.pause(0.02)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert engine.calls == [("L1_gelu", "s1", "hardened", HARDENED.dists)]
        log = screen.query_one("#log").plain
        assert sum(ln.lstrip().startswith("verdict") for ln in log.splitlines()) == 1
        stored = store.all(model="toy")
        assert [(r.result.task, r.sample, r.mode_hash) for r in stored] == [("L1_gelu", "s1", HARDENED.digest)]
        label = next(n.label.plain for n in tree._walk(tree.root) if n.data == ("sample", "toy\0L1_gelu\0s1"))
        assert "✓" in label
        assert screen.query_one("#models-fastp").shown == ["toy"]
        await pilot.press("e")  # stored now: shown, not graded again
        await pilot.pause()
        assert len(engine.calls) == 1 and "r re-grades" in screen.query_one("#log").plain
        await pilot.press("r")
        while screen.scheduler.busy:
            await pilot.pause(0.02)
        await app.workers.wait_for_complete()
        assert len(engine.calls) == 2 and len(store.all(model="toy")) == 1  # the same key, replaced
        tree.select_data(("task", "L1_gelu"))
        await pilot.pause()
        assert screen.check_action("evaluate", ()) is None  # greyed on a task: nothing to grade


async def test_a_model_with_hostile_file_names_opens_with_every_name_as_text() -> None:
    app = KbenchApp(evaluate=FakeEngine(), store=False, model_dirs=[("hostile", hostile_model())])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        tree = screen.query_one("#models-tree")
        labels = [n.label for n in tree._walk(tree.root)]
        assert all(isinstance(lb, Text) and lb.plain.isprintable() for lb in labels)
        for name in HOSTILE_NAMES:
            assert any(lb.plain.startswith(one_line(name)[:6]) for lb in labels), name
            data = ("sample", f"hostile\0L1_gelu\0{name}")
            tree.select_data(data)
            await pilot.pause()
            await pilot.pause()
            title = screen.query_one("#cand-src")._border_title
            assert one_line(name) in title.plain and "click" not in repr(title.spans)
            assert screen.query_one("#log")._border_title.plain.endswith(one_line(f"L1_gelu/{name}"))
        assert app.is_running


async def test_keys_at_80x24_enter_and_s_swap_the_sample_and_the_scores_esc_cancels_then_goes_back() -> None:
    gate = threading.Event()
    engine = FakeEngine(gate=gate)
    app = KbenchApp(evaluate=engine, store=False, model_dirs=[("toy", TOY)])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        sample, scores_pane = screen.query_one("#models-sample"), screen.query_one("#models-scores")
        assert scores_pane.display and not sample.display  # 80 columns: the tree beside the scores
        tree = screen.query_one("#models-tree")
        tree.select_data(("sample", "toy\0L1_gelu\0s0"))
        await pilot.pause()
        await pilot.press("enter")  # opens the sample in the scores' place
        await pilot.pause()
        assert sample.display and not scores_pane.display
        await pilot.press("s")
        await pilot.pause()
        assert scores_pane.display and not sample.display
        await pilot.press("s", "e")
        while not engine.calls:
            await pilot.pause(0.02)
        assert screen.scheduler.busy and screen.check_action("evaluate", ()) is None  # greyed while it runs
        await pilot.press("escape")  # cancels the grading; the screen stays
        gate.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen is screen and not screen.scheduler.busy
        assert "cancelled" in screen.query_one("#log").plain
        await pilot.press("escape")  # nothing runs: back to the library
        await pilot.pause()
        assert app.screen is app.main_screen


def test_a_hostile_model_known_from_the_store_only_has_harmless_names(tmp_path: Path) -> None:
    class AllCorrect(DesignedRunner):
        def run(self, jobs: list[Job]) -> Iterator[tuple[Job, Result]]:
            for job in jobs:
                c = job.sample.candidate
                yield job, Result(c.task, c.name, job.mode.name, job.mode.dists, "correct", "ok")

    store = Store(tmp_path / "results.sqlite3")
    name = "evil\x1b[2J[@click=app.quit]"
    samples, _ = discover(hostile_model(), name)
    assert grade(jobs_for(samples, [HARDENED]), store, AllCorrect()) == 0
    models = GradedModels(store.all())
    [shown] = models.names
    assert shown.isprintable() and "\x1b" not in shown
    names = {s.name for s in models.samples(shown)}
    assert names == {one_line(n) for n in {"ok", *HOSTILE_NAMES, "deep", "aliases", "megabyte"}}
    assert all(n.isprintable() for n in names)
    assert all(models.verdict(s).result.status == "correct" for s in models.samples(shown))


def test_kbench_model_on_a_missing_or_empty_folder_is_one_line_exit_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--model", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a directory" in err
    (tmp_path / "empty" / "L9_nothing").mkdir(parents=True)  # a folder, but not one sample in it
    assert main(["--model", f"mine={tmp_path / 'empty'}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no samples" in err


# -- snapshots: dates fixed, so the pictures are deterministic -------------------------------------------

FIXED = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def snapshot_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KbenchApp]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.chdir(TOY.parent)  # the folder as a relative path: the source pane shows it
    store = graded_store(tmp_path / "results.sqlite3")
    rows = [dataclasses.replace(r, stored_at=FIXED) for r in store.all()]
    store.close()
    app = KbenchApp(evaluate=FakeEngine(), store=False)
    # alpha's folder is open (its sources show), beta is known from the store only
    models = GradedModels(rows, [("alpha", Path(TOY.name))])
    app.models_screen = ModelsScreen(models, None, app.evaluate_fn)  # type: ignore[attr-defined]
    app.install_screen(app.models_screen, "models")
    yield app
    monkeypatch.undo()  # TZ and the working directory back, then the C library's idea of the zone
    time.tzset()


@pytest.mark.parametrize("size", [(80, 24), (120, 30), (200, 50)], ids=["80x24", "120x30", "200x50"])
def test_models_screen(snap_compare, snapshot_app, size) -> None:  # type: ignore[no-untyped-def]
    """At 80x24 the tree beside the scores (s swaps the sample in); from 120 columns the sample's source and
    stored log too; the curve draws both models."""

    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        pilot.app.theme = "textual-dark"
        await pilot.press("o")
        await pilot.pause()
        pilot.app.screen.query_one("#models-tree").select_data(("sample", "alpha\0L1_softmax\0s0"))
        await pilot.pause()
        await pilot.pause()
        pilot.app.clear_notifications()  # the folder's skipped files (tested above), not the picture's point
        await pilot.pause()

    assert snap_compare(snapshot_app, terminal_size=size, run_before=before)
