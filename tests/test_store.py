"""The stored-results layer: round trips, keys, recovery from bad files, kills mid-write, export."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

import pytest

from kbench import __version__
from kbench.core.machine import fingerprint, summary
from kbench.core.results import Result, Timing, Trial
from kbench.core.modes import HARDENED, NAIVE
from kbench.store import (CSV_COLUMNS, FILENAME, SCHEMA_VERSION, Store, default_path, grading_code_hash, mode_hash,
                          result_from_dict)
from tests.processes import sigkill_after

DISTS = ("normal", "uniform")


def make_result(mode: str = "hardened", dists: tuple[str, ...] = DISTS, status: str = "correct",
                speedup: float = 1.5, timed: bool = True) -> Result:
    trials = [Trial(i, d, "default", True, "ok", 1e-7, 2e-6) for i, d in enumerate(dists)]
    timing = Timing(method="interleaved", t_ref=2e-3, t_cand=2e-3 / speedup, speedup=speedup,
                    speedup_ci=(speedup * 0.9, speedup * 1.1), n_samples=30, noise=False, blas_threads=2,
                    achieved_gbs=12.5, achieved_gflops=3.0, roof_fraction=0.4,
                    ref_samples=[2e-3] * 3, cand_samples=[1e-3] * 3) if timed else None
    return Result("matmul", "fast_kernel", mode, tuple(dists), status, f"{speedup:.2f}x" if timed else "boom",
                  trials, timing, 0.25, {"load": 0.01})


def key_fields(r: Result) -> tuple:
    t = r.timing  # t_ref/t_cand are NaN without a timing, and NaN != NaN
    return (r.task, r.cand_name, r.mode, r.dists, r.status, r.msg, r.trials, r.speedup, r.speedup_ci,
            t and (t.method, t.t_ref, t.t_cand, t.n_samples, t.noise, t.blas_threads, t.achieved_gbs, t.achieved_gflops,
                 t.roof_fraction), r.elapsed, r.overhead)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / FILENAME


def test_fingerprint_fields() -> None:
    fp = fingerprint()
    assert {"cpu", "cores", "python", "numpy", "blas", "platform"} <= fp.keys()
    fp["cpu"] = "mutated"  # callers get a copy, not the cache
    assert fingerprint()["cpu"] != "mutated"
    assert "cores" in summary() and "numpy" in summary()


def test_result_from_dict_inverts_to_dict() -> None:
    for r in (make_result(), make_result(status="runtime_error", timed=False)):
        back = result_from_dict(r.to_dict())
        assert key_fields(back) == key_fields(r)
        assert isinstance(back.dists, tuple)
        assert back.timing is None or isinstance(back.timing.speedup_ci, tuple)
    minimal = result_from_dict({"task": "matmul", "mode": "naive", "status": "compile_error"})
    assert minimal.dists == () and minimal.timing is None and minimal.trials == []


def test_put_get_round_trip(db: Path) -> None:
    r = make_result()
    with Store(db) as s:
        assert s.notice is None
        s.put("abc123", "matmul", "fast_kernel", "library", r)
        got = s.get("abc123", "matmul", "hardened", DISTS)
    assert got is not None
    assert key_fields(got.result) == key_fields(r)
    assert (got.digest, got.cand_name, got.origin, got.version) == ("abc123", "fast_kernel", "library", __version__)
    assert (got.model, got.sample, got.code_hash) == ("", "", grading_code_hash())
    assert got.mode_hash == mode_hash(HARDENED.with_dists(DISTS))
    assert got.machine == fingerprint()
    assert isinstance(got.stored_at, datetime) and got.stored_at.tzinfo is not None


def test_survives_reopen(db: Path) -> None:
    with Store(db) as s:
        s.put("abc", "matmul", None, "file", make_result())
    with Store(db) as s:
        assert s.notice is None
        got = s.get("abc", "matmul", "hardened", DISTS)
        assert got is not None and got.cand_name is None and got.result.speedup == 1.5
        assert len(s.all()) == 1


def test_keys_are_separate_and_upsert(db: Path) -> None:
    with Store(db) as s:
        s.put("d1", "matmul", "k", "library", make_result("hardened", DISTS, speedup=1.0))
        s.put("d1", "matmul", "k", "library", make_result("naive", DISTS, speedup=2.0))
        s.put("d1", "matmul", "k", "library", make_result("hardened", ("normal",), speedup=3.0))
        s.put("d2", "matmul", "k", "library", make_result("hardened", DISTS, speedup=4.0))
        s.put("d1", "other", "k", "library", make_result("hardened", DISTS, speedup=5.0))
        assert len(s.all()) == 5
        assert s.get("d1", "matmul", "hardened", DISTS).result.speedup == 1.0
        assert s.get("d1", "matmul", "naive", DISTS).result.speedup == 2.0
        assert s.get("d1", "matmul", "hardened", ("normal",)).result.speedup == 3.0
        assert s.get("d2", "matmul", "hardened", DISTS).result.speedup == 4.0
        assert s.get("d1", "matmul", "hardened", ("uniform",)) is None
        s.put("d1", "matmul", "renamed", "file", make_result("hardened", DISTS, speedup=9.0))  # latest wins
        assert len(s.all()) == 5
        got = s.get("d1", "matmul", "hardened", DISTS)
        assert (got.result.speedup, got.cand_name, got.origin) == (9.0, "renamed", "file")


def test_other_grading_code_hidden_by_default(db: Path) -> None:
    with Store(db) as s:
        s.put("d", "matmul", "k", "library", make_result())
        assert s.all()[0].code_hash == grading_code_hash()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE results SET code_hash='0ld'")
    conn.close()
    with Store(db) as s:
        assert s.all() == [] and s.get("d", "matmul", "hardened", DISTS) is None
        assert [x.code_hash for x in s.all(all_versions=True)] == ["0ld"]


def test_grading_code_hash_covers_the_grading_packages(tmp_path: Path) -> None:
    h = grading_code_hash()
    assert len(h) == 16 and h == grading_code_hash()
    # a fresh process over the same files agrees (nothing random, nothing per-process in it)
    out = subprocess.run([sys.executable, "-c", "from kbench.store import grading_code_hash as g; print(g())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == h


def test_mode_hash_sees_every_field() -> None:
    assert mode_hash(HARDENED) == mode_hash(dataclasses.replace(HARDENED))
    assert mode_hash(HARDENED) != mode_hash(NAIVE)
    assert mode_hash(HARDENED) != mode_hash(dataclasses.replace(HARDENED, atol=1e-3))  # same name, other tolerance
    assert mode_hash(HARDENED) != mode_hash(HARDENED.with_dists(("normal",)))
    assert HARDENED.timing is not None
    slower = HARDENED.with_timing(budget_s=9.0)
    assert mode_hash(HARDENED) != mode_hash(slower)  # nested timing policy fields count too


def test_changed_tolerance_under_the_same_name_is_not_served(db: Path) -> None:
    loose = HARDENED.with_dists(DISTS)
    strict = dataclasses.replace(loose, atol=1e-4, rtol=1e-4)
    with Store(db) as s:
        s.put("d", "matmul", "k", "library", make_result(), mode=loose)
        assert s.get("d", "matmul", loose, DISTS) is not None
        assert s.get("d", "matmul", "hardened", DISTS) is not None  # the name means the registered mode
        assert s.get("d", "matmul", strict, DISTS) is None


def test_samples_of_models_are_keyed_apart(db: Path) -> None:
    with Store(db) as s:
        # two samples of one model with identical source, one model's sample and the explorer's candidate
        for model, sample in (("m1", "s0"), ("m1", "s1"), ("m2", "s0"), ("", "")):
            s.put("same", "matmul", sample or "k", "file", make_result(), model=model, sample=sample)
        assert len(s.all()) == 4
        assert s.models() == ["m1", "m2"]
        assert {x.sample for x in s.all(model="m1")} == {"s0", "s1"}
        assert [x.model for x in s.all(model="")] == [""]
        keys = s.keys("m1")
        assert len(keys) == 2 and all(k[0] == "m1" and k[1] == "matmul" for k in keys)
        assert {k[2] for k in keys} == {"s0", "s1"}
        assert {x.key for x in s.all(model="m1")} == keys
        assert s.get("same", "matmul", "hardened", DISTS, model="m2", sample="s0").model == "m2"
        assert s.get("same", "matmul", "hardened", DISTS, model="m2", sample="s1") is None


def test_version_1_file_is_moved_aside(db: Path) -> None:
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript("""CREATE TABLE results (
        digest TEXT NOT NULL, task TEXT NOT NULL, mode TEXT NOT NULL, dists TEXT NOT NULL, version TEXT NOT NULL,
        cand_name TEXT, origin TEXT NOT NULL, stored_at TEXT NOT NULL, machine TEXT NOT NULL, result TEXT NOT NULL,
        PRIMARY KEY (digest, task, mode, dists, version)); PRAGMA user_version=1;""")
    conn.close()
    with Store(db) as s:
        assert s.notice is not None and ".old-schema-" in s.notice
        assert s.all() == []
        s.put("d", "matmul", "k", "library", make_result())
        assert len(s.all()) == 1
    assert len(list(db.parent.glob(f"{FILENAME}.old-schema-*"))) == 1


def test_corrupt_file_is_moved_aside(db: Path) -> None:
    db.parent.mkdir(parents=True)
    junk = os.urandom(8192)
    db.write_bytes(junk)
    Path(f"{db}-wal").write_bytes(b"stale wal")
    with Store(db) as s:
        assert s.notice is not None and "moved to" in s.notice
        asides = sorted(db.parent.glob(f"{FILENAME}.corrupt-*"))
        assert [p.name for p in asides if not p.name.endswith("-wal")] and asides[0].name in s.notice
        assert any(p.read_bytes() == junk for p in asides)
        # SQLite itself drops a WAL it cannot pair with the main file; what matters is that the stale one
        # does not linger next to the fresh database
        assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").read_bytes() != b"stale wal"
        s.put("d", "matmul", "k", "library", make_result())
        assert s.get("d", "matmul", "hardened", DISTS) is not None
    with Store(db) as s:  # the fresh file is sound: no second notice
        assert s.notice is None and len(s.all()) == 1


@pytest.mark.parametrize("setup", [
    "PRAGMA user_version=999",
    "CREATE TABLE results (x INTEGER)",  # user_version 0 but a foreign table
    f"CREATE TABLE results (x INTEGER); PRAGMA user_version={SCHEMA_VERSION}",  # right number, wrong shape
])
def test_old_schema_is_moved_aside(db: Path, setup: str) -> None:
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript(setup)
    conn.close()
    with Store(db) as s:
        assert s.notice is not None and ".old-schema-" in s.notice
        assert len(list(db.parent.glob(f"{FILENAME}.old-schema-*"))) == 1
        s.put("d", "matmul", "k", "library", make_result())
        assert len(s.all()) == 1


def test_empty_file_is_just_initialised(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_bytes(b"")
    with Store(db) as s:
        assert s.notice is None
        s.put("d", "matmul", "k", "library", make_result())
        assert len(s.all()) == 1


def test_unwritable_directory_falls_back_to_memory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as root: chmod does not stop writes")
        with Store(locked / "sub" / FILENAME) as s:
            assert s.notice is not None and "memory" in s.notice and s.path is None
            s.put("d", "matmul", "k", "library", make_result())
            assert s.get("d", "matmul", "hardened", DISTS) is not None
    finally:
        locked.chmod(0o700)


def test_directory_that_is_a_file_falls_back_to_memory(tmp_path: Path) -> None:
    # works even as root, unlike chmod
    (tmp_path / "blocker").write_text("not a directory")
    with Store(tmp_path / "blocker" / FILENAME) as s:
        assert s.notice is not None and "memory" in s.notice
        s.put("d", "matmul", "k", "library", make_result())
        assert len(s.all()) == 1


def test_env_var_and_directory_argument(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBENCH_DATA_DIR", str(tmp_path / "env"))
    assert default_path() == tmp_path / "env" / FILENAME
    with Store() as s:
        s.put("d", "matmul", "k", "library", make_result())
    assert (tmp_path / "env" / FILENAME).exists()
    with Store(tmp_path / "env") as s:  # a directory argument means the file inside it
        assert s.path == tmp_path / "env" / FILENAME and len(s.all()) == 1


CHILD = """
import sys
from kbench.core.results import Result, Timing, Trial
from kbench.store import Store
s = Store(sys.argv[1])
trials = [Trial(i, "normal", "default", True, "ok " * 50, 1e-7, 1e-6) for i in range(200)]
for i in range(200):
    t = Timing(method="interleaved", t_ref=1e-3, t_cand=5e-4, speedup=2.0, speedup_ci=(1.8, 2.2), n_samples=30, noise=False)
    s.put(f"d{i:03d}", "matmul", f"k{i}", "library", Result("matmul", f"k{i}", "hardened", ("normal",),
          "correct", "2.00x", trials, t))
    print(i, flush=True)
"""


def test_kill_mid_write_keeps_completed_results(db: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    done = [int(line) for line in sigkill_after(proc, proc.stdout, 5)]
    assert len(done) == 5
    with Store(db) as s:
        assert s.notice is None
        stored = sorted(x.digest for x in s.all())
    # every put that reported success is there, each row readable, and no gaps
    assert stored[:len(done)] == [f"d{i:03d}" for i in done]
    assert stored == [f"d{i:03d}" for i in range(len(stored))]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_concurrent_puts_from_threads(db: Path) -> None:
    with Store(db) as s:
        def work(n: int) -> None:
            for i in range(20):
                s.put(f"t{n}-{i}", "matmul", "k", "library", make_result())
                s.get(f"t{n}-{i}", "matmul", "hardened", DISTS)
        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(s.all()) == 80


def test_export_json_and_csv(db: Path, tmp_path: Path) -> None:
    with Store(db) as s:
        s.put("d1", "matmul", "fast", "library", make_result())
        s.put("d2", "matmul", "naive", "library", make_result("naive"))
        s.put("d3", "matmul", None, "file", make_result(status="runtime_error", timed=False))
        out = tmp_path / "exports" / "new"
        jpath, cpath = s.export(out)
        jpath2, cpath2 = s.export(out)  # same second: must not overwrite
    assert jpath.parent == out and jpath.suffix == ".json" and cpath.suffix == ".csv"
    assert jpath.stem == cpath.stem and jpath.name.startswith("kbench-results-")
    assert {jpath2, cpath2}.isdisjoint({jpath, cpath}) and jpath2.exists() and cpath2.exists()
    records = json.loads(jpath.read_text())
    assert len(records) == 3
    by_digest = {r["digest"]: r for r in records}
    assert by_digest["d1"]["speedup"] == 1.5 and by_digest["d1"]["speedup_ci"] == pytest.approx([1.35, 1.65])
    assert len(by_digest["d1"]["trials"]) == 2 and by_digest["d1"]["machine"] == fingerprint()
    assert by_digest["d3"]["speedup"] is None and by_digest["d3"]["candidate"] is None
    for key in ("model", "sample", "task", "candidate", "digest", "origin", "mode", "dists", "status", "correct", "speedup",
                "speedup_ci", "t_ref", "t_cand", "n_samples", "msg", "stored_at", "machine", "trials"):
        assert key in records[0]
    with open(cpath, newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert tuple(reader.fieldnames) == CSV_COLUMNS and len(rows) == 3
    row = next(r for r in rows if r["digest"] == "d1")
    assert row["dists"] == "normal,uniform" and float(row["speedup"]) == 1.5
    assert "cores" in row["machine"] and "{" not in row["machine"] and "trials" not in row


def test_isolation_layers_are_stored_per_result(db: Path) -> None:
    r = dataclasses.replace(make_result(), isolation=("rlimits", "seccomp"))
    with Store(db) as s:
        s.put("d", "matmul", "k", "library", r, model="m", sample="s0")
        got = s.get("d", "matmul", "hardened", DISTS, model="m", sample="s0")
    assert got.isolation == ("rlimits", "seccomp") and got.result.isolation == ("rlimits", "seccomp")


def test_csv_export_neutralises_formula_text(db: Path, tmp_path: Path) -> None:
    r = dataclasses.replace(make_result(status="runtime_error", timed=False), msg="=HYPERLINK(\"x\")")
    with Store(db) as s:
        s.put("d", "matmul", "@name", "file", r, model="-m", sample="+s")
        _, cpath = s.export(tmp_path / "x")
    with open(cpath, newline="") as f:
        row = next(csv.DictReader(f))
    assert (row["msg"], row["candidate"], row["model"], row["sample"]) == ("'=HYPERLINK(\"x\")", "'@name", "'-m", "'+s")


HOSTILE = "nl\n=1+1 \x1b]0;pwned\x07 \x1b[2J [/] [@click=app.quit]x \u202e"


def test_candidate_text_is_stored_and_exported_harmless(db: Path, tmp_path: Path) -> None:
    """Names, origins and messages are stored as harmless single lines (no tool reading the database or
    its exports can be sent an escape); keys still match on the next lookup (resume)."""
    bad_trial = Trial(0, "normal", "default", False, f"ValueError: {HOSTILE}")
    r = dataclasses.replace(make_result(status="runtime_error", timed=False), msg=f"init failed: {HOSTILE}",
                            cand_name=HOSTILE, trials=[bad_trial], stdout=f"printed\n{HOSTILE}")
    with Store(db) as s:
        assert s.put("d", "matmul", HOSTILE, f"model:{HOSTILE}", r, model=HOSTILE, sample=HOSTILE)
        got = s.get("d", "matmul", "hardened", DISTS, model=HOSTILE, sample=HOSTILE)  # the raw key finds it
        assert got is not None
        assert len(s.keys(HOSTILE)) == 1 and s.models() == [got.model]
        jpath, cpath = s.export(tmp_path / "x")
    for text in (got.model, got.sample, got.cand_name, got.origin, got.result.msg, got.result.trials[0].message):
        assert text.isprintable(), repr(text)  # \u202e (right-to-left override) is a format character: escaped too
        assert "\\x1b]0;pwned\\x07" in text and "\\n" in text
    raw = sqlite3.connect(db).execute("SELECT model, sample, cand_name, origin, result FROM results").fetchone()
    assert all("\x1b" not in col and "\x07" not in col and "\n" not in col for col in raw[:4])
    stored = json.loads(raw[4])  # the result's JSON holds the written-out escapes, not the characters
    assert all(t.isprintable() for t in (stored["msg"], stored["cand_name"], stored["trials"][0]["message"]))
    assert "\x1b" not in stored["stdout"] and stored["stdout"].startswith("printed\n")
    for path in (jpath, cpath):
        text = path.read_text(encoding="utf-8")
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    with open(cpath, newline="") as f:
        row = next(csv.DictReader(f))
    assert "\n" not in row["msg"] and row["model"].startswith("nl\\n=1+1")
