"""The hardened mode's AST gate: an allow-list that gives readable rejections. It is a first filter; the
wall is the OS confinement of every worker, so the gate never rejects honest code just to be safe.

A candidate may use numpy, math and ordinary Python. Each rejection names its line and rule:

``import``        an import of anything but numpy's computation modules, ``math``, a few pure-Python helpers
                  (below) or ``__future__``; a ``from`` import of a module object outside them, or a star import
                  that would bring one in (``from numpy import *`` binds ``test`` and ``load``).
``private``       a ``_``-prefixed name in any attribute chain, whatever its root (``np._core``,
                  ``[x][0]._y``, ``f()._z``) or in an import. Exception: private attributes the candidate
                  defines itself (``self._w = ...``, a class body's ``_cache``, ``__slots__``), unless numpy
                  uses the same name for a private module.
``dunder``        a dunder attribute outside a harmless few (``__init__``, ``__call__``, ``__name__``,
                  ``__doc__``, reading ``__class__``, which is ``type(x)``, ...); a dunder name such as ``__builtins__``; defining a dunder outside the
                  data model (``__array_interface__`` hands numpy a raw pointer, ``__getattr__`` and
                  ``__reduce__`` are reflection hooks, ``__del__`` runs outside any call).
``escape``        a numpy name that is a module outside the computation modules (``np.lib``, ``np.testing``,
                  ``np.ctypeslib``, ...), a file or test-runner hatch (``np.load``, ``x.tofile``, ``np.test``),
                  ``x.ctypes`` other than ``x.ctypes.data`` (the address, an int: a bit generator's ``ctypes``
                  holds callable C function pointers), an attribute that leads to interpreter frames
                  (``gi_frame``, ``f_globals``), ``e.obj`` (an AttributeError hands back the module it was raised
                  on). Names that lead out are rejected on *any* object, not only on a module.
``module-value``  a module used as a value: in a list, a call argument, a return, a lambda body, a class
                  attribute. A module may only be named (``n = np``, ``import numpy as xp``, ``def f(xp=np)``)
                  and have attributes read, so the gate knows every name that can hold one.
``module-patch``  assigning to or deleting an attribute of a module, through any alias.
``builtin``       ``getattr``/``setattr``/``delattr``/``vars``/``globals``/``locals``/``eval``/``exec``/
                  ``compile``/``open``/``breakpoint``/``input``/``memoryview``/``help`` referred to at all
                  (called, aliased, stored, passed as a default); ``type`` outside a one-argument call.
                  A parameter or local of the same name shadows the builtin and is fine.
``module-reflection``  ``getattr``/``setattr``/``delattr``/``hasattr`` on a module.
``call``          ``type()`` with three arguments (building a class at run time).
``gate``          the gate itself failed on this source (a kbench bug): a verdict, never an exception.
``format``        ``str.format``/``format_map`` on anything but a string literal, or a literal whose fields
                  read attributes or items (``"{0.lib}".format(np)``). f-strings are ordinary AST and pass.

Decisions. Computation modules (a module object may be held and its public names used): ``numpy``,
``numpy.linalg``, ``numpy.fft``, ``numpy.random``, ``numpy.emath`` (``numpy.lib.scimath``),
``numpy.typing``, ``numpy.exceptions``, ``numpy.dtypes``, ``numpy.lib.stride_tricks`` and ``math``. Helpers
(honest kernels use them for hints, caching and records): ``typing``, ``functools``, ``itertools``,
``operator``, ``collections`` (and ``.abc``), ``dataclasses``, ``abc``, ``cmath``, ``numbers``, without the
names that read attributes by string or evaluate source (``functools.wraps``, ``functools.singledispatch``,
``operator.attrgetter``, ``typing.get_type_hints``, ``dataclasses.make_dataclass``, ...).
``np.lib`` is only a passage to ``stride_tricks`` and ``scimath``. Each allowed module's names are read from
the module itself, once, at the first check: every public name it has, minus modules outside the list and
the hatches (``typing.sys`` and ``dataclasses.builtins`` are refused that way). A name numpy does not have
at all (``np.erf``) passes and fails at run time with numpy's own AttributeError. Binding forms are all
tracked with Python's scoping rules: assignment (with tuple unpacking), augmented and annotated assignment,
``for`` and comprehension targets, ``with ... as``, walrus, ``except ... as``, ``match`` captures,
parameters and their defaults, imports, ``def``/``class`` names, ``global`` and ``nonlocal``. The bodies of
``if __name__ == "__main__":`` blocks are not checked: a candidate never runs as ``__main__``.

What the gate does not try to stop: reading and writing the worker's own memory. Public numpy already
allows it (``np.ndarray(shape, buffer=b, offset=-n)`` reads before a buffer, ``as_strided`` anywhere), so
``as_strided`` stays allowed for the honest kernels that use it, and ``type(type(x))`` (which is ``type``)
is not chased. Whatever such a kernel reaches is inside its own confined process.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import string
import sys
import types
from dataclasses import dataclass, field
from functools import cache

#: Modules whose public names a candidate may use (and whose module objects it may hold).
COMPUTATION_MODULES = ("numpy", "numpy.linalg", "numpy.fft", "numpy.random", "numpy.lib.scimath", "numpy.typing",
                       "numpy.exceptions", "numpy.dtypes", "numpy.lib.stride_tricks", "math")
#: Pure-Python helpers honest kernels import (type hints, caching, iteration, small records), each with the few
#: names it offers that reflect by string or evaluate source: their other public names are allowed.
HELPER_MODULES: dict[str, dict[str, str]] = {
    "typing": {"get_type_hints": "evaluates annotation strings", "ForwardRef": "evaluates source strings"},
    "functools": {"update_wrapper": "reads and sets attributes named by strings",
                  "wraps": "reads and sets attributes named by strings",
                  "singledispatch": "evaluates annotation strings (register reads type hints)",
                  "singledispatchmethod": "evaluates annotation strings (register reads type hints)"},
    "operator": {"attrgetter": "reads attributes named by strings",
                 "methodcaller": "calls methods named by strings"},
    "dataclasses": {"make_dataclass": "builds a class from a namespace of strings"},
    "itertools": {}, "collections": {}, "collections.abc": {}, "abc": {}, "cmath": {}, "numbers": {},
}
#: Every module a candidate may import or hold.
ALLOWED_MODULES = (*COMPUTATION_MODULES, *HELPER_MODULES)
_ROOTS = frozenset(m.split(".")[0] for m in ALLOWED_MODULES)
#: Modules that may appear inside an attribute chain on the way to a computation module, never as a value.
PASSAGES = {"numpy.lib": ("stride_tricks", "scimath")}
#: Names that read or write files or run the test suite: rejected on any object.
FILE_HATCHES = frozenset({"load", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile",
                          "fromregex", "memmap", "open_memmap", "DataSource", "tofile", "dump"})
TEST_HATCHES = frozenset({"test"})
#: Names that lead out of numpy to raw memory, other modules or the interpreter: rejected on any object.
LEADS_OUT = frozenset({
    "ctypeslib", "cffi", "lib", "testing", "f2py", "core", "distutils", "npyio", "os", "sys",
    "subprocess", "builtins", "importlib", "operator", "inspect", "gc", "pickle", "marshal", "posix", "resource",
    "mmap", "sqlite3", "runpy", "pty", "fcntl", "tempfile", "shutil", "pathlib", "socket", "multiprocessing",
    "threading", "io"})
FRAME_ATTRS = frozenset({"gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame",
                         "ag_code", "ag_await", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
                         "tb_frame", "tb_next", "co_code", "co_consts", "co_names"})
#: Attributes that hand back objects the gate cannot follow: an AttributeError's ``obj`` is the module it was
#: raised on. Rejected on any object.
HANDOFF_ATTRS = frozenset({"obj"})
#: Builtins a candidate may not refer to at all (``type`` is allowed in a one-argument call only).
BANNED_BUILTINS = frozenset({"getattr", "setattr", "delattr", "vars", "globals", "locals", "eval", "exec",
                             "compile", "open", "breakpoint", "input", "memoryview", "help", "__import__", "type"})
REFLECTION = frozenset({"getattr", "setattr", "delattr", "hasattr"})
#: Dunder attributes harmless to read or set (``super().__init__()``, ``type(x).__name__``, ``self.__doc__``).
HARMLESS_DUNDER_ATTRS = frozenset({"__init__", "__call__", "__name__", "__qualname__", "__doc__", "__version__",
                                   "__len__", "__getitem__", "__setitem__", "__iter__", "__next__", "__contains__",
                                   "__enter__", "__exit__"})
#: Dunder names readable without defining them.
HARMLESS_DUNDER_NAMES = frozenset({"__name__", "__doc__", "__qualname__", "__module__", "__debug__"})
_OPERATORS = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow", "lshift", "rshift",
              "and", "or", "xor")
#: Dunders a candidate may define: module metadata, the data model, and numpy's protocols whose answers the
#: grader never trusts (an output must be an exact ndarray). Not the raw-pointer protocols or reflection hooks.
DEFINABLE_DUNDERS = frozenset(
    {"__all__", "__version__", "__author__", "__doc__", "__slots__", "__match_args__", "__hash__", "__init__",
     "__new__", "__call__", "__repr__", "__str__", "__format__", "__len__", "__getitem__", "__setitem__",
     "__delitem__", "__iter__", "__next__", "__reversed__", "__contains__", "__enter__", "__exit__", "__eq__",
     "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__neg__", "__pos__", "__abs__", "__invert__",
     "__int__", "__float__", "__complex__", "__index__", "__round__", "__post_init__", "__array__",
     "__array_function__", "__array_ufunc__", "__array_wrap__", "__array_finalize__", "__array_priority__"}
    | {f"__{p}{op}__" for op in _OPERATORS for p in ("", "r", "i")})

_OTHER = ""  # the kind of a binding that does not hold a module


@dataclass(frozen=True)
class Rejection:
    rule: str
    line: int
    detail: str
    col: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"line {self.line} {self.detail} [{self.rule}]"


# ------------------------------------------------------------------ what numpy and math offer

@dataclass(frozen=True)
class _ModuleApi:
    """One module's names as the gate sees them."""

    name: str
    public: frozenset[str]  # names a candidate may use
    submodules: dict[str, str]  # attribute -> computation module or passage it leads to
    blocked: dict[str, tuple[str, str]]  # attribute -> (rule, why), for names the module serves but we refuse
    star: tuple[str, ...]  # what ``from module import *`` binds


def _why_blocked(module: str, attr: str, value: object) -> tuple[str, str] | None:
    if attr in HELPER_MODULES.get(module, {}):
        return "escape", f"reaches {module}.{attr}, which {HELPER_MODULES[module][attr]}"
    if attr in FILE_HATCHES:
        return "escape", f"reaches {module}.{attr}, which reads or writes files"
    if attr in TEST_HATCHES:
        return "escape", f"reaches {module}.{attr}, which runs numpy's test suite"
    if attr == "cffi":
        return "escape", f"reaches {module}.{attr}, which hands out raw pointers"
    if isinstance(value, types.ModuleType):
        return "escape", f"reaches module {value.__name__}, which is not a module candidates may use"
    return None


def _module_api(name: str) -> _ModuleApi:
    mod = importlib.import_module(name)
    own = vars(mod)  # never getattr: a lazy numpy attribute would import (numpy.testing) as a side effect
    names = {n for n in dir(mod) if not n.startswith("_")}
    if hasattr(mod, "__path__"):
        names |= {m.name for m in pkgutil.iter_modules(mod.__path__) if not m.name.startswith("_")}
    names |= {n for n in getattr(mod, "__numpy_submodules__", ()) if not n.startswith("_")}
    public, subs, blocked = set(), {}, {}
    for attr in names:
        value = own.get(attr)
        target = value.__name__ if isinstance(value, types.ModuleType) else f"{name}.{attr}"
        if target in ALLOWED_MODULES or target in PASSAGES:
            if (isinstance(value, types.ModuleType) or attr not in own) and (
                    name not in PASSAGES or attr in PASSAGES[name]):
                subs[attr] = target
                continue
        if attr not in own:  # a submodule file or a lazily served module: a module either way
            value = types.ModuleType(f"{name}.{attr}")
        why = _why_blocked(name, attr, value)
        if why or name in PASSAGES:
            blocked[attr] = why or ("escape", f"reaches {name}.{attr}; numpy.lib is open only for "
                                              f"{' and '.join(PASSAGES[name])}")
        else:
            public.add(attr)
    star = tuple(getattr(mod, "__all__", sorted(n for n in own if not n.startswith("_"))))
    return _ModuleApi(name, frozenset(public), subs, blocked, star)


@dataclass(frozen=True)
class _Api:
    modules: dict[str, _ModuleApi]
    private_modules: frozenset[str]  # ``_`` names numpy uses for modules: never a candidate's own attribute


@cache
def _api() -> _Api:
    """Derived from the installed numpy once, at the first check (~10 ms; the modules are imported)."""
    mods = {name: _module_api(name) for name in (*ALLOWED_MODULES, *PASSAGES)}
    private: set[str] = set()
    loaded = [m for n, m in list(sys.modules.items()) if n == "numpy" or n.startswith("numpy.")]
    import numpy as np  # noqa: PLC0415 - only for sample objects whose private attributes hold modules
    samples = [np.zeros(1).ctypes, np.random.default_rng(0), np.random.default_rng(0).bit_generator]
    for holder in (*loaded, *samples):
        for n in dir(holder):
            if n.startswith("_") and not n.endswith("__") and isinstance(inspect.getattr_static(holder, n, None),
                                                                         types.ModuleType):
                private.add(n)
    for name in mods:
        mod = importlib.import_module(name)
        if hasattr(mod, "__path__"):
            private |= {m.name for m in pkgutil.iter_modules(mod.__path__) if m.name.startswith("_")}
    return _Api(mods, frozenset(private))


def _classify(module: str, attr: str) -> tuple[str, str] | None:
    """("module", target) for a computation submodule or passage, (rule, why) for a refusal, None when fine."""
    api = _api().modules[module]
    if attr.startswith("__") and attr.endswith("__"):
        return None  # dunder attributes have their own rule
    if attr.startswith("_"):
        return "private", f"reaches private name {attr}"
    if attr in api.submodules:
        return "module", api.submodules[attr]
    return api.blocked.get(attr)


# ------------------------------------------------------------------ pass 1: scopes and bindings

@dataclass(eq=False)
class _Scope:
    kind: str  # "module", "function", "class" or "comprehension"
    parent: _Scope | None
    bound: dict[str, list] = field(default_factory=dict)  # name -> [frozenset kind | (expr)]
    global_names: set[str] = field(default_factory=set)
    nonlocal_names: set[str] = field(default_factory=set)


class _Binder:
    """Walks the tree once: the scope each node is evaluated in, each node's parent, every binding."""

    def __init__(self, tree: ast.Module) -> None:
        self.module = _Scope("module", None)
        self.module.bound = {"np": [frozenset({"numpy"})], "math": [frozenset({"math"})]}
        self.scope_of: dict[int, _Scope] = {}
        self.parent: dict[int, ast.AST] = {}
        self.own_private: set[str] = set()  # private attribute names the candidate defines
        self.defined: list[tuple[str, ast.AST]] = []  # every bound name, for the dunder rule
        self.value_slots: set[int] = set()  # expression nodes whose module value goes into a tracked name
        self.match_args: list[ast.Constant] = []  # names in ``__match_args__``: attributes read by patterns
        self._pending_nonlocal: list[tuple[_Scope, str, object]] = []
        self._walk_all(tree)
        for scope, name, value in self._pending_nonlocal:
            s = scope.parent
            while s is not None and (s.kind not in ("function", "comprehension") or name not in s.bound):
                s = s.parent
            (s or self.module).bound.setdefault(name, []).append(value)

    # -- binding
    def _bind(self, scope: _Scope, name: str, value: object, node: ast.AST, named: bool = True) -> None:
        if named:  # a star import's names are the import rule's business
            self.defined.append((name, node))
        if scope.kind == "class" and name.startswith("_"):
            self.own_private.add(name)
        if name in scope.global_names:
            scope = self.module
        elif name in scope.nonlocal_names:
            self._pending_nonlocal.append((scope, name, value))
            return
        scope.bound.setdefault(name, []).append(value)

    def _bind_target(self, target: ast.AST, scope: _Scope, value: ast.expr | None, slot_ok: bool) -> None:
        """Bind the names in an assignment target; ``value`` is kept only where a module may go (a plain name)."""
        if isinstance(target, ast.Name):
            if value is not None and slot_ok:
                self.value_slots.add(id(value))
                self._bind(scope, target.id, value, target)
            else:
                self._bind(scope, target.id, frozenset({_OTHER}), target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = (isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                     and not any(isinstance(e, ast.Starred) for e in (*value.elts, *target.elts)))
            for i, t in enumerate(target.elts):
                self._bind_target(t, scope, value.elts[i] if pairs else None, slot_ok)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, scope, None, False)
        elif isinstance(target, ast.Attribute) and target.attr.startswith("_"):
            self.own_private.add(target.attr)

    def _bind_pattern(self, pat: ast.AST, scope: _Scope) -> None:
        for node in ast.walk(pat):
            name = getattr(node, "name", None) if isinstance(node, (ast.MatchAs, ast.MatchStar)) else \
                getattr(node, "rest", None) if isinstance(node, ast.MatchMapping) else None
            if name:
                self._bind(scope, name, frozenset({_OTHER}), node)

    def _bind_args(self, args: ast.arguments, scope: _Scope, node: ast.AST) -> None:
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for a, d in [*zip(positional, defaults), *zip(args.kwonlyargs, args.kw_defaults)]:
            if d is not None:
                self.value_slots.add(id(d))
                self._bind(scope, a.arg, d, a)
            else:
                self._bind(scope, a.arg, frozenset({_OTHER}), a)
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self._bind(scope, a.arg, frozenset({_OTHER}), a)

    # -- walking: iterative, in source order (a deep expression must not exhaust Python's recursion limit)
    def _walk_all(self, tree: ast.Module) -> None:
        stack: list[tuple[ast.AST, _Scope, ast.AST | None]] = [(tree, self.module, None)]
        while stack:
            node, scope, parent = stack.pop()
            self.scope_of[id(node)] = scope
            if parent is not None:
                self.parent[id(node)] = parent
            self._batch: list[tuple[ast.AST, _Scope, ast.AST | None]] = []
            self._walk(node, scope)
            stack.extend(reversed(self._batch))

    def _visit(self, node: ast.AST, scope: _Scope, parent: ast.AST | None) -> None:
        self._batch.append((node, scope, parent))

    def _children(self, node: ast.AST, scope: _Scope, *skip: str) -> None:
        for name, value in ast.iter_fields(node):
            if name in skip:
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    self._visit(child, scope, node)

    def _walk(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, ast.Module):
            self._children(node, scope)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = _Scope("function", scope)
            for d in getattr(node, "decorator_list", []):
                self._visit(d, scope, node)
            self._visit_arguments(node.args, scope, inner, node)
            if getattr(node, "returns", None) is not None:
                self._visit(node.returns, scope, node)
            if not isinstance(node, ast.Lambda):
                self._bind(scope, node.name, frozenset({_OTHER}), node)
            self._bind_args(node.args, inner, node)
            for stmt in node.body if isinstance(node.body, list) else [node.body]:
                self._visit(stmt, inner, node)
        elif isinstance(node, ast.ClassDef):
            for child in (*node.decorator_list, *node.bases, *node.keywords):
                self._visit(child, scope, node)
            self._bind(scope, node.name, frozenset({_OTHER}), node)
            inner = _Scope("class", scope)
            for stmt in node.body:
                self._visit(stmt, inner, node)
                self._note_slots(stmt)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = _Scope("comprehension", scope)
            for i, gen in enumerate(node.generators):
                self.scope_of[id(gen)] = inner
                self.parent[id(gen)] = node
                self._visit(gen.iter, scope if i == 0 else inner, gen)
                self._visit(gen.target, inner, gen)
                self._bind_target(gen.target, inner, None, False)
                for cond in gen.ifs:
                    self._visit(cond, inner, gen)
            for part in ("elt", "key", "value"):
                if getattr(node, part, None) is not None:
                    self._visit(getattr(node, part), inner, node)
        else:
            self._bindings_of(node, scope)
            self._children(node, scope)

    def _visit_arguments(self, args: ast.arguments, outer: _Scope, inner: _Scope, owner: ast.AST) -> None:
        self.scope_of[id(args)] = inner
        self.parent[id(args)] = owner
        for d in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            self._visit(d, outer, args)
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if a is not None:
                self.scope_of[id(a)] = inner
                self.parent[id(a)] = args
                if a.annotation is not None:
                    self._visit(a.annotation, outer, a)

    def _bindings_of(self, node: ast.AST, scope: _Scope) -> None:
        slot_ok = scope.kind in ("module", "function")  # a class body's names become class attributes
        if isinstance(node, ast.Global):
            scope.global_names.update(node.names)
            for n in node.names:
                self.defined.append((n, node))
        elif isinstance(node, ast.Nonlocal):
            scope.nonlocal_names.update(node.names)
        elif isinstance(node, ast.Assign):
            # ``x = self.m = np`` would hand the module to an attribute: only all-name targets take one
            plain = slot_ok and all(_names_only(t) for t in node.targets)
            for t in node.targets:
                self._bind_target(t, scope, node.value, plain)
        elif isinstance(node, ast.AnnAssign):
            self._bind_target(node.target, scope, node.value, slot_ok and isinstance(node.target, ast.Name))
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
            self._bind_target(node.target, scope, None, False)
        elif isinstance(node, ast.NamedExpr):
            target = scope
            while target.kind == "comprehension":
                target = target.parent
            self._bind_target(node.target, target, node.value, target.kind in ("module", "function"))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, scope, None, False)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._bind(scope, node.name, frozenset({_OTHER}), node)
        elif isinstance(node, ast.match_case):
            self._bind_pattern(node.pattern, scope)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                self._bind_target(t, scope, None, False)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                full = alias.name if alias.asname else alias.name.split(".")[0]
                kind = full if full in ALLOWED_MODULES else _OTHER
                self._bind(scope, alias.asname or full, frozenset({kind}), node)
        elif isinstance(node, ast.ImportFrom):
            self._bind_from(node, scope)

    def _bind_from(self, node: ast.ImportFrom, scope: _Scope) -> None:
        module = node.module or ""
        api = _api().modules.get(module) if not node.level else None
        for alias in node.names:
            if alias.name == "*":
                names = api.star if api else ()
                for n in names:
                    self._bind(scope, n, frozenset({api.submodules.get(n, _OTHER)}), node, named=False)
                continue
            kind = api.submodules.get(alias.name, _OTHER) if api else _OTHER
            self._bind(scope, alias.asname or alias.name, frozenset({kind}), node)

    def _note_slots(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            strings = [c for c in ast.walk(stmt.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            if "__slots__" in names:
                self.own_private.update(c.value for c in strings if c.value.startswith("_"))
            if "__match_args__" in names:  # a positional class pattern reads these attributes by name
                self.match_args.extend(strings)


def _names_only(target: ast.AST) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_names_only(t) for t in target.elts)
    return isinstance(target, ast.Name)


# ------------------------------------------------------------------ module values

class _Modules:
    """Which names and expressions may hold a module: a fixpoint over the bindings (``a = np; b = a``), by
    work list, so an alias chain written in any order converges in time linear in its length."""

    def __init__(self, b: _Binder) -> None:
        self.b = b
        self.kinds: dict[tuple[int, str], frozenset[str]] = {}
        scopes = {id(s): s for s in b.scope_of.values()} | {id(b.module): b.module}
        keys = {(id(s), name): (s, name) for s in scopes.values() for name in s.bound}
        dependents: dict[tuple[int, str], list[tuple[int, str]]] = {}
        for key, (s, name) in keys.items():
            for v in s.bound[name]:
                root = _root_name(v) if not isinstance(v, frozenset) else None
                where = self.resolve(root.id, b.scope_of.get(id(root), b.module)) if root is not None else None
                if where is not None:
                    dependents.setdefault((id(where), root.id), []).append(key)
        work = list(keys)
        while work:
            key = work.pop()
            s, name = keys[key]
            kind = frozenset().union(*(v if isinstance(v, frozenset) else self.of(v) or {_OTHER}
                                       for v in s.bound[name]))
            if self.kinds.get(key) != kind:
                self.kinds[key] = kind
                work.extend(dependents.get(key, ()))

    def resolve(self, name: str, scope: _Scope) -> _Scope | None:
        """The scope whose binding a load of ``name`` in ``scope`` reads (None: a builtin or undefined)."""
        s: _Scope | None = scope
        first = True
        while s is not None:
            if s.kind == "module":
                return s if name in s.bound else None
            if s.kind == "class":
                if first and name in s.bound:
                    return s
            elif name in s.global_names:
                return self.b.module if name in self.b.module.bound else None
            elif name in s.bound:
                return s
            first = False
            s = s.parent
        return None

    def of(self, node: ast.AST) -> frozenset[str]:
        """The modules ``node`` may evaluate to (with ``_OTHER`` when it may also be something else); empty
        when it is certainly not a module."""
        attrs: list[str] = []
        while isinstance(node, (ast.Attribute, ast.NamedExpr)):  # down to the root, without recursion
            if isinstance(node, ast.Attribute):
                attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return frozenset()
        where = self.resolve(node.id, self.b.scope_of.get(id(node), self.b.module))
        kind = self.kinds.get((id(where), node.id), frozenset()) if where else frozenset()
        for attr in reversed(attrs):
            if not kind - {_OTHER}:
                return frozenset()
            found = set()
            for m in kind - {_OTHER}:
                c = _classify(m, attr)
                if c and c[0] == "module":
                    found.add(c[1])
            if found and _OTHER in kind:
                found.add(_OTHER)
            kind = frozenset(found)
        return kind if kind - {_OTHER} else frozenset()


def _root_name(node: ast.AST) -> ast.Name | None:
    while isinstance(node, (ast.Attribute, ast.NamedExpr)):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def _label(node: ast.AST) -> str:
    """Source text for a message, short."""
    try:
        text = ast.unparse(node)
    except RecursionError:
        return "an expression"
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------------ pass 2: the rules

def _is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":`` (either order)."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
            and isinstance(node.test.ops[0], ast.Eq)):
        return False
    sides = [node.test.left, *node.test.comparators]
    return any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides) and \
        any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides)


def _live_nodes(tree: ast.AST):
    """Every node except the bodies of ``if __name__ == "__main__":`` blocks. A candidate's module is named
    ``candidate`` (kbench.core.tasks.base_namespace) and the gate refuses any binding of ``__name__``, so such a
    block never runs: honest files keep their self-tests (``import time``, ``np.testing``) there."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if _is_main_guard(node):
            stack.extend(reversed([node.test, *node.orelse]))
        else:
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


class _Checker:
    def __init__(self, tree: ast.Module) -> None:
        self.b = _Binder(tree)
        self.m = _Modules(self.b)
        self.found: list[Rejection] = []
        for name, node in self.b.defined:
            if name.startswith("__") and name.endswith("__") and name not in DEFINABLE_DUNDERS:
                self._reject("dunder", node, f"defines {name}")
        for const in self.b.match_args:
            self._check_attribute_name(const.value, const)
        for node in _live_nodes(tree):
            check = getattr(self, f"_check_{type(node).__name__}", None)
            if check:
                check(node)

    def _reject(self, rule: str, node: ast.AST, detail: str) -> None:
        self.found.append(Rejection(rule, getattr(node, "lineno", 0), detail, getattr(node, "col_offset", 0)))

    def _scope(self, node: ast.AST) -> _Scope:
        return self.b.scope_of.get(id(node), self.b.module)

    # -- modules as values
    def _module_position_ok(self, node: ast.AST) -> bool:
        parent = self.b.parent.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return True
        if isinstance(parent, ast.Expr):
            return True  # evaluated and thrown away
        return id(node) in self.b.value_slots

    def _check_module_value(self, node: ast.AST) -> None:
        mods = self.m.of(node) - {_OTHER}
        if not mods:
            return
        passage = sorted(m for m in mods if m in PASSAGES)
        parent = self.b.parent.get(id(node))
        if passage and not (isinstance(parent, ast.Attribute) and parent.value is node):
            self._reject("escape", node, f"reaches module {passage[0]}, which is not one of numpy's computation "
                                         f"modules")
        elif not self._module_position_ok(node):
            self._reject("module-value", node, f"uses module {_label(node)} as a value (a module may only be "
                                               f"named and have its attributes read)")

    def _check_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._check_module_value(node)

    # -- names
    def _check_Name(self, node: ast.Name) -> None:
        name, scope = node.id, self._scope(node)
        if not isinstance(node.ctx, ast.Load):
            return
        where = self.m.resolve(name, scope)
        if name.startswith("__") and name.endswith("__") and name not in HARMLESS_DUNDER_NAMES and where is None:
            self._reject("dunder", node, f"uses {name}")
            return
        if name in BANNED_BUILTINS and (where is None or where.kind in ("module", "class")):
            # A function's own binding always shadows the builtin; a module-level one may not have run yet.
            parent = self.b.parent.get(id(node))
            called = isinstance(parent, ast.Call) and parent.func is node
            if name == "type" and called:
                if len(parent.args) == 3:
                    self._reject("call", parent, "calls type() with 3 arguments, which builds a class at run time")
                elif len(parent.args) != 1 or parent.keywords:
                    self._reject("builtin", node, "calls type() with other than one argument")
            elif called:
                self._reject("builtin", node, f"calls {name}()")
            else:
                self._reject("builtin", node, f"refers to the builtin {name}" +
                             (" outside a one-argument call" if name == "type" else ""))
        self._check_module_value(node)

    # -- attributes
    def _check_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        mods = self.m.of(node.value) - {_OTHER}
        if isinstance(node.ctx, (ast.Store, ast.Del)) and mods:
            verb = "assigns to" if isinstance(node.ctx, ast.Store) else "deletes"
            self._reject("module-patch", node, f"{verb} module attribute {_label(node)}")
        if mods and not attr.startswith("__"):
            for m in sorted(mods):
                c = _classify(m, attr)
                if c and c[0] != "module":
                    self._reject(c[0], node, c[1])
                    break
        else:
            self._check_attribute_name(attr, node, address_read=self._is_address_read(node))
        if attr in ("format", "format_map") and not mods:
            self._check_format(node)
        self._check_module_value(node)

    def _check_attribute_name(self, attr: str, node: ast.AST, address_read: bool = False) -> None:
        """The rules for an attribute of an object that is not a module (an attribute chain, a class
        pattern's keyword, a ``__match_args__`` entry)."""
        if attr.startswith("__") and attr.endswith("__"):
            if attr == "__class__" and isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                return  # what type(x) returns; each step beyond it (__bases__, __subclasses__, ...) is refused
            if attr not in HARMLESS_DUNDER_ATTRS:
                self._reject("dunder", node, f"accesses dunder attribute {attr}")
        elif attr.startswith("_"):
            if attr not in self.b.own_private or attr in _api().private_modules:
                self._reject("private", node, f"reaches private name {attr}")
        elif attr in FILE_HATCHES:
            self._reject("escape", node, f"reaches {attr}, which reads or writes files")
        elif attr in TEST_HATCHES:
            self._reject("escape", node, f"reaches {attr}, which runs numpy's test suite")
        elif attr in LEADS_OUT:
            self._reject("escape", node, f"reaches {attr}, which leads out of the modules candidates may use")
        elif attr in FRAME_ATTRS:
            self._reject("escape", node, f"reaches {attr}, which exposes interpreter frames or code")
        elif attr in HANDOFF_ATTRS:
            self._reject("escape", node, f"reaches {attr}, which can hand back any object (an AttributeError's obj "
                                         f"is the module it came from)")
        elif attr == "ctypes" and not address_read:
            self._reject("escape", node, "reaches ctypes, which hands out raw pointers (only x.ctypes.data, the "
                                         "address, is allowed)")

    def _check_MatchClass(self, node: ast.MatchClass) -> None:
        for attr in node.kwd_attrs:  # ``case AttributeError(obj=m)`` reads e.obj without an Attribute node
            self._check_attribute_name(attr, node)

    def _is_address_read(self, node: ast.Attribute) -> bool:
        parent = self.b.parent.get(id(node))
        return isinstance(parent, ast.Attribute) and parent.value is node and parent.attr == "data" \
            and isinstance(parent.ctx, ast.Load)

    def _check_format(self, node: ast.Attribute) -> None:
        recv = node.value
        if not (isinstance(recv, ast.Constant) and isinstance(recv.value, str)):
            self._reject("format", node, f"calls {node.attr} on a computed string (only a literal's fields can be "
                                         f"checked)")
            return
        bad = _format_field_problem(recv.value)
        if bad:
            self._reject("format", node, bad)

    # -- calls
    def _check_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Name) and f.id in REFLECTION and node.args and self.m.of(node.args[0]) - {_OTHER}:
            where = self.m.resolve(f.id, self._scope(f))
            if where is None or where.kind in ("module", "class"):
                self._reject("module-reflection", node, f"calls {f.id}() on a module")

    # -- imports
    def _module_into_class(self, node: ast.AST, names: list[str]) -> None:
        """An import in a class body makes the module a class attribute, which the gate cannot follow."""
        if self._scope(node).kind == "class" and names:
            self._reject("module-value", node, f"imports module {names[0]} into a class body (import it at module "
                                               f"level)")

    def _check_Import(self, node: ast.Import) -> None:
        self._module_into_class(node, [a.name for a in node.names])
        for alias in node.names:
            name = alias.name
            private = next((p for p in name.split(".") if p.startswith("_")), None)
            if private:
                self._reject("private", node, f"reaches private name {private}")
            elif name.split(".")[0] not in _ROOTS:
                self._reject("import", node, f"imports {name}")
            elif name not in ALLOWED_MODULES:
                self._reject("import", node, f"imports {name}, which is not a module candidates may use")

    def _check_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self._reject("import", node, f"imports from {'.' * node.level}{module}")
            return
        if module == "__future__":
            return
        private = next((p for p in module.split(".") if p.startswith("_")), None)
        if private:
            self._reject("private", node, f"reaches private name {private}")
            return
        if module.split(".")[0] not in _ROOTS:
            self._reject("import", node, f"imports from {module}")
            return
        if module not in ALLOWED_MODULES and module not in PASSAGES:
            self._reject("import", node, f"imports from {module}, which is not a module candidates may use")
            return
        api = _api().modules[module]
        self._module_into_class(node, [f"{module}.{a.name}" for a in node.names if a.name in api.submodules])
        for alias in node.names:
            names = api.star if alias.name == "*" else (alias.name,)
            for n in names:
                c = _classify(module, n)
                if c and c[0] != "module":
                    star = " (through *)" if alias.name == "*" else ""
                    self._reject(c[0], node, f"imports {module}.{n}{star}, {c[1].split(', ', 1)[-1]}"
                                 if c[0] == "escape" else c[1])
                    break
                if c and c[1] in PASSAGES:
                    self._reject("escape", node, f"imports module {c[1]}, which is only a passage to "
                                                 f"{' and '.join(PASSAGES[c[1]])}")
                    break


def _format_field_problem(template: str) -> str | None:
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as e:
        return f"formats with a malformed template ({e})"
    for _, field_name, spec, _ in parts:
        if field_name and any(c in field_name for c in ".["):
            return f"formats field {{{field_name}}}, which reads attributes or items of an argument"
        if spec and "{" in spec:
            inner = _format_field_problem(spec)
            if inner:
                return inner
    return None


def check(src: str) -> list[Rejection]:
    """All rule violations in ``src`` (empty when it passes), in source order. Raises SyntaxError for
    unparsable code (and ValueError for NUL bytes), as ``compile`` would."""
    try:
        tree = ast.parse(src)
    except RecursionError:  # the parser's own limit, as compile() would hit it
        raise SyntaxError("expressions nested too deeply to parse", ("<candidate>", 1, 1, "")) from None
    try:
        found = _Checker(tree).found
    except Exception as e:  # noqa: BLE001 - a gate bug must give a verdict, never an exception out of grading
        return [Rejection("gate", 1, f"could not be checked ({type(e).__name__} inside the gate: a kbench bug, "
                                     f"please report it)")]
    unique = list(dict.fromkeys(found))
    return sorted(unique, key=lambda r: (r.line, r.col))
