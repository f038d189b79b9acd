"""The hack × defence matrix (``kbench.batch.matrix``, ``kbench matrix``): real cells, graded in this run —
NaN-filled alloc off lets ``hack_stale_alloc`` through, fresh inputs off makes ``hack_content_hash`` fast
(only the roofline floor still catches it), the gate off lets a gate-rejected attack load — and the shape
of ``--json``. Kept cheap: one or two candidates, one or two defences, correctness only where it is enough."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.batch import matrix as mx
from kbench.core import defences as catalogue
from kbench.core.library import Candidate, active
from kbench.store import Store
from kbench.timing.stats import OTHER_LOAD_LIMIT

ADVERSARIAL = Path(__file__).parent / "adversarial"


def _lib(key: str) -> Candidate:
    return next(c for c in active() if c.key == key)


def test_the_library_hacks_are_the_ones_the_task_folders_mark():
    keys = {c.key for c in mx.library_hacks()}
    assert {"L1_diag_matmul/hack_stale_alloc", "L1_diag_matmul/hack_cache_on_input",
            "L3_mlp_block/hack_content_hash"} <= keys
    assert "L1_diag_matmul/row_scale" not in keys


def test_nan_alloc_off_lets_the_stale_alloc_hack_through(grader):
    events: list[mx.MatrixEvent] = []
    m = mx.compute([_lib("L1_diag_matmul/hack_stale_alloc")], ("nan_alloc", "gate", "property_checks"),
                   base=mx.CORRECTNESS_BASE, grader=grader, on_event=events.append)
    row = m.rows[0]
    assert row.hardened.status == "wrong" and "NaN" in row.hardened.msg
    cell = row.cells["nan_alloc"]
    assert cell.how == "run" and cell.result is not None and cell.result.status == "correct"
    assert mx.through(cell.result, timed=False)
    assert row.cells["gate"].how == "same" and row.cells["gate"].result is row.hardened  # the gate passed it
    assert row.cells["property_checks"].how == "derived" and row.cells["property_checks"].result.status == "wrong"
    assert m.runs == 2 and [e.done for e in events] == [1, 2, 3] and events[-1].total == 3
    assert events[0].defence is None and events[1].defence == "nan_alloc"


def test_fresh_inputs_off_lets_the_content_hash_hack_hit_and_only_the_roofline_catches_it(grader):
    """Verdicts only: how fast its hits read (and that hardened times it at the reference's speed) depends on the
    machine's load, and is measured in ``benchmarks/naive_fooled.py``."""
    c = _lib("L3_mlp_block/hack_content_hash")
    m = mx.compute([c], ("fresh_inputs",), base=mx.TIMED_BASE, grader=grader)
    row = m.rows[0]
    assert row.hardened.status == "correct" and not row.hardened.breaches  # fresh inputs: it computes honestly
    cell = row.cells["fresh_inputs"]
    assert cell.how == "run" and cell.result is not None
    timing = cell.result.timing
    assert timing is not None and timing.cand_samples
    both = mx.view(row.hardened, {"fresh_inputs", "roofline_floor"}, cell.result, timed=True)
    assert both is not None and both.status == "correct"  # with the floor off too, nothing stops it
    if mx.caught_by(cell.result) is None and timing.other_load > OTHER_LOAD_LIMIT:
        # Others kept a core busy: the grading thread woke late on its shared core, and its clock gave each 10 us hit
        # 2-4 ms (12-04, a busy loop beside it), above the quarter floor. The run says it was contended; what the
        # floor does is checked on a quiet machine.
        assert timing.contended
        pytest.skip(f"others used {timing.other_load:.2f} cores: the grader's clock cannot show 10 us cache hits")
    assert mx.caught_by(cell.result) == "roofline_floor" and cell.result.status == "rejected", \
        (cell.result.msg, timing.cand_samples, timing.other_load)
    assert mx.cell_text(cell.result, cell.how)[0] == "⊘ roofline_floor"


def test_the_gate_off_lets_a_gate_rejected_attack_load_and_results_are_stored(grader):
    src = (ADVERSARIAL / "allclose_patch.py").read_text()
    c = Candidate("L1_gelu", "allclose_patch", "patches np.allclose", src, origin="tests")
    store = Store(":memory:")
    m = mx.compute([c], ("gate", "check_timed"), base=mx.CORRECTNESS_BASE, grader=grader, store=store)
    row = m.rows[0]
    assert row.hardened.status == "rejected" and "gate" in row.hardened.breaches
    gate = row.cells["gate"]
    assert gate.how == "run" and gate.result is not None and gate.result.status == "wrong"  # loaded, then judged
    assert gate.result.trials and "gate" not in gate.result.breaches
    ct = row.cells["check_timed"].result  # decided by the gate: no timed output to check
    assert ct is not None and ct.status == "rejected" and mx.caught_by(ct) == "gate"
    again = mx.compute([c], ("gate",), base=mx.CORRECTNESS_BASE, grader=grader, store=store)
    assert again.runs == 0 and again.stored == 2 and again.rows[0].cells["gate"].result.status == "wrong"
    store.close()


def test_a_hack_already_through_is_not_run_again_and_the_cell_says_so():
    hard = _correct_result(speedup=5.0)
    calls = []

    def fake(task, src, mode, name, **kw):  # type: ignore[no-untyped-def]
        calls.append(mode.name)
        return hard

    m = mx.compute([_lib("L1_gelu/cube_by_mult")], ("nan_alloc", "check_timed"), evaluate=fake)
    assert calls == ["hardened"] and m.rows[0].cells["nan_alloc"].how == "skipped"
    assert m.rows[0].cells["nan_alloc"].result is None and m.to_dict()["rows"][0]["cells"]["nan_alloc"]["status"] is None


def test_variant_modes_are_named_apart_and_keep_the_mode_valid():
    v = mx.variant(mx.TIMED_BASE, {"exact_output"})
    assert v.name == "hardened-without-exact_output+float64_recheck" and not v.has("exact_output")
    assert mx.variant(mx.TIMED_BASE, {"nan_alloc"}).digest != mx.TIMED_BASE.digest
    with pytest.raises(KeyError):
        mx.compute([], ("no_such_defence",))


def _correct_result(speedup: float):  # type: ignore[no-untyped-def]
    from kbench.core.results import Result, Timing

    t = Timing(method="interleaved", t_ref=1.0, t_cand=1 / speedup, speedup=speedup,
               speedup_ci=(speedup * 0.9, speedup * 1.1), n_samples=10, noise=False)
    return Result("L1_gelu", "x", "hardened", ("normal",), "correct", f"{speedup:.2f}x", timing=t)


def _kbench(*args: str, **kw):  # type: ignore[no-untyped-def]
    return subprocess.run([sys.executable, "-m", "kbench_cli.cli", *args], capture_output=True, text=True,
                          timeout=180, stdin=subprocess.DEVNULL, **kw)


def test_kbench_matrix_json_is_strict_json_of_the_documented_shape():
    p = _kbench("matrix", "--json", "--no-store", "--correctness-only", "--task", "L3_mlp_block",
                "--defence", "nan_alloc", "--defence", "property_checks")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert set(d) == {"mode", "timed", "defences", "runs", "stored", "rows"}
    assert d["defences"] == ["nan_alloc", "property_checks"] and d["timed"] is False
    [row] = d["rows"]
    assert (row["task"], row["candidate"], row["origin"]) == ("L3_mlp_block", "hack_content_hash", "library")
    keys = {"how", "status", "msg", "speedup", "speedup_ci", "through", "caught_by"}
    assert set(row["hardened"]) == keys and all(set(c) == keys for c in row["cells"].values())
    assert row["hardened"]["status"] == "correct" and row["hardened"]["through"] is True
    assert row["cells"]["nan_alloc"]["how"] == "skipped" and row["cells"]["property_checks"]["how"] == "derived"


@pytest.mark.parametrize("args", [
    ["matrix", "--defence", "no_such"],
    ["matrix", "--task", "no_such_task"],
    ["matrix", "--candidates", "/no/such/dir"],
    ["matrix", "--json", "--csv"],
], ids=" ".join)
def test_kbench_matrix_bad_input_is_one_line_and_exit_2(args):
    p = _kbench(*args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_every_defence_of_the_catalogue_is_a_matrix_column_by_default():
    assert mx.Matrix(mx.TIMED_BASE, catalogue.NAMES, []).to_dict()["defences"] == list(catalogue.NAMES)


def test_the_readme_defence_table_is_the_catalogue_s():
    """The README's table is generated from the catalogue: every defence appears, and nothing else."""
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- defences: generated by kbench.batch.matrix.defence_table()")
    body = readme[readme.index("\n", start) + 1:readme.index("<!-- /defences -->")].strip()
    assert body == mx.defence_table()
    for d in catalogue.DEFENCES:
        assert f"| `{d.name}` | {d.title} |" in body, d.name


def test_a_distribution_view_keeps_what_the_defence_views_derive_from():
    """The explorer derives defence views from the view on the enabled distributions: ``restricted`` keeps the
    run's breaches and the worker's own clock (without them, grader_clock off needed a run of its own)."""
    from kbench.core.results import Trial

    r = _correct_result(speedup=3.0)
    r = dataclasses.replace(r, dists=("normal", "edge"), trials=[Trial(0, "normal", "default", True, "ok"),
                                                                  Trial(1, "edge", "default", True, "ok")],
                            worker_clock=r.timing, breaches={})
    view = r.restricted(("normal",))
    assert view is not None and view.worker_clock is r.timing
    assert catalogue.derive(view, {"grader_clock"}) is not None
    wrong = dataclasses.replace(r, status="wrong", msg="thread", breaches={"thread_check": "rejected: 1 thread"})
    assert wrong.restricted(("normal",)).breaches == {"thread_check": "rejected: 1 thread"}
