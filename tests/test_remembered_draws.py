"""Plain input draws remembered by the generator's state (``kbench.core.remembered_draws``, ``Task.make_inputs``):
a remembered draw must be indistinguishable from a fresh one, values and generator alike."""

from __future__ import annotations

import numpy as np
import pytest

from kbench import TASK
from kbench.core import distributions, remembered_draws


@pytest.fixture(autouse=True)
def _fresh_memory():
    remembered_draws.forget()
    yield
    remembered_draws.forget()


def _fresh(task, seed, dist, draws):  # noqa: ANN001, ANN202 - the same draws with no memory at all
    rng = np.random.default_rng(seed)
    outs = [{k: distributions.sample(rng, dist, s) for k, s in task.inputs.items()} for _ in range(draws)]
    return outs, rng


# a large draw (filled in halves by two child generators it spawns) and a small one (from the generator itself)
@pytest.mark.parametrize("name", ["L1_softmax", "L3_mlp_block"])
def test_a_remembered_draw_gives_the_same_values_and_leaves_the_generator_where_a_fresh_draw_would(name):
    task = TASK[name]
    expected, fresh_rng = _fresh(task, 7, "lognormal", 3)
    for _ in range(2):  # the second pass is answered from memory
        rng = np.random.default_rng(7)
        got = [task.make_inputs(rng, "lognormal") for _ in range(3)]
        for g, e in zip(got, expected):
            assert g.keys() == e.keys() and all(np.array_equal(g[k], e[k]) for k in e)
        assert rng.bit_generator.state == fresh_rng.bit_generator.state
        assert rng.bit_generator.seed_seq.n_children_spawned == fresh_rng.bit_generator.seed_seq.n_children_spawned
        # what the caller draws next is what it would draw next without any memory
        assert np.array_equal(rng.standard_normal(5), _next(fresh_rng))
    s = remembered_draws.stats()[name]
    assert (s.drawn, s.hits) == (3, 3)


def _next(rng):  # noqa: ANN001, ANN202 - the next five normals of a copy of rng, rng untouched
    twin = np.random.Generator(type(rng.bit_generator)())
    twin.bit_generator.state = rng.bit_generator.state
    return twin.standard_normal(5)


def test_the_caller_owns_a_remembered_draw():
    task = TASK["L1_gelu"]
    first = task.make_inputs(np.random.default_rng(3), "normal")
    clean = {k: v.copy() for k, v in first.items()}
    for v in first.values():
        v[...] = np.nan  # what an in-place candidate leaves behind
    for _ in range(2):
        again = task.make_inputs(np.random.default_rng(3), "normal")
        assert all(np.array_equal(again[k], clean[k]) for k in clean)
        for v in again.values():
            v[...] = np.nan
    assert remembered_draws.stats()["L1_gelu"].hits == 2


def test_another_state_distribution_or_task_is_drawn_afresh():
    gelu, softmax = TASK["L1_gelu"], TASK["L1_softmax"]
    gelu.make_inputs(np.random.default_rng(3), "normal")
    gelu.make_inputs(np.random.default_rng(4), "normal")
    gelu.make_inputs(np.random.default_rng(3), "uniform")
    rng = np.random.default_rng(3)
    rng.random()  # the same seed, moved on
    gelu.make_inputs(rng, "normal")
    softmax.make_inputs(np.random.default_rng(3), "normal")
    assert remembered_draws.stats()["L1_gelu"].hits == 0 and remembered_draws.stats()["L1_softmax"].hits == 0


def test_a_generator_whose_state_cannot_be_named_whole_is_never_remembered():
    task = TASK["L1_gelu"]

    class Seq(np.random.SeedSequence):  # not numpy's own SeedSequence: its children could be anything
        pass

    for _ in range(2):
        task.make_inputs(np.random.Generator(np.random.PCG64(Seq(3))), "normal")
    assert remembered_draws.stats()["L1_gelu"] == remembered_draws.Stats(hits=0, drawn=2)


def test_a_caller_that_never_repeats_a_state_stops_paying_for_the_memory(monkeypatch):
    monkeypatch.setattr(remembered_draws, "GIVE_UP", 5)
    task = TASK["L1_gelu"]
    for seed in range(8):
        task.make_inputs(np.random.default_rng(seed), "normal")
    task.make_inputs(np.random.default_rng(0), "normal")  # a repeat, after giving up
    assert remembered_draws.stats()["L1_gelu"] == remembered_draws.Stats(hits=0, drawn=9)
    assert remembered_draws.held() == 0


def test_a_tasks_first_draws_are_kept_and_other_tasks_draws_make_room(monkeypatch):
    gelu, softmax, small = TASK["L1_gelu"], TASK["L1_softmax"], TASK["L2_gemm_bias_gelu"]
    one_gelu = 4 * sum(int(np.prod(s)) for s in gelu.inputs.values())
    monkeypatch.setattr(remembered_draws, "budget", lambda: 3 * one_gelu)
    softmax.make_inputs(np.random.default_rng(0), "normal")  # larger than the whole budget: not kept
    for _ in range(2):
        for seed in range(5):  # the first three fit; a task's new draws do not push out its first ones
            gelu.make_inputs(np.random.default_rng(seed), "normal")
    assert remembered_draws.stats()["L1_gelu"].hits == 3
    for _ in range(2):  # another task's draw makes room from the gelu's
        small.make_inputs(np.random.default_rng(0), "normal")
    assert remembered_draws.stats()["L2_gemm_bias_gelu"].hits == 1
    gelu.make_inputs(np.random.default_rng(0), "normal")
    assert remembered_draws.stats()["L1_gelu"].hits == 3
    assert remembered_draws.held() <= 3 * one_gelu
