"""Reference outputs remembered by the content of their inputs (``kbench.core.remembered``, ``Task.ref_fn()``)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from kbench import TASK
from kbench.core import remembered


@pytest.fixture(autouse=True)
def _fresh_memory():
    remembered.forget()
    yield
    remembered.forget()


def _slow_double(x, params, alloc):  # noqa: ANN001, ANN202 - a reference that costs far more than its hash
    time.sleep(0.05)
    return x["a"] * np.float32(params.get("k", 2.0))


def test_a_repeated_call_is_answered_from_memory_with_a_copy_the_caller_owns():
    f = remembered.remembered("t_slow", "src", _slow_double)
    x = {"a": np.arange(8, dtype=np.float32)}
    first = f(x, {"k": 3.0})
    again = f({"a": np.arange(8, dtype=np.float32)}, {"k": 3.0})  # other arrays, the same content
    assert np.array_equal(first, again) and again is not first
    again[:] = -1  # the caller's to change: the memory keeps its own
    assert np.array_equal(f(x, {"k": 3.0}), np.arange(8, dtype=np.float32) * 3)
    s = remembered.stats()["t_slow"]
    assert (s.computed, s.hits) == (1, 2)


def test_any_change_to_inputs_or_parameters_computes_afresh():
    f = remembered.remembered("t_slow", "src", _slow_double)
    x = {"a": np.arange(8, dtype=np.float32)}
    f(x, {"k": 3.0})
    x["a"][5] = 100.0  # what a candidate that writes into its input leaves behind
    assert f(x, {"k": 3.0})[5] == 300.0
    assert f(x, {"k": 4.0})[5] == 400.0  # another scalar
    assert f(x, {"k": np.float32(4.0)})[5] == 400.0  # the same value as another type: not assumed equal
    assert f({"a": x["a"].reshape(2, 4)}, {"k": 4.0}).shape == (2, 4)  # the same bytes in another shape
    assert remembered.stats()["t_slow"].computed == 5 and remembered.stats()["t_slow"].hits == 0


def test_arguments_without_nameable_content_are_never_answered_from_memory():
    f = remembered.remembered("t_slow", "src", _slow_double)
    x = {"a": np.arange(8, dtype=np.float32)}
    for _ in range(2):
        f(x, {"k": 2.0, "callback": object()})
    assert remembered.stats()["t_slow"].hits == 0


def test_a_reference_cheaper_than_hashing_its_inputs_is_not_remembered():
    f = remembered.remembered("t_cheap", "src", lambda x, p, a: x["a"][:1].copy())
    x = {"a": np.ones(1 << 22, np.float32)}  # 16 MiB to hash, for a kernel of a few microseconds
    for _ in range(3):
        f(x, {})
    s = remembered.stats()["t_cheap"]
    assert (s.computed, s.hits) == (3, 0)


def test_a_reference_whose_inputs_never_repeat_stops_paying_for_the_hash(monkeypatch):
    monkeypatch.setattr(remembered, "GIVE_UP", 3)
    f = remembered.remembered("t_fresh", "src", lambda x, p, a: (time.sleep(0.05), x["a"] + 1)[1])
    hashed = []
    key = remembered._key
    monkeypatch.setattr(remembered, "_key", lambda *a: (hashed.append(1), key(*a))[1])
    for i in range(6):
        f({"a": np.full(4, i, np.float32)}, {})
    assert len(hashed) == 3  # three misses, then no more hashing
    assert not remembered._memories[("t_fresh", hash("src"))].entries


def test_outputs_kept_stay_within_the_budget_least_recently_used_first(monkeypatch):
    monkeypatch.setattr(remembered, "MAX_BYTES", 4 * 4096)
    f = remembered.remembered("t_slow", "src", _slow_double)
    xs = [{"a": np.full(1024, i, np.float32)} for i in range(6)]  # 4 KiB outputs: four fit
    for x in xs:
        f(x, {})
    assert remembered._held[0] <= 4 * 4096
    f(xs[5], {})
    f(xs[0], {})
    s = remembered.stats()["t_slow"]
    assert (s.hits, s.computed) == (1, 7)  # the newest came from memory, the oldest had been dropped


def test_the_lectures_reference_calls_repeat_and_give_the_same_verdicts():
    """ref_fn() as demo 4 calls it: each candidate of a task sees the same draws (its generator seeded afresh),
    so the second candidate's reference calls are answered from memory, with the outputs a fresh call gives."""
    t = TASK["L2_gemm_bias_gelu"]
    outs = []
    for _ in range(2):
        rng = np.random.default_rng(1)
        params = t.make_params(rng, False)
        outs.append([np.asarray(t.ref_fn()(t.make_inputs(rng, "normal"), params, None)) for _ in range(3)])
    fresh_rng = np.random.default_rng(1)
    fresh_params = t.make_params(fresh_rng, False)
    fresh = [t.ref_fn(remember=False)(t.make_inputs(fresh_rng, "normal"), fresh_params, None) for _ in range(3)]
    for a, b, c in zip(*outs, fresh):
        assert np.array_equal(a, c) and np.array_equal(b, c)
    s = remembered.stats()[t.name]
    if s.computed + s.hits == 6 and remembered._memories[(t.name, hash(t.ref_src))].worth:
        assert (s.computed, s.hits) == (3, 3)


def test_a_reference_kept_from_before_forget_still_answers_and_keeps_to_the_budget(monkeypatch):
    monkeypatch.setattr(remembered, "MAX_BYTES", 4 * 4096)
    f = remembered.remembered("t_slow", "src", _slow_double)
    remembered.forget()  # f's memory is no longer listed: it must still work, and still drop its own outputs
    for i in range(6):
        assert f({"a": np.full(1024, i, np.float32)}, {})[0] == 2 * i
    assert f({"a": np.full(1024, 5, np.float32)}, {})[0] == 10
    assert remembered._held[0] <= 4 * 4096
    g = remembered.remembered("t_obj", "src", lambda x, p, a: (time.sleep(0.05), np.zeros(1))[1])
    for _ in range(2):
        g({"a": np.array([object()], dtype=object)}, {})  # an object array's bytes are pointers: no content key
    assert remembered.stats()["t_obj"].hits == 0
