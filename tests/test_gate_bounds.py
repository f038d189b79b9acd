"""The static gate and the intent reader are pure, bounded functions (issue 16, class 4): on hostile sources —
a 7000-deep prefix-operator chain, ten thousand aliases in the shapes that made the old alias fixpoint
quadratic, a megabyte of ordinary code — each ends in a one-line verdict, raises nothing but SyntaxError or
ValueError (``check``) or nothing at all (``intent_of``). The time bound asserted here (30 s) only catches hangs:
the real timings are measured and written down in the notes, not asserted."""

from __future__ import annotations

import sys
import time

import pytest

from kbench.core.library import MAX_SOURCE_BYTES, intent_of
from kbench.core.loader import MAX_SOURCE_BYTES as LOADER_MAX
from kbench.core.loader import load_candidate
from kbench.core.tasks import base_namespace
from kbench.grading import static_gate

HANG = 30.0  # seconds: a hang, not a speed claim


def deep_prefix(n: int = 7000) -> str:
    return '"""deep"""\nx = ' + "-" * n + "1\n"


def alias_chain(n: int = 10_000) -> str:
    return '"""aliases"""\na0 = np\n' + "".join(f"a{i + 1} = a{i}\n" for i in range(n)) + f"a{n}.sum = None\n"


def alias_self_rebinding(n: int = 10_000) -> str:
    """One name bound ten thousand times to itself: the old fixpoint re-queued it once per binding (193 s)."""
    return '"""same"""\na = np\n' + "a = a\n" * n + "a.sum = None\n"


def alias_fan(n: int = 5_000) -> str:
    """Two names feeding each other through five thousand steps (59 s before)."""
    return '"""fan"""\na = np\n' + "".join(f"b{i} = a\na = b{i}\n" for i in range(n)) + "a.sum = None\n"


def alias_reverse_globals(n: int = 3_000) -> str:
    src = '"""reverse"""\n' + "".join(f"def f{i}():\n    global a{i}\n    a{i} = a{i + 1}\n" for i in range(n))
    return src + f"a{n} = np\na0.sum = None\n"


def ordinary_megabyte() -> str:
    block = '''
def kernel_{i}(x, params, alloc):
    """Block {i}: a softmax over the last axis."""
    m = np.max(x["x"], axis=-1, keepdims=True)
    e = np.exp(x["x"] - m)
    s = e.sum(axis=-1, keepdims=True)
    out = alloc(e.shape)
    np.divide(e, s, out=out)
    return out if out.shape == (2048, 1024) else out.reshape(2048, 1024)

'''
    parts, size, i = ['"""a megabyte of ordinary code"""\n'], 0, 0
    while size < MAX_SOURCE_BYTES - 2000:
        parts.append(block.format(i=i))
        size += len(parts[-1])
        i += 1
    return "".join(parts) + "forward = kernel_0\n"


def _timed(f, *args):
    t = time.perf_counter()
    try:
        out = f(*args)
    except (SyntaxError, ValueError) as e:
        out = e
    return out, time.perf_counter() - t


def test_one_size_constant_for_every_reader():
    assert MAX_SOURCE_BYTES == LOADER_MAX == static_gate.MAX_SOURCE_BYTES == 1_000_000


def test_a_7000_deep_prefix_chain_is_a_syntax_error_not_a_memory_error():
    src = deep_prefix()
    out, dt = _timed(static_gate.check, src)
    assert isinstance(out, SyntaxError) and "nested" in out.msg, out
    assert dt < HANG
    assert intent_of(src) == "deep"
    fwd, init, err = load_candidate(src, base_namespace())
    assert fwd is None and err.startswith("SyntaxError: too deeply nested"), err


@pytest.mark.parametrize("make,line", [(alias_chain, 10_003), (alias_self_rebinding, 10_003), (alias_fan, 10_003),
                                       (alias_reverse_globals, 9_003)],
                         ids=["chain", "self-rebinding", "fan", "reverse-globals"])
def test_ten_thousand_aliases_are_followed_in_linear_time(make, line):
    src = make()
    out, dt = _timed(static_gate.check, src)
    assert dt < HANG
    assert [(r.rule, r.line) for r in out] == [("module-patch", line)], out[:3]
    assert intent_of(src) != "(no docstring)"


def test_a_megabyte_of_ordinary_code_passes_within_bounds():
    src = ordinary_megabyte()
    assert MAX_SOURCE_BYTES - 3000 < len(src.encode()) <= MAX_SOURCE_BYTES
    out, dt = _timed(static_gate.check, src)
    assert out == [] and dt < HANG
    t = time.perf_counter()
    assert intent_of(src) == "a megabyte of ordinary code"
    assert time.perf_counter() - t < HANG


def test_over_the_caps_is_one_size_verdict():
    big = "x = 1\n" * (MAX_SOURCE_BYTES // 6 + 1)
    found = static_gate.check(big)
    assert [(r.rule, r.line) for r in found] == [("size", 1)] and "1,000,000 bytes" in found[0].detail
    tiny_statements = "a\n" * 400_000  # 800 KB: under the byte cap, but 400 000 statements
    assert [r.rule for r in static_gate.check(tiny_statements)] == ["size"]
    wide = "".join(f"{v} = [" + "a," * 140_000 + "]\n" for v in "xyz")
    out, dt = _timed(static_gate.check, wide)  # 420 000 names on three lines: the node budget
    assert [r.rule for r in out] == ["size"] and dt < HANG
    _, _, err = load_candidate(big, base_namespace())
    assert err.startswith("ValueError: the source is") and "limited to 1,000,000 bytes" in err


@pytest.mark.parametrize("src", ids=["parens", "attributes", "lambdas", "binop", "not", "syntax", "nul", "bom",
                                    "unterminated"], argvalues=[
    "x = " + "(" * 300 + ")" * 300 + "\n",  # the tokenizer's paren limit
    "x = y" + ".a" * 100_000 + "\n",  # the parser's recursion limit
    "f = " + "lambda: " * 5000 + "1\n",
    "x = 1" + "+1" * 200_000 + "\n",
    "x = " + "not " * 20_000 + "1\n",
    "def f(:\n",
    "x = 1\x00\n",
    "\ufeffx = 1\n",
    "x = '''" + "a" * 1000,
])
def test_the_gate_raises_only_syntax_or_value_errors(src):
    try:
        static_gate.check(src)
    except (SyntaxError, ValueError) as e:
        assert "\n" not in str(getattr(e, "msg", e))
    assert isinstance(intent_of(src), str)


def test_deep_but_parsable_nesting_is_checked_iteratively():
    """As deep as the parser goes under the default recursion limit: the gate's own walks are loops."""
    assert sys.getrecursionlimit() <= 1000
    src = "x = y" + ".a" * 2500 + "\nz = " + " + ".join(["y"] * 2500) + "\nw = np.linalg\n"
    assert static_gate.check(src) == []


def test_a_gate_failure_of_any_kind_is_a_gate_rejection(monkeypatch):
    for exc in (MemoryError, RecursionError, KeyError("boom"), AttributeError("x")):
        def broken(*a, exc=exc):
            raise exc

        monkeypatch.setattr(static_gate._Modules, "__init__", broken)
        found = static_gate.check("x = y\n")
        assert [(r.rule, r.line) for r in found] == [("gate", 1)], exc
    monkeypatch.undo()
    assert static_gate.check("x = y\n") == []


def test_intent_of_never_parses(monkeypatch):
    import ast

    def no_parse(*a, **k):
        raise AssertionError("intent_of called ast.parse")

    monkeypatch.setattr(ast, "parse", no_parse)
    assert intent_of('"""Row-wise softmax, fused.\n\nMore."""\nimport numpy as np\n') == "Row-wise softmax, fused."
    assert intent_of("# comment\n\n'''  \n   Indented title\n'''\n") == "Indented title"
    assert intent_of('("parenthesised"\n "doc")\nx = 1\n') == "parenthesiseddoc"
    assert intent_of('r"raw \\d"\n') == "raw \\d"
    assert intent_of('"\\u00e9t\\xe9"\n') == "été"
    assert intent_of('"doc".upper()\n') == "(no docstring)"
    assert intent_of('b"bytes"\n') == "(no docstring)"
    assert intent_of('f"{x}"\n') == "(no docstring)"
    assert intent_of("x = 1\n") == "(no docstring)"
    assert intent_of('"""unterminated\n') == "unterminated"
    assert intent_of('"""Broken file."""\ndef f(:\n') == "Broken file."
    assert intent_of("") == "(no docstring)"


def test_format_messages_escape_the_candidates_text():
    """Issue 16, class 5: a field read from the source reaches terminals and the store only escaped."""
    src = 'x = "{0[\x1b]2J\x07}".format(a)\n'
    found = static_gate.check(src)
    assert found and found[0].rule == "format"
    assert "\x1b" not in found[0].detail and "\x07" not in found[0].detail and "\\x1b" in found[0].detail
    nested = 'x = "' + "{:" * 50 + "}" * 50 + '".format(1)\n'
    assert [r.rule for r in static_gate.check(nested)] == ["format"]


def test_labels_from_source_are_escaped():
    found = static_gate.check('n = np\nn.x\u202e = 1\n' if "\u202e".isidentifier() else 'n = np\n[n]\n')
    assert found and all(ch.isprintable() for r in found for ch in str(r))
