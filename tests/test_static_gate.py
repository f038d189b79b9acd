"""The static gate as an allow-list: evasions are rejected with the rule that catches them, honest Python
passes, and every library candidate and task reference passes (the gate is a first filter, never a reason to
turn honest code away)."""

from __future__ import annotations

import glob
import types
from pathlib import Path

import numpy
import pytest

from kbench.core.tasks import TASKS
from kbench.grading import static_gate

CANDIDATES = Path(static_gate.__file__).resolve().parent.parent / "candidates"
#: Library candidates whose designed verdict is a compile error the gate cannot see (a SyntaxError is raised).
SYNTAX_ERRORS = {"L2_gemm_bias_gelu/ternary_clamp"}

# name -> (source, rule of the first rejection, line of the first rejection)
EVASIONS: dict[str, tuple[str, str, int]] = {
    # private names, whatever the root of the chain
    "private_module_attr": ("x = np._core.multiarray\n", "private", 1),
    "private_chain_from_list": ("x = [np][0].lib._utils_impl\n", "private", 1),
    "private_chain_from_call": ("x = (lambda: np)().x._y\n", "private", 1),
    "private_chain_from_subscript": ("d = {}\nx = d['k']._secret\n", "private", 2),
    "private_decoy_named_like_numpy_module": (
        "class A:\n    def __init__(self):\n        self._core = 1\n\n    def get(self):\n        return self._core\n",
        "private", 3),
    "private_ctypes_module_of_array": ("def f(a):\n    return a.ctypes._ctypes\n", "private", 2),
    # imports
    "import_os": ("import numpy as np\nimport os\n", "import", 2),
    "import_numpy_testing": ("import numpy.testing\n", "import", 1),
    "import_private_module": ("import numpy._core as c\n", "private", 1),
    "from_private_module": ("from numpy.lib._utils_impl import os, sys\n", "private", 1),
    "from_numpy_private_name": ("from numpy import _core\n", "private", 1),
    "from_numpy_module_object": ("from numpy import ctypeslib\n", "escape", 1),
    "from_numpy_lib_module": ("from numpy.lib import npyio\n", "escape", 1),
    "from_numpy_lib_passage": ("from numpy import lib\n", "escape", 1),
    "from_numpy_file_hatch": ("from numpy import fromfile\n", "escape", 1),
    "from_numpy_star": ("from numpy import *\n", "escape", 1),
    "relative_import": ("from . import sibling\n", "import", 1),
    "from_builtins": ("from builtins import getattr\n", "import", 1),
    # modules and hatches reached as attributes
    "numpy_lib_utils_os": ("def forward(x, params, alloc):\n    return np.lib._utils_impl.os\n", "escape", 2),
    "numpy_lib_as_value": ("u = np.lib\n", "escape", 1),
    "numpy_core_shim": ("c = np.core.multiarray\n", "escape", 1),
    "numpy_testing_attr": ("t = np.testing\n", "escape", 1),
    "numpy_random_mtrand": ("r = np.random.mtrand\n", "escape", 1),
    "numpy_load": ("a = np.load('/tmp/a.npy', allow_pickle=True)\n", "escape", 1),
    "numpy_test_runner": ("np.test()\n", "escape", 1),
    "tofile_on_array": ("def forward(x, params, alloc):\n    x['x'].tofile('/tmp/x')\n", "escape", 2),
    "generator_frame": ("def g():\n    yield 1\n\nf = g().gi_frame.f_back.f_globals\n", "escape", 4),
    "import_numpy_polynomial": ("import numpy.polynomial\n", "import", 1),
    "format_inside_fstring": ("s = f'{np.lib}'\n", "escape", 1),
    "attribute_error_obj": ("try:\n    np.linalg.nothing\nexcept AttributeError as e:\n    m = e.obj\n", "escape", 4),
    "attribute_error_obj_by_match": ("try:\n    math.nothing\nexcept AttributeError as e:\n    match e:\n"
                                     "        case AttributeError(obj=m):\n            m.sqrt = abs\n", "escape", 5),
    "match_args_names_ctypes": ("class V(np.ndarray):\n    __match_args__ = ('ctypes',)\n", "escape", 2),
    "bit_generator_ctypes": ("f = np.random.default_rng().bit_generator.ctypes[2]\n", "escape", 1),
    "array_ctypes_beyond_address": ("def f(a):\n    return type(a.ctypes.shape)\n", "escape", 2),
    # helper modules: their string-reflection and source-evaluation names
    "typing_get_type_hints": ("import typing\nh = typing.get_type_hints\n", "escape", 2),
    "typing_sys": ("import typing\ns = typing.sys\n", "escape", 2),
    "functools_wraps": ("from functools import wraps\n", "escape", 1),
    "functools_singledispatch": ("import functools\n\n\n@functools.singledispatch\ndef f(x):\n    pass\n",
                                 "escape", 4),
    "operator_attrgetter": ("import operator\ng = operator.attrgetter('_core')\n", "escape", 2),
    "dataclasses_make_dataclass": ("from dataclasses import make_dataclass\n", "escape", 1),
    "dataclasses_builtins": ("import dataclasses as d\nb = d.builtins\n", "escape", 2),
    "import_string_formatter": ("import string\n", "import", 1),
    "import_time": ("import time\n", "import", 1),
    "main_guard_else_branch_runs": ("if __name__ == '__main__':\n    pass\nelse:\n    import os\n", "import", 4),
    "main_guard_made_true": ("__name__ = '__main__'\nif __name__ == '__main__':\n    import os\n", "dunder", 1),
    "main_guard_made_true_by_for": ("for __name__ in ['__main__']:\n    pass\n", "dunder", 1),
    # getattr and friends, under any alias
    "getattr_on_module": ("def forward(x, params, alloc):\n    return getattr(np, 'allclose')\n",
                          "module-reflection", 2),
    "getattr_alias": ("g = getattr\nx = g(np, '_core')\n", "builtin", 1),
    "getattr_in_list": ("f = [getattr][0]\n", "builtin", 1),
    "getattr_default_arg": ("def f(g=getattr):\n    return g\n", "builtin", 1),
    "getattr_walrus": ("(g := getattr)\n", "builtin", 1),
    "getattr_for_target": ("for g in (getattr,):\n    pass\n", "builtin", 1),
    "getattr_tuple_unpack": ("g, h = getattr, setattr\n", "builtin", 1),
    "getattr_lambda_default": ("h = lambda g=getattr: g\n", "builtin", 1),
    "getattr_dead_shadow": ("if 0:\n    getattr = None\nx = getattr(1, 'real')\n", "builtin", 3),
    "vars_call": ("v = vars()\n", "builtin", 1),
    "globals_call": ("def forward(x, params, alloc):\n    return globals()\n", "builtin", 2),
    "open_call": ("x = 1\n\ndef forward(x, params, alloc):\n    return open('f').read()\n", "builtin", 4),
    "eval_call": ("eval('1 + 1')\n", "builtin", 1),
    "memoryview_call": ("m = memoryview(b'abc')\n", "builtin", 1),
    "type_three_args": ("C = type('C', (), {})\n", "call", 1),
    "type_as_value": ("t = type\n", "builtin", 1),
    "import_dunder": ("m = __import__('os')\n", "dunder", 1),
    "builtins_dunder": ("b = __builtins__\n", "dunder", 1),
    # dunders
    "dict_dunder": ("def forward(x, params, alloc):\n    return x.__dict__\n", "dunder", 2),
    "class_assignment": ("def forward(x, params, alloc):\n    x['x'].__class__ = object\n", "dunder", 2),
    "class_then_bases": ("b = (1).__class__.__bases__\n", "dunder", 1),
    "subclasses": ("s = object.__subclasses__()\n", "dunder", 1),
    "function_globals": ("g = np.sum.__globals__\n", "dunder", 1),
    "traceback_of_exception": ("try:\n    1 / 0\nexcept Exception as e:\n    t = e.__traceback__\n", "dunder", 4),
    "defines_array_interface": ("class A:\n    __array_interface__ = {'data': (0, False)}\n", "dunder", 2),
    "defines_del": ("class A:\n    def __del__(self):\n        pass\n", "dunder", 2),
    "import_as_builtins": ("import numpy as __builtins__\n", "dunder", 1),
    # format fields
    "format_attribute_field": ("s = '{0.lib}'.format(np)\n", "format", 1),
    "format_index_field": ("s = '{0[0]}'.format([np.pi])\n", "format", 1),
    "format_map_field": ("s = '{m.lib}'.format_map({'m': 1})\n", "format", 1),
    "format_nested_spec": ("s = '{0:{1.real}}'.format(1, 2)\n", "format", 1),
    "format_computed_template": ("t = '{0.' + 'lib}'\ns = t.format(1)\n", "format", 2),
    "str_format_unbound": ("s = str.format('{0.lib}', 1)\n", "format", 1),
    # modules as values: every binding form
    "module_in_for_target": ("for m in [np]:\n    m.allclose = 1\n", "module-value", 1),
    "module_in_comprehension": ("xs = [m.sum for m in (np,)]\n", "module-value", 1),
    "module_walrus_in_test": ("if (m := np):\n    pass\n", "module-value", 1),
    "module_in_match_subject": ("match np:\n    case m:\n        m.allclose = 1\n", "module-value", 1),
    "module_as_call_arg": ("def f(m):\n    m.allclose = 1\n\nf(np)\n", "module-value", 4),
    "module_returned": ("def f():\n    return np\n", "module-value", 2),
    "module_in_lambda_body": ("f = lambda: np\n", "module-value", 1),
    "module_as_class_attribute": ("class A:\n    m = np\n", "module-value", 2),
    "module_on_self": ("class A:\n    def __init__(self):\n        self.m = np\n", "module-value", 3),
    "module_chained_to_attribute": ("class A:\n    pass\n\nx = A.m = np\n", "module-value", 4),
    "module_in_conditional": ("m = np if 1 else math\n", "module-value", 1),
    "module_in_with": ("with np as m:\n    pass\n", "module-value", 1),
    "module_in_dict": ("d = {'a': np}\n", "module-value", 1),
    # monkeypatching, through any alias
    "patch_direct": ("def forward(x, params, alloc):\n    np.allclose = None\n", "module-patch", 2),
    "patch_alias": ("n = np\nn.allclose = lambda *a, **k: True\n", "module-patch", 2),
    "patch_chained_alias": ("a = np\nb = a\nb.array_equal = None\n", "module-patch", 3),
    "patch_tuple_unpacked": ("a, b = np, 1\na.allclose = 3\n", "module-patch", 2),
    "patch_annotated": ("m: object = np\nm.allclose = 1\n", "module-patch", 2),
    "patch_walrus_statement": ("(m := np)\nm.allclose = 1\n", "module-patch", 2),
    "patch_lambda_default": ("h = lambda m=np: m.lib\n", "escape", 1),
    "patch_kwonly_default": ("def f(*, m=np):\n    m.allclose = 1\n", "module-patch", 2),
    "patch_augassign": ("np.pi += 1\n", "module-patch", 1),
    "patch_delete": ("del np.allclose\n", "module-patch", 1),
    "patch_submodule": ("np.linalg.norm = None\n", "module-patch", 1),
    "patch_math": ("import math as m\nm.sqrt = abs\n", "module-patch", 2),
    "patch_global_alias": ("def f():\n    global n\n    n = np\n\n\ndef g():\n    n.sum = 1\n", "module-patch", 7),
    "patch_nonlocal_alias": ("def f():\n    m = 1\n\n    def g():\n        nonlocal m\n        m = np\n"
                             "    g()\n    m.sum = 2\n", "module-patch", 8),
    "patch_from_import_module": ("from numpy import linalg\nlinalg.norm = None\n", "module-patch", 2),
}

HONEST: dict[str, str] = {
    "future_annotations": "from __future__ import annotations\n\nimport numpy as np\n\n\n"
                          "def forward(x: dict, params: dict, alloc) -> np.ndarray:\n    return x['x'] * 2\n",
    "imports": "import math\nimport numpy\nimport numpy as np\nimport numpy.linalg as LA\nfrom math import sqrt, pi\n"
               "from numpy import float32, einsum, tanh\nfrom numpy.linalg import norm\nfrom math import *\n"
               "x = LA.norm(numpy.ones(2)) + norm(np.ones(2)) + sqrt(pi) + floor(1.5)\n",
    "slots_and_private_attributes": "class K:\n    __slots__ = ('_w', 'scale')\n\n    def __init__(self, w):\n"
                                    "        self._w = w\n        self.scale = 1.0\n\n    def __call__(self, x):\n"
                                    "        return (x @ self._w) * self.scale\n",
    "module_metadata": "'''A kernel.'''\n__all__ = ['forward']\n__version__ = '1.0'\n__author__ = 'me'\n"
                       "print(__name__, __doc__, np.__version__)\n",
    "super_init_and_doc": "class A:\n    def __init__(self):\n        self.k = 1\n\n\nclass B(A):\n"
                          "    def __init__(self):\n        super().__init__()\n        self.__doc__ = 'b'\n"
                          "        self.label = type(self).__name__\n",
    "closure": "def make(k):\n    def run(x):\n        return x * k\n    return run\n\n\n_run = make(3)\n",
    "generator": "def tiles(n, step):\n    for lo in range(0, n, step):\n        yield lo, min(lo + step, n)\n\n\n"
                 "total = sum(hi - lo for lo, hi in tiles(10, 3))\n",
    "comprehensions": "m = {i: [j * j for j in range(i) if j % 2] for i in range(4)}\ns = {k for k in m}\n",
    "lambda_with_default": "f = lambda x, k=2: x * k\ng = sorted([3, 1], key=lambda v: -v)\n",
    "match_statement": "def f(x):\n    match x.ndim:\n        case 1:\n            return x\n        case n if n > 3:\n"
                       "            return x.reshape(-1)\n        case _:\n            return x.T\n",
    "walrus": "def f(x):\n    if (n := x.shape[0]) > 2:\n        return n\n    return [y for v in x if (y := v * 2) > 0]\n",
    "out_arguments_errstate": "def f(a, out):\n    with np.errstate(over='ignore', invalid='ignore'):\n"
                              "        np.exp(a, out=out)\n        np.multiply(out, a, out=out)\n    return out\n",
    "einsum_and_array_methods": "def f(a, b):\n    c = np.einsum('i,ij->ij', a, b).astype(np.float32)\n"
                                "    return c.T.reshape(c.shape).copy(), c.dtype, c.nbytes, c.ctypes.data\n",
    "sliding_window_view": "from numpy.lib.stride_tricks import sliding_window_view\n"
                           "import numpy.lib.stride_tricks as st\n\n\ndef f(a):\n"
                           "    return np.lib.stride_tricks.sliding_window_view(a, 3), st.as_strided, "
                           "sliding_window_view\n",
    "builtin_names_as_parameters": "def forward(input, params, alloc):\n    type = 'gelu'\n    compile = None\n"
                                   "    return input * 2\n",
    "module_default_parameter": "def f(x, xp=np):\n    return xp.sum(x)\n",
    "module_aliases": "la = np.linalg\nn = la.norm(np.ones(3))\nrand = np.random\nr = rand.default_rng(0)\n",
    "format_and_fstrings": "s = '{} {:>{w}} {name!r}'.format(1, 2, w=3, name='x')\nt = f'{s!r:>10} {np.pi:.3f}'\n"
                           "u = '%s %d' % ('a', 1)\n",
    "type_of_one_argument": "def f(x):\n    return type(x) is np.ndarray and type(x).__name__ == 'ndarray'\n",
    "random_generator": "rng = np.random.default_rng(0)\nv = rng.standard_normal(3).astype(np.float32)\n"
                        "b = rng.bit_generator\n",
    "typing_annotations": "import numpy.typing as npt\n\n\ndef f(x: npt.NDArray[np.float32]) -> np.ndarray:\n"
                          "    return x\n",
    "numpy_exceptions": "try:\n    pass\nexcept np.exceptions.AxisError as e:\n    print(e)\n"
                        "except (ValueError, np.linalg.LinAlgError):\n    pass\n",
    "data_model_methods": "class V:\n    def __init__(self, a):\n        self.a = a\n\n    def __add__(self, o):\n"
                          "        return V(self.a + o.a)\n\n    def __repr__(self):\n        return f'V({self.a})'\n\n"
                          "    def __len__(self):\n        return len(self.a)\n",
    "fft_and_emath": "y = np.fft.rfft(np.ones(4))\nz = np.emath.sqrt(-1)\n",
    "private_module_helpers": "_C = 1.0\n\n\ndef _helper(x):\n    return x * _C\n\n\n"
                              "def forward(x, params, alloc):\n    return _helper(x['x'])\n",
    "private_method": "class K:\n    _table = {}\n\n    def _step(self, x):\n        return x\n\n"
                      "    def run(self, x):\n        return self._step(x), K._table\n",
    "global_and_nonlocal": "_n = 0\n\n\ndef f():\n    global _n\n    _n += 1\n    k = 0\n\n    def g():\n"
                           "        nonlocal k\n        k += 1\n    g()\n    return k\n",
    "hasattr_on_objects": "def f(x):\n    return hasattr(x, 'shape') and isinstance(x, np.ndarray)\n",
    "dtypes_and_finfo": "d = np.dtype(np.float32).itemsize\ne = np.finfo(np.float32).eps\nf = np.dtypes.Float32DType\n",
    "names_numpy_lacks_fail_at_run_time": "def forward(x, params, alloc):\n    return np.erf(x['x'])\n",
    "tuple_unpacking_of_modules": "a, b = np, 1\nc = a.zeros(3)\n",
    "class_patterns": "class P:\n    __match_args__ = ('x', 'y')\n\n    def __init__(self):\n        self.x = 1\n"
                      "        self.y = 2\n\n\nmatch P():\n    case P(1, y=b):\n        pass\n",
    "helper_modules": "from __future__ import annotations\n\nimport functools\nimport itertools\n"
                      "from collections import OrderedDict, namedtuple\nfrom collections.abc import Sequence\n"
                      "from dataclasses import dataclass, field\nfrom typing import Optional, Tuple\nimport operator\n\n"
                      "Pair = namedtuple('Pair', 'lo hi')\n\n\n@dataclass\nclass Tiling:\n    rows: int = 128\n"
                      "    sizes: list = field(default_factory=list)\n\n\n@functools.lru_cache(maxsize=None)\n"
                      "def blocks(n: int, rows: int) -> Tuple[Pair, ...]:\n"
                      "    return tuple(Pair(i, min(i + rows, n)) for i in range(0, n, rows))\n\n\n"
                      "def total(xs: Sequence, k: Optional[int] = None) -> int:\n"
                      "    return functools.reduce(operator.add, itertools.islice(xs, k), 0)\n",
    "self_test_under_main_guard": "def forward(x, params, alloc):\n    return x['x'] * 2\n\n\n"
                                  "if __name__ == '__main__':\n    import time\n    a = np.ones(4, np.float32)\n"
                                  "    t = time.perf_counter()\n    np.testing.assert_allclose(forward({'x': a}, {}, None), 2 * a)\n"
                                  "    print(time.perf_counter() - t)\n",
    "repr_with_class_name": "class K:\n    def __repr__(self):\n        return f'{self.__class__.__name__}()'\n",
    "try_except_finally_with": "def f(a):\n    try:\n        with np.errstate(all='ignore'):\n"
                               "            return np.log(a)\n    except (ValueError, TypeError) as err:\n"
                               "        raise RuntimeError(str(err)) from err\n    finally:\n        pass\n",
}


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
    files = sorted(glob.glob(str(CANDIDATES / "**" / "*.py"), recursive=True))
    assert len(files) >= 30
    for f in files:
        key = "/".join(Path(f).with_suffix("").parts[-2:])
        src = Path(f).read_text()
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
                 "show_config", "shares_memory"):
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
