"""Graded models for the explorer's models screen, headless: each model's samples (from its folder, given
with ``kbench --model``, or from the result store alone), their stored verdicts, and the scores
``kbench scores`` prints, computed by the same code (``kbench.batch.scores``).

No Textual here. Sample and model names are candidate text, kept as they are on disk (the store keeps them
escaped: ``stored_text``); the faces escape them when they show them.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from kbench.batch.samples import Problem, discover
from kbench.batch.scores import Score, score, scores
from kbench.core import machine
from kbench.core.library import Candidate
from kbench.core.modes import HARDENED, MODES, Mode
from kbench.core.results import Result
from kbench.core.tasks import active as active_tasks
from kbench.store import StoredResult, stored_text


@dataclass(frozen=True)
class ModelSample:
    """One sample of one model: its file (``candidate``) when the model's folder is open, else only what
    the store knows of it (its task, name and the content hash it was graded at)."""

    model: str
    task: str
    name: str
    digest: str
    candidate: Candidate | None = None

    @property
    def ident(self) -> tuple[str, str, str]:
        """(model, task, sample) as the store keys them."""
        return stored_text(self.model), self.task, stored_text(self.name)

    @property
    def key(self) -> str:
        return f"{self.model}/{self.task}/{self.name}"


def split_model_arg(value: str) -> tuple[str, Path]:
    """``--model NAME=DIR`` or ``--model DIR`` (the name is then the folder's). A folder whose own name holds
    ``=`` is taken whole when it exists."""
    if "=" in value and not Path(value).is_dir():
        name, _, folder = value.partition("=")
        if name:
            return name, Path(folder)
    path = Path(value)
    return path.resolve().name or str(path), path


def check_model_dir(name: str, folder: Path) -> tuple[str | None, list[Problem]]:
    """(why ``folder`` cannot be opened as a model, one line, or None; what in it will not be graded). A
    folder with only unreadable or misplaced files has no samples: it is refused like an empty one."""
    if not folder.is_dir():
        return f"--model {folder}: not a directory", []
    samples, problems = discover(folder, name)
    if not samples:
        return f"--model {folder}: no samples (expected {folder}/<task>/<sample>.py)", problems
    return None, problems


class GradedModels:
    """Models and their stored results. ``mode``: the hash of the mode the views show (one mode for every
    model: a model graded under another shows "–"); ``label`` names it as ``kbench scores`` would, its
    hash added when two stored modes share a name, "(untimed)" for a correctness-only one."""

    def __init__(self, stored: Iterable[StoredResult] = (), folders: Iterable[tuple[str, Path]] = ()) -> None:
        self.problems: list[str] = []
        self.folders: dict[str, Path] = {}
        self._folder_samples: dict[str, list[ModelSample]] = {}
        for name, folder in folders:
            found, problems = discover(Path(folder), name)
            self.problems += [str(p) for p in problems if isinstance(p, Problem)]
            self.folders[name] = Path(folder)
            self._folder_samples[name] = [ModelSample(name, s.task, s.name, s.candidate.digest, s.candidate)
                                          for s in found]
        self.mode: str | None = None
        self.reload(stored)

    # -- loading ----------------------------------------------------------------------------------

    def reload(self, stored: Iterable[StoredResult]) -> None:
        """Take the store's graded samples (rows with a model); keeps the shown mode when it is still there."""
        self.rows: list[StoredResult] = [s for s in stored if s.model]
        self._rescore()

    def add(self, sample: ModelSample, result: Result, mode: Mode) -> StoredResult:
        """A result graded in this session (``e``/``r``): replaces the row of the same key, as the store does."""
        c = sample.candidate
        row = StoredResult(result=result, stored_at=datetime.now(timezone.utc), machine=machine.fingerprint(),
                           cand_name=stored_text(sample.name), origin=stored_text(c.origin if c else ""),
                           digest=sample.digest, model=stored_text(sample.model), sample=stored_text(sample.name),
                           mode_hash=mode.digest, isolation=tuple(result.isolation or ()))
        self.rows = [r for r in self.rows if r.key != row.key] + [row]
        self._rescore()
        return row

    def _rescore(self) -> None:
        self.scores: list[Score] = scores(self.rows)
        names = {r.mode_hash: r.result.mode for r in self.rows}
        hashes = list(dict.fromkeys(s.mode_hash for s in self.scores))
        timed = {s.mode_hash for s in self.scores if s.timed}
        shared = {n for n in names.values() if list(names.values()).count(n) > 1}
        self._labels = {h: (f"{names[h]} {h[:6]}" if names[h] in shared else names[h])
                        + ("" if h in timed else " (untimed)") for h in hashes}
        # hardened first (kbench's grader), timed before correctness-only; then as kbench scores orders them
        self.modes: list[str] = sorted(hashes, key=lambda h: (names[h] != "hardened", h not in timed, hashes.index(h)))
        if self.mode not in self.modes:
            self.mode = self.modes[0] if self.modes else None
        self._by_sample: dict[tuple[str, str, str, str], list[StoredResult]] = defaultdict(list)
        for r in self.rows:
            self._by_sample[(r.model, r.result.task, r.sample, r.mode_hash)].append(r)
        self._samples: dict[str, list[ModelSample]] = {}  # the store's samples per model, built when asked

    @property
    def labels(self) -> list[str]:
        """Every stored mode's label, in ``modes`` order."""
        return [self._labels[h] for h in self.modes]

    @property
    def label(self) -> str | None:
        """The shown mode's label."""
        return self._labels.get(self.mode) if self.mode else None

    def label_of(self, mode_hash: str) -> str:
        return self._labels.get(mode_hash, mode_hash[:6])

    def next_mode(self) -> str | None:
        """Show the next stored mode; returns its hash."""
        if self.modes:
            i = self.modes.index(self.mode) if self.mode in self.modes else -1
            self.mode = self.modes[(i + 1) % len(self.modes)]
        return self.mode

    # -- models and samples -----------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """Open folders first (in the order given), then every other model in the store, by name."""
        out = list(self._folder_samples)
        seen = {stored_text(n) for n in out}
        for r in sorted({r.model for r in self.rows}):
            if r not in seen:
                out.append(r)
                seen.add(r)
        return out

    def samples(self, model: str) -> list[ModelSample]:
        """The model's samples, by task then name: its folder's files, or the samples the store knows."""
        if model in self._folder_samples:
            return self._folder_samples[model]
        if model not in self._samples:
            self._samples[model] = self._stored_samples(model)
        return self._samples[model]

    def _stored_samples(self, model: str) -> list[ModelSample]:
        latest: dict[tuple[str, str], StoredResult] = {}
        for r in self.rows:  # oldest first: the last row of a sample is its latest content
            if r.model == stored_text(model):
                latest[(r.result.task, r.sample)] = r
        order = {t.name: i for i, t in enumerate(active_tasks())}
        return [ModelSample(model, task, name, r.digest)
                for (task, name), r in sorted(latest.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1]))]

    def tasks(self) -> list[str]:
        """The tasks any open model has a sample for, in the library's order."""
        have = {s.task for m in self.names for s in self.samples(m)}
        return [t.name for t in active_tasks() if t.name in have]

    def for_task(self, model: str, task: str) -> list[ModelSample]:
        return [s for s in self.samples(model) if s.task == task]

    # -- verdicts and scores ----------------------------------------------------------------------

    def score(self, model: str, mode: str | None = None, level: str = "all") -> Score | None:
        """``kbench scores``' row for this model under this mode (a hash; default: the shown one) and level
        (None: nothing stored under it)."""
        mode = mode or self.mode
        return next((s for s in self.scores if s.model == stored_text(model) and s.mode_hash == mode
                     and s.level == level), None)

    def verdict(self, sample: ModelSample, mode: str | None = None) -> StoredResult | None:
        """The sample's stored result under the shown mode, for its current content (an edited file's old
        verdict is not its verdict)."""
        mode = mode or self.mode
        if mode is None:
            return None
        rows = [r for r in self._by_sample.get((*sample.ident, mode), []) if r.digest == sample.digest]
        return rows[-1] if rows else None

    def verdicts(self, sample: ModelSample) -> list[tuple[str, StoredResult | None]]:
        """(mode hash, stored result) for every mode this sample's model was graded under."""
        return [(h, self.verdict(sample, h)) for h in self.modes if self.score(sample.model, h) is not None]

    def curve(self, model: str, ps: list[float], mode: str | None = None) -> list[float] | None:
        """Noise-aware fast_p over all tasks at each p (``kbench.batch.scores.score`` on a finer grid); None
        when the model has nothing timed under this mode (its fast_p would be 0 everywhere, not measured)."""
        s = self.score(model, mode)
        if s is None or not s.timed:
            return None
        rows = [r for r in self.rows if r.model == stored_text(model) and r.mode_hash == s.mode_hash]
        fine = score(model, s.mode, "all", rows, p_grid=tuple(ps), k_grid=())
        return [fine.fast_p[p] for p in ps]

    # -- re-grading -------------------------------------------------------------------------------

    def mode_to_grade(self, mode: str | None = None) -> Mode:
        """The Mode of the shown column (or of ``mode``, a hash), rebuilt from the registered modes (with or
        without timing, on the stored distributions) by its hash, so a re-grade replaces that column's row.
        A mode that cannot be rebuilt (a custom time-out, say) falls back to the registered mode of its name;
        nothing stored yet: hardened, as ``kbench grade`` grades by default."""
        mode = mode or self.mode
        rows = [r for r in self.rows if r.mode_hash == mode]
        if not rows:
            return HARDENED
        for base in MODES.values():
            for timing in (base.timing, None):
                for ds in [base.dists, *sorted({tuple(r.result.dists) for r in rows})]:
                    try:
                        m = dataclasses.replace(base, timing=timing).with_dists(ds)
                    except (KeyError, ValueError):
                        continue
                    if m.digest == mode:
                        return m
        return MODES.get(rows[0].result.mode, HARDENED)
