"""Stored results: one SQLite file in the user's data directory, so evaluations survive restarts.

A result is keyed on (model, task, sample, candidate content digest, mode hash, distributions, grading-code
hash). The mode hash covers *every* field of the mode (a tolerance changed under the same name is a
different mode) and the grading-code hash covers the source of kbench/core, sandbox, timing and grading:
an edited kernel, an edited mode or an edited grader is evaluated afresh, never served a stale verdict.
Re-running the same thing replaces the old row. The explorer's own candidates are stored with an empty
model and sample; ``kbench grade`` fills both (one model per folder of samples).
Losing the history is never worth a crash: a corrupt or foreign file (or one of an older layout) is
moved aside, an unwritable directory falls back to memory, and either way ``notice`` says what happened.

Candidate text is stored harmless (``stored_text``: control characters written out, one line): names,
origins, verdict and trial messages, the printed head. So nothing read back from the database or its
exports (by kbench, ``sqlite3``, a spreadsheet, ``cat``) can move a cursor or forge a line; CSV cells
that start like a formula are quoted too (``text_cell``).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import platformdirs

from kbench.core.strict_json import dumps
from kbench.core import machine
from kbench.core import modes as modes_mod
from kbench.core.modes import Mode
from kbench.core.results import Result, Timing, Trial
from kbench.core.text import harmless, one_line

# Version 1 keyed on the mode's name and the kbench version only; its rows cannot say which tolerance or
# grader produced them, so a version-1 file is moved aside rather than migrated.
SCHEMA_VERSION = 2
FILENAME = "results.sqlite3"
_COLUMNS = ("model", "sample", "digest", "task", "mode", "mode_hash", "dists", "code_hash", "version",
            "cand_name", "origin", "stored_at", "machine", "isolation", "result")
_SCHEMA = """CREATE TABLE IF NOT EXISTS results (
    model TEXT NOT NULL, sample TEXT NOT NULL, digest TEXT NOT NULL, task TEXT NOT NULL, mode TEXT NOT NULL,
    mode_hash TEXT NOT NULL, dists TEXT NOT NULL, code_hash TEXT NOT NULL, version TEXT NOT NULL,
    cand_name TEXT, origin TEXT NOT NULL, stored_at TEXT NOT NULL, machine TEXT NOT NULL, isolation TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (model, task, sample, digest, mode_hash, dists, code_hash))"""

#: The packages whose source decides a verdict; the store key carries a hash of all of them.
GRADING_PACKAGES = ("core", "sandbox", "timing", "grading", "tasksets")


@functools.cache
def grading_code_hash() -> str:
    """A hash of every Python source file of kbench/core, sandbox, timing and grading, and of every shipped task
    set's task files (their references; candidates are keyed by their own content hash) (computed once)."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for pkg in GRADING_PACKAGES:
        for f in sorted((root / pkg).rglob("task.py" if pkg == "tasksets" else "*.py")):
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def stored_text(text: str) -> str:
    """A name or message as the store keeps it: one harmless line (idempotent, so keys compare)."""
    return one_line(text)


def _stored_result(result: Result) -> dict[str, Any]:
    """``result.to_dict()`` with its candidate text made harmless."""
    d = result.to_dict()
    for key in ("msg", "cand_name"):
        if isinstance(d.get(key), str):
            d[key] = stored_text(d[key])
    for t in d.get("trials") or []:
        if isinstance(t.get("message"), str):
            t["message"] = stored_text(t["message"])
    if isinstance(d.get("stdout"), str):
        d["stdout"] = harmless(d["stdout"], keep="\n")
    return d


def mode_hash(mode: Mode) -> str:
    """A hash of all of a mode's fields (the timing policy's included): same name, other tolerance, other hash."""
    return mode.digest


def _mode_of(mode: "Mode | str", dists: tuple[str, ...]) -> Mode | None:
    """The Mode a result was graded under, when only its name is known (None: not a registered mode)."""
    if isinstance(mode, Mode):
        return mode
    known = modes_mod.MODES.get(mode)
    if known is None:
        return None
    return known.with_dists(dists) if dists and dists != known.dists else known


def _mode_key(mode: "Mode | str", dists: tuple[str, ...]) -> str:
    m = _mode_of(mode, dists)
    if m is not None:
        return mode_hash(m)
    fields = json.dumps({"name": mode, "dists": list(dists)})  # an unregistered name: all we know of it
    return hashlib.sha256(fields.encode()).hexdigest()[:16]


def _version() -> str:
    from . import __version__  # at call time: kbench/__init__ may import this module before defining it

    return __version__


def default_path() -> Path:
    """$KBENCH_DATA_DIR/results.sqlite3, else the platform's user data directory."""
    base = os.environ.get("KBENCH_DATA_DIR")
    return Path(base or platformdirs.user_data_dir("kbench")) / FILENAME


def _fields(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    # ignore keys a newer kbench may have added, so old code still reads new rows
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def result_from_dict(d: dict[str, Any]) -> Result:
    """The inverse of ``Result.to_dict()`` (raw timing samples are not stored, so they come back empty)."""
    def timing_of(t: dict | None) -> Timing | None:
        if not t:
            return None
        return Timing(**{**_fields(Timing, t), "speedup_ci": tuple(t["speedup_ci"]),
                         "ref_samples": list(t.get("ref_samples") or []),
                         "cand_samples": list(t.get("cand_samples") or [])})

    timing = timing_of(d.get("timing"))
    trials = [Trial(**{**_fields(Trial, x), "checks": tuple(tuple(c) for c in x.get("checks") or ())})
              for x in d.get("trials") or []]
    extra: dict[str, Any] = {}
    if "isolation" in _RESULT_FIELDS:  # the sandbox's confinement layers, once results record them
        extra["isolation"] = tuple(d.get("isolation") or ())
    extra["breaches"] = dict(d.get("breaches") or {})
    extra["worker_clock"] = timing_of(d.get("worker_clock"))
    return Result(task=d["task"], cand_name=d.get("cand_name"), mode=d["mode"], dists=tuple(d.get("dists") or ()),
                  status=d["status"], msg=d.get("msg", ""), trials=trials, timing=timing,
                  elapsed=d.get("elapsed", 0.0), overhead=dict(d.get("overhead") or {}), **extra)


_RESULT_FIELDS = {f.name for f in dataclasses.fields(Result)}


@dataclass(frozen=True)
class StoredResult:
    result: Result
    stored_at: datetime
    machine: dict[str, Any]
    cand_name: str | None
    origin: str
    digest: str
    version: str = ""  # the kbench version that produced it
    model: str = ""  # "" for the explorer's candidates; the model's name for graded samples
    sample: str = ""
    mode_hash: str = ""
    code_hash: str = ""  # the grading code that produced it (matters with ``all(all_versions=True)``)
    isolation: tuple[str, ...] = ()  # the sandbox's confinement layers active for it, when recorded

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        """What resuming compares: (model, task, sample, digest, mode hash, distributions)."""
        return (self.model, self.result.task, self.sample, self.digest, self.mode_hash, ",".join(self.result.dists))


class _Unusable(Exception):
    """The existing file must be moved aside; ``kind`` names the reason in the aside file's name."""

    def __init__(self, kind: str, why: str) -> None:
        super().__init__(why)
        self.kind, self.why = kind, why


def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _free(path: Path) -> Path:
    """``path``, or ``path-1``, ``path-2``... whichever does not exist yet."""
    candidate, n = path, 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


class Store:
    """The results database. Thread-safe: one connection, every use under one lock."""

    def __init__(self, path: Path | str | None = None, *, read_only_fallback: bool = False) -> None:
        """``read_only_fallback``: for a command that only reads (``kbench scores``): when the database cannot
        be written, read it as it is (``read_only`` then; nothing can be stored) rather than start an empty
        one in memory."""
        self.notice: str | None = None
        self.read_only = False
        self._lock = threading.Lock()
        if path is not None and str(path) == ":memory:":
            self.path: Path | None = None
            self._conn = self._connect(":memory:")
            return
        p = Path(path) if path is not None else default_path()
        self.path = p
        try:
            if p.is_dir():  # in here: a name over 255 bytes raises (ENAMETOOLONG) and is one more unusable path
                p = self.path = p / FILENAME
            p.parent.mkdir(parents=True, exist_ok=True)
            if not os.access(p.parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.R_OK | os.W_OK)):
                raise PermissionError(f"{p.parent} is not writable")
            self._conn = self._open(p)
        except (OSError, sqlite3.Error) as e:
            # only an unwritable file is read as it is: a locked one may be mid-write (immutable would not see it)
            if not (read_only_fallback and isinstance(e, PermissionError) and self._open_read_only(p, e)):
                self._memory(f"Cannot use {p} ({e}); results are kept in memory for this session only.")

    def _open_read_only(self, p: Path, why: BaseException) -> bool:
        """Read ``p`` as it is, if it is a sound database of our schema; False (nothing changed) if not."""
        try:
            if not (p.is_file() and os.access(p, os.R_OK)):
                return False
        except OSError:
            return False
        # a WAL database in a directory sqlite cannot write its -shm file to opens only as immutable: read
        # once, as it is now (nothing writes to a directory no one may write)
        for query in ("mode=ro", "mode=ro&immutable=1"):
            conn = None
            try:
                conn = sqlite3.connect(f"{p.absolute().as_uri()}?{query}", uri=True, timeout=5.0,
                                       isolation_level=None, check_same_thread=False)
                self._check_conn(conn)
            except (_Unusable, sqlite3.Error, ValueError):
                if conn is not None:
                    conn.close()
                continue
            self._conn, self.read_only = conn, True
            self.notice = f"Cannot write to {p} ({why}); its results are read as they are and none can be stored."
            return True
        return False

    def _memory(self, notice: str) -> None:
        self.path = None
        self.notice = notice
        self._conn = self._connect(":memory:")

    @staticmethod
    def _connect(target: str) -> sqlite3.Connection:
        # autocommit: each statement (so each put) is its own transaction; timeout waits out other processes
        conn = sqlite3.connect(target, timeout=5.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # readers never block the writer (explorer + CLI)
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL keeps committed data consistent on a kill
            if conn.execute("PRAGMA user_version").fetchone()[0] == 0 and not _tables(conn):
                conn.execute(_SCHEMA)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self, p: Path) -> sqlite3.Connection:
        try:
            self._check(p)
        except _Unusable as e:
            aside = _free(p.with_name(f"{p.name}.{e.kind}-{_stamp()}"))
            for suffix in ("", "-wal", "-shm"):  # the WAL may hold committed pages: keep it with its file
                src = Path(f"{p}{suffix}")
                if src.exists():
                    os.replace(src, f"{aside}{suffix}")
            self.notice = f"The results database {p} {e.why}; it was moved to {aside} and a fresh one was started."
        return self._connect(str(p))

    @staticmethod
    def _check(p: Path) -> None:
        """Raise _Unusable if the file at ``p`` is not a sound database of our schema."""
        if not p.exists():
            return
        try:
            conn = sqlite3.connect(str(p), timeout=5.0, isolation_level=None)
        except sqlite3.DatabaseError as e:
            raise _Unusable("corrupt", f"could not be opened ({e})") from e
        try:
            Store._check_conn(conn)
        finally:
            conn.close()

    @staticmethod
    def _check_conn(conn: sqlite3.Connection) -> None:
        """``_check`` on an open connection (left open)."""
        try:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
            if rows != [("ok",)]:
                raise _Unusable("corrupt", f"failed its integrity check ({rows[0][0]})")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = _tables(conn)
            if version == 0 and not tables:
                return  # an empty database (e.g. a zero-byte file): just create the schema in it
            cols = tuple(r[1] for r in conn.execute("PRAGMA table_info(results)")) if "results" in tables else ()
            if version != SCHEMA_VERSION or cols != _COLUMNS:
                raise _Unusable("old-schema", f"has an unknown layout (schema version {version})")
        except sqlite3.OperationalError as e:
            if getattr(e, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED"):
                raise  # another process holds it: the file is fine, do not move it aside
            raise _Unusable("corrupt", f"could not be read ({e})") from e
        except sqlite3.DatabaseError as e:
            raise _Unusable("corrupt", f"could not be read ({e})") from e

    def put(self, cand_digest: str, task: str, cand_name: str | None, origin: str, result: Result, *,
            mode: Mode | None = None, model: str = "", sample: str = "") -> bool:
        """Store ``result``, replacing any earlier one under the same key; False if it could not be written.

        ``mode`` is the Mode it was graded under; without it, the registered mode of ``result.mode``'s
        name (with the result's distributions) is assumed."""
        dists = tuple(result.dists)
        row = (stored_text(model), stored_text(sample), cand_digest, task, result.mode,
               _mode_key(mode or result.mode, dists), ",".join(dists), grading_code_hash(), _version(),
               None if cand_name is None else stored_text(cand_name), stored_text(origin),
               datetime.now(timezone.utc).isoformat(), json.dumps(machine.fingerprint()),
               json.dumps(list(getattr(result, "isolation", ()) or ())), json.dumps(_stored_result(result)))
        sql = f"INSERT OR REPLACE INTO results ({','.join(_COLUMNS)}) VALUES ({','.join('?' * len(_COLUMNS))})"
        try:
            with self._lock:
                self._conn.execute(sql, row)
        except sqlite3.OperationalError as e:
            # disk full, file gone read-only, locked too long: losing one result beats killing the explorer
            self.notice = f"Could not store a result ({e})."
            return False
        return True

    def get(self, cand_digest: str, task: str, mode: "Mode | str", dists: tuple[str, ...], *, model: str = "",
            sample: str = "") -> StoredResult | None:
        """The stored result for this key under the current grading code, if any."""
        sql = (f"SELECT {','.join(_COLUMNS)} FROM results WHERE model=? AND sample=? AND digest=? AND task=? "
               "AND mode_hash=? AND dists=? AND code_hash=?")
        args = (stored_text(model), stored_text(sample), cand_digest, task, _mode_key(mode, tuple(dists)),
                ",".join(dists), grading_code_hash())
        with self._lock:
            row = self._conn.execute(sql, args).fetchone()
        return _stored(row) if row else None

    def all(self, all_versions: bool = False, model: str | None = None) -> list[StoredResult]:
        """Every stored result (graded by the current code unless ``all_versions``; of one model if
        ``model`` is given, "" being the explorer's candidates), oldest first."""
        sql = f"SELECT {','.join(_COLUMNS)} FROM results"
        where: list[str] = []
        args: list[str] = []
        if not all_versions:
            where.append("code_hash=?")
            args.append(grading_code_hash())
        if model is not None:
            where.append("model=?")
            args.append(stored_text(model))
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY stored_at", args).fetchall()
        return [s for s in map(_stored, rows) if s is not None]

    def models(self) -> list[str]:
        """Names of the models with graded samples under the current grading code, sorted."""
        sql = "SELECT DISTINCT model FROM results WHERE model != '' AND code_hash=? ORDER BY model"
        with self._lock:
            return [r[0] for r in self._conn.execute(sql, (grading_code_hash(),)).fetchall()]

    def keys(self, model: str) -> set[tuple[str, str, str, str, str, str]]:
        """The full keys (see ``StoredResult.key``) of ``model``'s results under the current grading code:
        what ``kbench grade`` skips when it resumes."""
        sql = "SELECT model, task, sample, digest, mode_hash, dists FROM results WHERE model=? AND code_hash=?"
        with self._lock:
            rows = self._conn.execute(sql, (stored_text(model), grading_code_hash())).fetchall()
        return {tuple(r) for r in rows}  # type: ignore[misc]

    def export(self, directory: Path, stem: str = "kbench-results") -> tuple[Path, Path]:
        """Write every current-version result as ``<stem>-<time>.json`` (full) and ``.csv`` (flat)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        base, n = f"{stem}-{_stamp()}", 0
        while (directory / f"{base}.json").exists() or (directory / f"{base}.csv").exists():
            n += 1  # never overwrite an earlier export; keep the pair's names matched
            base = f"{stem}-{_stamp()}-{n}"
        records = [_record(s) for s in self.all()]
        json_path, csv_path = directory / f"{base}.json", directory / f"{base}.csv"
        with open(json_path, "x", encoding="utf-8") as f:
            f.write(dumps(records, indent=2))
        with open(csv_path, "x", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
            w.writeheader()
            for r in records:
                lo, hi = r["speedup_ci"] or (None, None)
                row = {**{k: r.get(k) for k in CSV_COLUMNS}, "dists": ",".join(r["dists"]),
                       "isolation": ",".join(r["isolation"]),
                       "speedup_ci_lo": lo, "speedup_ci_hi": hi, "machine": machine.summary(r["machine"])}
                w.writerow({k: text_cell(v) for k, v in row.items()})
        return json_path, csv_path

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


CSV_COLUMNS = ("model", "task", "sample", "candidate", "digest", "origin", "mode", "dists", "status", "correct",
               "speedup", "speedup_ci_lo", "speedup_ci_hi", "t_ref", "t_cand", "n_samples", "msg", "stored_at",
               "kbench_version", "mode_hash", "code_hash", "isolation", "machine")


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def text_cell(v: Any) -> Any:
    """A CSV cell that a spreadsheet will show as text and a terminal as one harmless line: candidate-
    controlled strings (a verdict message carries an exception's name, a sample its file name) have their
    control characters written out (rows stored by an older kbench may hold them raw), and those starting
    like a formula get a leading quote."""
    if not isinstance(v, str):
        return v
    v = one_line(v)
    return f"'{v}" if v.startswith(_FORMULA_STARTS) else v


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _stored(row: tuple[Any, ...]) -> StoredResult | None:
    r = dict(zip(_COLUMNS, row))
    try:
        return StoredResult(result=result_from_dict(json.loads(r["result"])),
                            stored_at=datetime.fromisoformat(r["stored_at"]), machine=json.loads(r["machine"]),
                            cand_name=r["cand_name"], origin=r["origin"], digest=r["digest"], version=r["version"],
                            model=r["model"], sample=r["sample"], mode_hash=r["mode_hash"], code_hash=r["code_hash"],
                            isolation=tuple(json.loads(r["isolation"])))
    except (ValueError, KeyError, TypeError):
        return None  # a row some other kbench wrote in a shape we cannot read: skip it, keep the rest


def _record(s: StoredResult) -> dict[str, Any]:
    r, t = s.result, s.result.timing
    return {"model": s.model, "task": r.task, "sample": s.sample, "candidate": s.cand_name, "digest": s.digest,
            "origin": s.origin, "mode": r.mode, "dists": list(r.dists), "status": r.status, "correct": r.correct, "speedup": t.speedup if t else None,
            "speedup_ci": list(t.speedup_ci) if t else None, "t_ref": t.t_ref if t else None,
            "t_cand": t.t_cand if t else None, "n_samples": t.n_samples if t else None, "msg": r.msg,
            "stored_at": s.stored_at.isoformat(), "kbench_version": s.version, "mode_hash": s.mode_hash,
            "code_hash": s.code_hash, "isolation": list(s.isolation), "machine": s.machine,
            "trials": [dataclasses.asdict(x) for x in r.trials]}


