"""Per-model scores against values computed by hand from a small stored sample set."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from pathlib import Path

import pytest

from kbench.batch.scores import scores
from kbench.core.modes import HARDENED
from kbench.core.results import Result, Timing
from kbench.core.tasks import TASKS
from kbench.store import Store
from kbench_cli.cli import main


def res(task: str, status: str, speedup: float | None = None, ci: tuple[float, float] | None = None) -> Result:
    timing = None
    if speedup is not None:
        timing = Timing(method="interleaved", t_ref=1e-3, t_cand=1e-3 / speedup, speedup=speedup,
                        speedup_ci=ci or (speedup, speedup), n_samples=20, noise=False)
    return Result(task, "s", "hardened", HARDENED.dists, status, "", [], timing)


# model "m", hardened, by task (the registry's levels: N1 tasks at level 1, N2 at level 2)
N1 = sum(t.level == 1 for t in TASKS)
N2 = sum(t.level == 2 for t in TASKS)
M_SAMPLES = {
    "L1_gelu": [res("L1_gelu", "correct", 2.0, (1.8, 2.2)),  # > 1 by its interval and by its point
                res("L1_gelu", "correct", 1.05, (0.95, 1.15)),  # > 1 by its point only
                res("L1_gelu", "correct", 0.9, (0.85, 0.95)),
                res("L1_gelu", "wrong"), res("L1_gelu", "wrong"), res("L1_gelu", "compile_error")],
    "L1_softmax": [res("L1_softmax", "runtime_error"), res("L1_softmax", "correct", 0.5, (0.45, 0.55))],
    "L2_matmul_sum": [res("L2_matmul_sum", "correct", 4.0, (3.0, 5.0))],
}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("KBENCH_DATA_DIR", str(tmp_path))
    s = Store()
    mode = HARDENED
    for task, rs in M_SAMPLES.items():
        for i, r in enumerate(rs):
            s.put(f"d{task}{i}", task, f"s{i}", "model:m", r, mode=mode, model="m", sample=f"s{i}")
    # another model, side by side; and an explorer row (no model), which scores ignore
    s.put("o1", "L1_gelu", "s0", "model:o", res("L1_gelu", "correct", 3.0, (2.5, 3.5)), mode=mode, model="o",
          sample="s0")
    s.put("lib", "L1_gelu", "x", "library", res("L1_gelu", "correct", 9.0, (8.0, 10.0)), mode=mode)
    yield s
    s.close()


def by(rows: list, model: str, level: str):  # noqa: ANN201
    return next(r for r in rows if r.model == model and r.level == level)


def test_level_1_by_hand(store: Store) -> None:
    r = by(scores(store.all()), "m", "1")
    assert (r.tasks, r.samples, r.tasks_with_samples) == (N1, 8, 2)
    assert r.rates == pytest.approx({"correct": 4 / 8, "wrong": 2 / 8, "compile_error": 1 / 8,
                                     "runtime_error": 1 / 8, "rejected": 0.0})
    # fast_1: gelu 1 of 6 by interval (2 of 6 by point), softmax 0 of 2, the two tasks without samples 0
    assert r.fast_p[1.0] == pytest.approx((1 / 6) / N1)
    assert r.fast_p_point[1.0] == pytest.approx((2 / 6) / N1)
    # fast_0: every correct sample's interval is above 0: gelu 3/6, softmax 1/2
    assert r.fast_p[0.0] == pytest.approx((3 / 6 + 1 / 2) / N1)
    # fast_1@k, unbiased, n = 6 and c = 1 (interval) or 2 (point) on gelu, c = 0 elsewhere:
    # k=1: c/n; k=5: 1 - C(5,5)/C(6,5) = 5/6 by interval, 1 by point (n - c = 4 < 5); k=10 is clamped to n: 1
    assert r.fast_p_at_k == pytest.approx({1: (1 / 6) / N1, 5: (5 / 6) / N1, 10: 1 / N1})
    assert r.fast_p_at_k_point == pytest.approx({1: (2 / 6) / N1, 5: 1 / N1, 10: 1 / N1})
    assert r.geomean_speedup == pytest.approx((2.0 * 1.05 * 0.9 * 0.5) ** 0.25)


def test_level_2_all_levels_and_other_model(store: Store) -> None:
    rows = scores(store.all())
    assert {r.model for r in rows} == {"m", "o"}  # the explorer's row is not a model's
    l2 = by(rows, "m", "2")
    assert (l2.fast_p[1.0], l2.fast_p_at_k[5], l2.geomean_speedup) == pytest.approx((1 / N2, 1 / N2, 4.0))
    l3 = by(rows, "m", "3")
    assert l3.samples == 0 and l3.fast_p[1.0] == 0.0 and l3.geomean_speedup is None
    everything = by(rows, "m", "all")
    n = len(TASKS)  # every task of the registry counts, with samples or not
    assert everything.tasks == n and everything.fast_p[1.0] == pytest.approx((1 / 6 + 1) / n)
    assert everything.fast_p[2.0] == pytest.approx((0 + 1) / n)  # 2.0x's interval starts at 1.8: not > 2
    o = by(rows, "o", "1")
    assert o.fast_p[1.0] == pytest.approx(1 / N1) and o.fast_p_at_k[10] == pytest.approx(1 / N1)
    assert scores(store.all(), ["o"]) and {r.model for r in scores(store.all(), ["o"])} == {"o"}


def test_two_modes_of_one_name_are_two_columns(store: Store) -> None:
    untimed = dataclasses.replace(HARDENED, timing=None)
    store.put("o1", "L1_gelu", "s0", "model:o", res("L1_gelu", "correct"), mode=untimed, model="o", sample="s0")
    cols = {(r.mode, r.timed) for r in scores(store.all()) if r.model == "o"}
    assert len(cols) == 2 and {t for _, t in cols} == {True, False}
    assert all(m.startswith("hardened ") for m, _ in cols)


def test_machine_and_isolation_are_reported(store: Store) -> None:
    r = by(scores(store.all()), "m", "all")
    assert len(r.machines) == 1 and "cores" in r.machines[0]
    assert r.isolation  # the layers each result recorded, or that none were


def test_scores_cli_json_csv_and_table(store: Store, capsys: pytest.CaptureFixture) -> None:
    assert main(["scores", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    m1 = next(r for r in rows if r["model"] == "m" and r["level"] == "1")
    assert m1["fast_p"]["1"] == pytest.approx(1 / 24) and m1["fast_1_at_k"]["5"] == pytest.approx(5 / 24)
    assert main(["scores", "--csv", "--model", "m"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["model"] for r in table} == {"m"} and len(table) == 4  # levels 1, 2, 3 and all
    assert math.isclose(float(next(r for r in table if r["level"] == "all")["fast_1"]), 7 / 54)
    assert main(["scores"]) == 0
    out = capsys.readouterr().out
    assert "fast_1@5" in out and "level 1" in out and "m" in out and "o" in out
    assert main(["scores", "--model", "nobody"]) == 2
    assert "no graded samples for model 'nobody'" in capsys.readouterr().err


def test_scores_without_graded_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("KBENCH_DATA_DIR", str(tmp_path / "empty"))
    assert main(["scores"]) == 1
    assert "kbench grade" in capsys.readouterr().err


def test_a_hostile_model_name_is_text_in_every_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    """A model's name is a folder's name: markup in it stays text in the tables (it was parsed: ``[bold]``
    styled the column, ``[/]`` raised), escape characters are written out everywhere, CSV cells too."""
    monkeypatch.setenv("KBENCH_DATA_DIR", str(tmp_path))
    name = "[/][bold]m\x1b]0;pwned\x07\n=cmd"
    with Store() as s:
        s.put("d", "L1_gelu", "s0", f"model:{name}", res("L1_gelu", "correct", 2.0, (1.8, 2.2)), mode=HARDENED,
              model=name, sample="s0")
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["scores"]) == 0
    out = capsys.readouterr().out
    assert "[/][bold]m\\x1b]0;pwned\\x07\\n=cmd" in out and "\x1b" not in out and "\x07" not in out
    assert main(["scores", "--csv", "--model", name]) == 0  # the name as given finds its escaped row
    row = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert row["model"] == "[/][bold]m\\x1b]0;pwned\\x07\\n=cmd"
    assert main(["scores", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["model"] == row["model"]
