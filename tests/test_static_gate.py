"""The static gate as an allow-list: evasions are rejected with the rule that catches them, honest Python
passes, and every library candidate and task reference passes (the gate is a first filter, never a reason to
turn honest code away)."""

from __future__ import annotations

import tomllib
import types
from pathlib import Path

import numpy
import pytest

from kbench.core.library import LIBRARY
from kbench.core.tasks import TASKS
from kbench.grading import static_gate

#: Library candidates whose designed verdict is a compile error the gate cannot see (a SyntaxError is raised).
SYNTAX_ERRORS = {"L2_gemm_bias_gelu/ternary_clamp"}

with open(Path(__file__).with_name("static_gate_cases.toml"), "rb") as _f:
    _CASES = tomllib.load(_f)
#: name -> (source, rule of the first rejection, line of the first rejection)
EVASIONS: dict[str, tuple[str, str, int]] = {
    name: (case["source"], case["rule"], case["line"]) for name, case in _CASES["evasion"].items()}
HONEST: dict[str, str] = {name: case["source"] for name, case in _CASES["honest"].items()}


@pytest.mark.parametrize("name", EVASIONS)
def test_evasion_is_rejected_with_its_rule_and_line(name):
    src, rule, line = EVASIONS[name]
    found = static_gate.check(src)
    assert found, f"{name} passes the gate"
    first = found[0]
    assert (first.rule, first.line) == (rule, line), [str(r) for r in found]
    assert str(first) == f"line {line} {first.detail} [{rule}]"


@pytest.mark.parametrize("name", HONEST)
def test_honest_code_passes(name):
    assert [str(r) for r in static_gate.check(HONEST[name])] == []


def test_library_candidates_and_references_pass():
    assert len(LIBRARY) >= 4 * len(TASKS)
    for c in LIBRARY:
        key, src = c.key, c.src
        if key in SYNTAX_ERRORS:
            with pytest.raises(SyntaxError):
                static_gate.check(src)
            continue
        assert [str(r) for r in static_gate.check(src)] == [], key
    for task in TASKS:
        assert static_gate.check(task.ref_src) == [], task.name


def test_messages_read_as_sentences():
    assert [str(r) for r in static_gate.check("x = 1\ny = 2\nfrom numpy.lib._utils_impl import os, sys\n")] == [
        "line 3 reaches private name _utils_impl [private]"]
    assert str(static_gate.check("import os\n")[0]) == "line 1 imports os [import]"
    assert str(static_gate.check("n = np\nn.allclose = None\n")[0]) == \
        "line 2 assigns to module attribute n.allclose [module-patch]"
    assert str(static_gate.check("t = np.testing\n")[0]) == \
        "line 1 reaches module numpy.testing, which is not a module candidates may use [escape]"


def test_every_numpy_module_outside_the_computation_list_is_refused():
    """Derived from numpy itself: each public module attribute of numpy is either a computation module or
    rejected, as an attribute, from any root, and as a from-import."""
    allowed = set(static_gate.ALLOWED_MODULES) | set(static_gate.PASSAGES)
    for name in sorted(n for n in dir(numpy) if not n.startswith("_")):
        value = vars(numpy).get(name)
        if not isinstance(value, types.ModuleType) or value.__name__ in allowed:
            continue
        for src in (f"x = np.{name}\n", f"from numpy import {name}\n"):
            assert static_gate.check(src), f"{src!r} passes the gate"


def test_public_numpy_functions_pass():
    for name in ("einsum", "tanh", "float32", "newaxis", "errstate", "matmul", "add", "finfo", "frombuffer",
                 "shares_memory", "vecdot", "set_printoptions"):
        assert static_gate.check(f"f = np.{name}\nfrom numpy import {name}\n") == [], name


def test_unparsable_source_raises_syntax_error():
    with pytest.raises(SyntaxError):
        static_gate.check("def f(:\n")


def test_candidate_module_is_not_main():
    """The main-guard exemption holds only because a candidate never runs as ``__main__``."""
    from kbench.core.tasks import base_namespace
    assert base_namespace()["__name__"] != "__main__"


def test_alias_chain_in_any_order_is_followed():
    """A module passed down 2000 aliases bound in reverse source order (through ``global``) is still a module."""
    n = 2000
    src = "".join(f"def f{i}():\n    global a{i}\n    a{i} = a{i + 1}\n" for i in range(n))
    src += f"a{n} = np\na0.allclose = None\n"
    found = static_gate.check(src)
    assert [(r.rule, r.line) for r in found] == [("module-patch", 3 * n + 2)]


def test_deep_expressions_do_not_exhaust_recursion():
    assert static_gate.check("x = y" + ".a" * 2500 + "\nz = " + " + ".join(["y"] * 2500) + "\n") == []
    with pytest.raises(SyntaxError):  # beyond the parser's own limit: what compile() says too
        static_gate.check("x = y" + ".a" * 100_000 + "\n")


def test_a_gate_bug_is_a_rejection_not_an_exception(monkeypatch):
    def broken(self, node):
        raise KeyError("boom")

    monkeypatch.setattr(static_gate._Checker, "_check_Name", broken)
    found = static_gate.check("x = y\n")
    assert [(r.rule, r.line) for r in found] == [("gate", 1)]
    assert "kbench bug" in str(found[0])
