"""The Dask path on a real local cluster (no mocks): same verdicts as the local pool, a dead worker's
samples retried, timing on the timing worker only."""

from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from kbench.batch.samples import Job, discover, jobs_for  # noqa: E402
from kbench.core.modes import HARDENED, NAIVE  # noqa: E402
from kbench.store import Store  # noqa: E402
from kbench_cli.cli import main  # noqa: E402
from tests.sample_model.generate import EXPECTED, toy_model  # noqa: E402

UNTIMED = dataclasses.replace(HARDENED, timing=None)
TOY = toy_model()
pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "data"
    monkeypatch.setenv("KBENCH_DATA_DIR", str(d))  # the workers inherit it: their lane lives here too
    return d


def test_grade_on_a_local_cluster_gives_the_pool_verdicts(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["grade", str(TOY), "--correctness-only", "--workers", "1", "--model", "pool"]) == 1
    assert main(["grade", str(TOY), "--correctness-only", "--workers", "1", "--model", "dask",
                 "--scheduler", "local"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    with Store(data_dir) as s:
        pool = {(r.result.task, r.sample): r.result.status for r in s.all(model="pool")}
        dask = {(r.result.task, r.sample): r.result.status for r in s.all(model="dask")}
    assert pool == dask and len(dask) == len(EXPECTED)
    assert {f"{t}/{n}": v for (t, n), v in dask.items()} == EXPECTED


def test_timing_runs_on_the_timing_worker_and_a_dead_worker_is_retried(data_dir: Path) -> None:
    from kbench.batch.dask_runner import DaskRunner

    samples, _ = discover(TOY, "toy")
    timed = [Job(s, NAIVE) for s in samples if s.task == "L1_gelu"]  # 2 correct (timed), 3 not
    untimed = jobs_for([s for s in samples if s.task != "L1_gelu"], [UNTIMED])
    runner = DaskRunner("local", correctness_workers=2)
    try:
        info = runner.client.scheduler_info()["workers"]
        assert all(w["host"] == "127.0.0.1" for w in info.values())  # loopback only
        assert runner.resources() == {"timing": 1, "correctness": 2}
        by_role = {next(iter(w["resources"])) + a[-5:]: a for a, w in info.items()}
        pids = runner.client.run(os.getpid)
        victim = next(pids[a] for k, a in by_role.items() if k.startswith("correctness"))
        got: dict[str, object] = {}
        for i, (job, r) in enumerate(runner.run(timed + untimed)):
            got[f"{job.sample.task}/{job.sample.name}/{job.mode.name}"] = r
            if i == 0:
                os.kill(victim, signal.SIGKILL)  # its samples in flight go back to the scheduler
    finally:
        runner.close()
    assert len(got) == len(timed) + len(untimed)
    for key, r in got.items():
        task, name, mode = key.split("/")
        if mode == "naive":
            continue
        assert r.status == EXPECTED[f"{task}/{name}"], key
    naive = {k.split("/")[1]: r for k, r in got.items() if k.endswith("/naive")}
    assert naive["s0"].status == naive["s1"].status == "correct"
    assert naive["s0"].timing is not None and naive["s1"].timing is not None  # graded in full by the timing worker
    assert naive["s2"].status == "wrong" and naive["s3"].status == "runtime_error"


def test_unreachable_scheduler_is_one_line(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["grade", str(TOY), "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler" in err and "Traceback" not in err and err.count("\n") <= 5
