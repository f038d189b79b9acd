"""Batch grading: samples found and problems reported, verdicts stored, resume after kill -9, the timing lane."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kbench.batch.samples import Job, discover, jobs_for
from kbench.core.modes import HARDENED, NAIVE
from kbench.grading.lanes import TimingLane
from kbench.store import Store, mode_hash
from kbench_cli.cli import main
from tests.processes import sigkill_after
from tests.sample_model.generate import EXPECTED, PROBLEMS, toy_model

UNTIMED = dataclasses.replace(HARDENED, timing=None)
TOY = toy_model()


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "data"
    monkeypatch.setenv("KBENCH_DATA_DIR", str(d))
    return d


def stored_verdicts(data_dir: Path, model: str = "toy") -> dict[str, str]:
    with Store(data_dir) as s:
        return {f"{r.result.task}/{r.sample}": r.result.status for r in s.all(model=model)}


def test_discover_finds_samples_and_reports_problems() -> None:
    samples, problems = discover(TOY, "toy")
    assert {f"{s.task}/{s.name}" for s in samples} == set(EXPECTED)
    assert all(s.model == "toy" and s.candidate.origin == "model:toy" for s in samples)
    assert sorted(str(p.path.relative_to(TOY)) for p in problems) == sorted(PROBLEMS)
    why = {p.path.name: p.why for p in problems}
    assert "unknown task" in why["L9_unknown_task"] and "UTF-8" in why["latin1.py"] and ".py" in why["notes.txt"]


def test_empty_or_missing_folder_is_a_problem(tmp_path: Path) -> None:
    assert discover(tmp_path, "m")[1][0].why.startswith("no samples")
    assert discover(tmp_path / "nope", "m")[1][0].why == "not a directory"


def test_job_key_is_the_store_key() -> None:
    samples, _ = discover(TOY, "toy")
    jobs = jobs_for(samples, [NAIVE, UNTIMED])
    assert len(jobs) == 2 * len(samples) and len({j.key for j in jobs}) == len(jobs)
    j = jobs[0]
    assert j.key == ("toy", j.sample.task, j.sample.name, j.sample.candidate.digest, mode_hash(j.mode), "normal")


def test_grade_stores_every_verdict_and_reports_problems(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(["grade", str(TOY), "--correctness-only", "--workers", "2"])
    err = capsys.readouterr().err
    assert rc == 1  # graded, but something was reported
    for p in PROBLEMS:
        assert f"not graded: {TOY / p}" in err
    assert stored_verdicts(data_dir) == EXPECTED
    with Store(data_dir) as s:
        rows = s.all(model="toy")
        assert {r.mode_hash for r in rows} == {mode_hash(UNTIMED)} and all(r.machine for r in rows)
    # a second run finds everything stored under the full key and grades nothing
    assert main(["grade", str(TOY), "--correctness-only", "--workers", "2"]) == 1
    assert f"0 sample(s) to grade, {len(EXPECTED)} already stored" in capsys.readouterr().err


def test_a_changed_mode_is_graded_again(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model = tmp_path / "m"
    (model / "L1_gelu").mkdir(parents=True)
    (model / "L1_gelu" / "a.py").write_text((TOY / "L1_gelu" / "s2.py").read_text())
    assert main(["grade", str(model), "--correctness-only", "--workers", "1"]) == 0
    assert main(["grade", str(model), "--correctness-only", "--workers", "1", "--dist", "uniform"]) == 0
    err = capsys.readouterr().err
    assert err.count("1 sample(s) to grade") == 2
    with Store(data_dir) as s:
        got = sorted((r.result.dists, r.result.status) for r in s.all(model="m"))
    # sigmoid_approx fails on normal inputs and passes on uniform ones: two keys, two verdicts
    assert got == [(("normal", "uniform", "laplace", "lognormal", "offset"), "wrong"), (("uniform",), "correct")]


def test_kill_minus_9_then_rerun_grades_only_what_was_missing(data_dir: Path) -> None:
    env = {**os.environ, "KBENCH_DATA_DIR": str(data_dir)}
    cmd = [sys.executable, "-m", "kbench_cli.cli", "grade", str(TOY), "--correctness-only", "--workers", "1"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    assert len(sigkill_after(proc, proc.stderr, 5, r"\[\d+/\d+\] ")) == 5
    with Store(data_dir) as s:
        before = {(r.result.task, r.sample): r.stored_at for r in s.all(model="toy")}
    # every result reported before the kill is stored; the one in flight may or may not be
    assert 5 <= len(before) < len(EXPECTED)
    rerun = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    missing = len(EXPECTED) - len(before)
    assert f"{missing} sample(s) to grade, {len(before)} already stored" in rerun.stderr
    assert len(re.findall(r"^\[\d+/\d+\] ", rerun.stderr, re.M)) == missing
    assert stored_verdicts(data_dir) == EXPECTED  # including the rest of a partly graded task
    with Store(data_dir) as s:
        after = {(r.result.task, r.sample): r.stored_at for r in s.all(model="toy")}
    assert all(after[k] == t for k, t in before.items())  # nothing stored before the kill was graded again


@pytest.mark.parametrize("argv, message", [
    (["grade", "/nonexistent/folder"], "not a directory"),
    (["grade", str(TOY), "--model", "a", "--model", "b"], "once per DIR"),
    (["grade", str(TOY), str(TOY)], "same model"),
    (["grade", str(TOY), "--workers", "0"], "--workers"),
    (["grade", str(TOY), "--timeout", "nan"], "--timeout"),
    (["grade", str(TOY / "L9_unknown_task")], "no samples"),
])
def test_bad_grade_command_lines(argv: list[str], message: str, data_dir: Path,
                                 capsys: pytest.CaptureFixture) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------ the lane

def _waits(holder: contextlib.AbstractContextManager, contender: contextlib.AbstractContextManager) -> bool:
    """Whether ``contender`` (entered in a thread) waits while ``holder`` is held, and enters once it is not."""
    entered = threading.Event()

    def go() -> None:
        with contender:
            entered.set()

    with holder:
        t = threading.Thread(target=go)
        t.start()
        waited = not entered.wait(0.5)
    assert entered.wait(10)  # released: the contender gets in
    t.join()
    return waited


@pytest.mark.timeout(60)
def test_lane_timing_waits_for_correctness_and_correctness_waits_for_timing(tmp_path: Path) -> None:
    a, b, c = TimingLane(tmp_path), TimingLane(tmp_path), TimingLane(tmp_path)  # separate descriptors: separate holders
    assert not _waits(a.correctness(), b.correctness())  # correctness beside correctness
    assert _waits(a.correctness(), b.timing())  # timing waits until no correctness work is running
    assert _waits(a.timing(), b.correctness())  # correctness waits while someone times
    assert _waits(a.timing(), b.timing())  # one timer at a time
    # timing from inside correctness gives up the shared hold first: two holders upgrading do not deadlock
    both_shared = threading.Barrier(2)
    cpus: list = []

    def grade(lane: TimingLane) -> None:
        with lane.correctness():
            both_shared.wait(10)
            with lane.timing() as cpu:
                cpus.append(cpu)

    threads = [threading.Thread(target=grade, args=(lane,), daemon=True) for lane in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads) and len(cpus) == 2
    assert all(cpu is None or cpu in os.sched_getaffinity(0) for cpu in cpus)
    with c.timing():  # and every hold was given back: the lane is free
        pass


def test_evaluate_enters_the_lane_around_timing_only() -> None:
    from kbench.core.tasks import TASK
    from kbench.grading.pipeline import evaluate

    log: list[str] = []

    @contextlib.contextmanager
    def lane():  # noqa: ANN202
        log.append("enter")
        yield None
        log.append("exit")

    def on_event(ev) -> None:  # noqa: ANN001
        log.append(ev.step)

    src = TASK["L1_gelu"].ref_src
    r = evaluate("L1_gelu", src, NAIVE, "ref", on_event=on_event, timing_lane=lane)
    assert r.correct and r.timing is not None
    inside = log[log.index("enter") + 1:log.index("exit")]
    assert inside and set(inside) == {"timing"}
    assert "trial" in log[:log.index("enter")] and log.count("enter") == 1
    log.clear()
    assert evaluate("L1_gelu", src, UNTIMED, "ref", timing_lane=lane).correct and log == []


def test_pool_job_is_graded_under_the_lane(tmp_path: Path) -> None:
    from kbench.batch.pool import LocalPool

    samples, _ = discover(TOY, "toy")
    jobs = [Job(s, NAIVE) for s in samples if (s.task, s.name) in {("L1_gelu", "s0"), ("L1_gelu", "s2")}]
    pool = LocalPool(1, tmp_path)
    try:
        got = {j.sample.name: r for j, r in pool.run(jobs)}
    finally:
        pool.close()
    assert got["s0"].status == "correct" and got["s0"].timing is not None
    assert got["s2"].status == "wrong"
    assert (tmp_path / "timing-lane.lock").exists()


@pytest.mark.timeout(120)
def test_pool_retries_the_samples_of_a_grading_process_that_died(tmp_path: Path) -> None:
    from kbench.batch.pool import LocalPool

    samples, _ = discover(TOY, "toy")
    jobs = jobs_for(samples, [UNTIMED])
    pool = LocalPool(2, tmp_path)
    got: dict[str, str] = {}
    try:
        for i, (job, r) in enumerate(pool.run(jobs)):
            got[f"{job.sample.task}/{job.sample.name}"] = r.status
            if i == 0:
                assert pool._pool is not None
                os.kill(next(iter(pool._pool._processes)), signal.SIGKILL)  # a grading process dies mid-run
    finally:
        pool.close()
    assert pool.restarts == 1
    assert got == EXPECTED  # its samples in flight were graded again in a fresh pool, none lost or doubled


@pytest.mark.parametrize("n", [1, 2])
def test_the_lane_core_pins_the_candidate_and_the_reference_twin(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    from kbench.core.tasks import TASK
    from kbench.grading import pipeline

    mode = HARDENED.with_timing(processes=n)

    cpu = max(os.sched_getaffinity(0))
    pinned: list[tuple[int, set]] = []
    started: list[tuple[str, object]] = []
    real_pin, real_worker = os.sched_setaffinity, pipeline.Worker

    def pin(pid: int, cpus: set) -> None:
        if pid:  # 0 is the grading process's own thread (warming a timed input on the timing core)
            pinned.append((pid, set(cpus)))
        real_pin(pid, cpus)

    def worker(role: str, *a, cpu=None, **kw):  # noqa: ANN001, ANN202
        started.append((role, cpu))
        return real_worker(role, *a, cpu=cpu, **kw)

    monkeypatch.setattr(os, "sched_setaffinity", pin)
    monkeypatch.setattr(pipeline, "Worker", worker)

    @contextlib.contextmanager
    def lane():  # noqa: ANN202
        yield cpu

    grader = pipeline.Grader()
    grader.cpu = None  # as in a pool process: correctness unpinned
    try:
        r = pipeline.evaluate("L1_gelu", TASK["L1_gelu"].ref_src, mode, "ref", grader=grader, timing_lane=lane)
    finally:
        grader.close()
    assert r.correct and r.timing is not None
    # correctness unpinned; the twins (one per timing process) and the candidate's other timing workers on the
    # lane's core as they start
    assert started == [("candidate", None)] + [("reference", cpu)] * n + [("candidate", cpu)] * (n - 1)
    # the candidate's first worker moved there for timing, the others pinned there as they started (by the grader)
    assert [c for _, c in pinned] == [{cpu}] * (2 * n), pinned


def test_a_sample_the_machinery_failed_is_reported_not_stored(data_dir: Path) -> None:
    from kbench.batch.grade import grade, plan
    from kbench.batch.pool import died

    samples, _ = discover(TOY, "toy")
    jobs = jobs_for(samples[:2], [UNTIMED])

    class Broken:  # a runner whose grading process died under the first sample
        def run(self, todo):  # noqa: ANN001, ANN202
            from kbench.core.results import Result

            yield todo[0], died(todo[0], "its grading process died 2 times")
            j = todo[1]
            yield j, Result(j.sample.task, j.sample.name, j.mode.name, j.mode.dists, "wrong", "bad numbers")

        def close(self) -> None:
            pass

    seen = []
    with Store(data_dir) as s:
        assert grade(jobs, s, Broken(), lambda job, r, stored: seen.append(stored)) == 1
        assert seen == [False, True]
        assert [r.sample for r in s.all(model="toy")] == [jobs[1].sample.name]
        assert plan(jobs, s).todo == [jobs[0]]  # the next run tries it again


@pytest.mark.timeout(120)
def test_ctrl_c_stops_a_run_in_one_line(data_dir: Path) -> None:
    env = {**os.environ, "KBENCH_DATA_DIR": str(data_dir)}
    cmd = [sys.executable, "-m", "kbench_cli.cli", "grade", str(TOY), "--correctness-only", "--workers", "2"]
    # Ctrl-C reaches kbench as from a terminal: a test run started in the background of a script (as `cmd &`)
    # inherits SIGINT ignored, and kbench rightly keeps an ignored SIGINT ignored.
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("[2/"):
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
            break
    rest = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(60) == 130, rest[-500:]
    assert "kbench: interrupted" in rest and "Traceback" not in rest


@pytest.mark.timeout(120)
def test_ctrl_c_does_not_wait_for_a_hung_sample_and_a_second_one_is_quiet(data_dir: Path, tmp_path: Path) -> None:
    # A sample spinning in forward() under a 100 s timeout: Ctrl-C must end the run at once (its result would be
    # thrown away anyway), and a second Ctrl-C while kbench exits must not print a traceback or hang.
    folder = tmp_path / "spinner" / "L1_gelu"
    folder.mkdir(parents=True)
    (folder / "spin.py").write_text("def forward(x, params, alloc):\n    while True:\n        pass\n")
    env = {**os.environ, "KBENCH_DATA_DIR": str(data_dir)}
    cmd = [sys.executable, "-m", "kbench_cli.cli", "grade", str(folder.parent), "--correctness-only", "--workers", "1",
           "--timeout", "100"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    for line in proc.stderr:
        if "sample(s) to grade" in line:
            break
    time.sleep(4)  # the pool process is up and the sample spinning
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.3)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        code = proc.wait(30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    rest = proc.stderr.read()
    proc.stderr.close()
    assert code == 130, rest[-500:]
    assert "kbench: interrupted" in rest and "Traceback" not in rest and "Exception ignored" not in rest, rest[-800:]


def test_grade_refuses_a_data_directory_it_cannot_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("KBENCH_DATA_DIR", str(tmp_path / "file" / "data"))
    assert main(["grade", str(TOY)]) == 2
    assert "needs a writable data directory" in capsys.readouterr().err


# -- issue 16, classes 4 and 5: a hostile model's folder ------------------------------------------------

def _no_control(text: str) -> bool:
    return all(ch.isprintable() or ch == "\n" for ch in text)


def test_discovery_survives_any_exception_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbench.batch import samples as samples_mod
    from tests.sample_model.generate import HOSTILE_NAMES, HOSTILE_SOURCES, hostile_model

    found, problems = discover(hostile_model(), "hostile")
    assert {s.name for s in found} == {"ok", *HOSTILE_NAMES, *HOSTILE_SOURCES} and not problems
    deep = next(s for s in found if s.name == "deep")
    assert deep.candidate.intent  # a note, whatever the docstring reader does with a 7000-deep expression

    # whatever reading one file raises, the others are still found
    real = samples_mod.read_source

    def flaky(path: Path, within: Path | None = None) -> str:
        if path.stem == "ok":
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, within)

    def bad_intent(src: str) -> str:
        raise MemoryError

    monkeypatch.setattr(samples_mod, "read_source", flaky)
    monkeypatch.setattr(samples_mod, "intent_of", bad_intent)
    found, problems = discover(hostile_model(), "hostile")
    assert {s.name for s in found} == {*HOSTILE_NAMES, *HOSTILE_SOURCES}
    assert [p.path.stem for p in problems] == ["ok"] and "RecursionError" in problems[0].why
    assert all(s.candidate.intent == samples_mod.UNREADABLE_INTENT.format(why="MemoryError") for s in found)


def test_grade_a_hostile_folder_grades_every_other_sample_and_prints_names_escaped(data_dir: Path) -> None:
    from kbench.core.text import one_line
    from tests.sample_model.generate import HOSTILE_NAMES, hostile_model

    folder = hostile_model()
    argv = [sys.executable, "-m", "kbench_cli.cli", "grade", str(folder), "--correctness-only", "--workers", "2",
            "--dist", "normal", "--timeout", "20"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600, errors="surrogateescape",
                       env={**os.environ, "KBENCH_DATA_DIR": str(data_dir)})
    out = p.stdout + p.stderr
    assert "Traceback" not in out, out[-3000:]
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out and "\u202e" not in out
    lines = out.splitlines()
    # the newline in a file name forged a "graded 9: 9 correct" line: now the name is one escaped line
    assert not any(line.startswith("graded 9:") for line in lines), lines
    for name in HOSTILE_NAMES:
        assert any(f"L1_gelu/{one_line(name)} hardened: correct" in line for line in lines), (name, lines)
    graded = stored_verdicts(data_dir, "hostile")
    # every sample is graded except, at most, the one the grader itself fails on (reported, not stored)
    assert {k for k, v in graded.items() if v == "correct"} >= {f"L1_gelu/{one_line(n)}" for n in ("ok", *HOSTILE_NAMES)}
    assert "L1_gelu/aliases" in graded and "L1_gelu/megabyte" in graded
    deep_line = next(line for line in lines if "L1_gelu/deep hardened:" in line)
    assert "L1_gelu/deep" in graded or "not graded (grading failed: MemoryError)" in deep_line, deep_line
    assert p.returncode == (0 if "L1_gelu/deep" in graded else 1)
    with Store(data_dir) as s:
        assert all(_no_control(r.sample) and _no_control(r.cand_name or "") for r in s.all(model="hostile"))
    # resuming compares the stored (escaped) names: nothing graded is graded again
    p2 = subprocess.run(argv, capture_output=True, text=True, timeout=600, errors="surrogateescape",
                        env={**os.environ, "KBENCH_DATA_DIR": str(data_dir)})
    assert f"already stored under the same key" in p2.stderr and f"{len(graded)} already stored" in p2.stderr


@pytest.mark.timeout(240)
def test_ctrl_c_at_any_moment_of_the_start_is_one_line(data_dir: Path) -> None:
    """Ctrl-C while kbench imports itself, while it spawns its grading processes and while they start their
    fork servers and workers: each printed a traceback once (KeyboardInterrupt in the parser's imports; in a
    half-started pool process; EOFError in a fork server or its child whose client was gone)."""
    env = {**os.environ, "KBENCH_DATA_DIR": str(data_dir)}
    cmd = [sys.executable, "-m", "kbench_cli.cli", "grade", str(TOY), "--correctness-only", "--workers", "2"]
    for delay in (0.15, 0.4, 0.8, 1.2, 1.6, 2.0, 2.5):
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
                                start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        err = proc.communicate(timeout=60)[1]
        assert "Traceback" not in err, (delay, err[-1500:])
        # The run may end before the Ctrl-C: the earlier runs stored most samples in the same data folder (and a
        # finished toy run exits 1, for its sample that is not UTF-8). Otherwise 130, or dying of the SIGINT after
        # saying so (-2: seen under pytest only, in about one run of three, at 0.15-0.4 s; a shell reports 130).
        if "see `kbench scores`" in err and "kbench: interrupted" not in err:
            # finished: its own exit code, or the Ctrl-C landed after its last line, while it exited (-2: seen once
            # at 2.5 s on 12-04, the summary printed in full)
            assert proc.returncode in (0, 1, 130, -signal.SIGINT), (delay, proc.returncode, err[-1500:])
        else:
            assert proc.returncode in (130, -signal.SIGINT), (delay, proc.returncode, err[-1500:])
            assert "kbench: interrupted" in err, (delay, err[-1500:])
