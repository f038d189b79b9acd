"""Task files: a task is one Python file its author writes without reading kbench's source.

The kbench format (``task.py`` in a folder of its own, or any ``NAME.py``)::

    \"\"\"RMSNorm over the last axis.\"\"\"          # the description (its first paragraph)
    LEVEL = 1
    INPUTS = {"x": (2048, 1024)}                 # input names and shapes (float32, drawn by kbench)
    OUTPUT = (2048, 1024)                        # optional: measured by running the reference once

    def make_params(rng, randomize, draw):      # optional: no parameters without it
        return {"gamma": ..., "eps": 1e-6}       # float32 arrays and floats

    def forward(x, params, alloc):               # the reference: the same contract as a candidate
        ...

Optional declarations: ``NAME`` (default: the folder's or the file's name), ``FLOPS``/``BYTES`` (what the
reference does and moves) and ``MIN_FLOPS``/``MIN_BYTES`` (the least any correct kernel needs; default: one
flop per output element, every input read once and the output written once), ``ATOL``/``RTOL``, ``DISTS``
(the distributions hardened mode uses for this task), ``AXIS`` (the natural axis rows run along),
``PROPERTIES`` (property checks of ``kbench.core.judging``) and ``STRUCTURE`` (the trial inputs' structure
kind, ``kbench.core.structured``). Declarations are read from the file's syntax tree (literals, tuples,
dicts and arithmetic on them and on earlier such constants), never by running it.

The reference (``Task.ref_src``) is ``forward`` and every top-level definition it uses, as written (the
declarations, ``make_params`` and what only they use are left out), so it is a valid candidate.

KernelBench's convention, rendered in numpy, loads as it is: ``class Model`` with ``__init__(*get_init_inputs())``
and ``forward(self, *inputs)``, and ``get_inputs()``. Input names are ``forward``'s parameter names and their
shapes those ``get_inputs()`` returns; the parameters are the model's float arrays (as float32) and floats,
a fresh ``Model`` per parameter set under a seed from the grader; its other attributes (ints, strings) are
constants. Its reference is the whole file plus a two-line adapter to the candidate contract.

What has to run to read a file (the parameter maker, ``get_inputs``, a measured output shape) runs in an
``Executor``: in this process for the task sets kbench ships (its own code), in a confined sandbox worker for
any other file (``kbench.usertasks``). Every problem is a ``TaskFileError`` whose message is one line naming
the file.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import math
import re
import tomllib
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from kbench.core import distributions, judging, structured
from kbench.core.loader import MAX_SOURCE_BYTES

#: Declarations a task file may make, with what each must be.
DECLARATIONS: dict[str, str] = {
    "NAME": "a task name (letters, digits, _)",
    "LEVEL": "a positive integer",
    "DESCRIPTION": "a string",
    "INPUTS": "a dict of input names to shapes (tuples of positive ints)",
    "OUTPUT": "a shape (a tuple of positive ints)",
    "FLOPS": "a non-negative number",
    "BYTES": "a non-negative number",
    "MIN_FLOPS": "a non-negative number",
    "MIN_BYTES": "a non-negative number",
    "ATOL": "a non-negative number",
    "RTOL": "a non-negative number",
    "DISTS": f"a tuple of distribution names ({', '.join(distributions.ALL_DISTS)})",
    "AXIS": "an integer axis of the output",
    "PROPERTIES": f"a tuple of property checks ({', '.join(judging.PROPERTIES)})",
    "STRUCTURE": f"a structure kind ({', '.join(('rows',) + tuple(structured.NOTES))})",
}
STRUCTURES = ("rows",) + tuple(structured.NOTES)
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
#: The file of a task that has a folder of its own (its candidates and expected verdicts beside it).
TASK_FILE = "task.py"
#: Files in a task's folder that are not candidates.
NOT_CANDIDATES = (TASK_FILE,)
#: A task's inputs and output must fit the grader's arenas comfortably.
MAX_ELEMENTS = 1 << 28

Params = dict[str, Any]


class TaskFileError(ValueError):
    """A task file that cannot be loaded; the message is one line naming the file and the problem."""


def _fail(path: Path | str, problem: str) -> TaskFileError:
    problem = " ".join(str(problem).split())
    return TaskFileError(f"{path}: {problem[:400]}")


# ------------------------------------------------------------------------------------------ literals

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a ** b,
}


class _NotLiteral(Exception):
    pass


def literal(node: ast.AST, env: dict[str, Any]) -> Any:
    """The value of a declaration's expression: numbers, strings, booleans, None, tuples and lists (as tuples),
    dicts, + - * / // % ** on numbers (bounded), unary signs, and names of earlier constants. Anything else
    raises ``_NotLiteral``: a declaration is read, never run."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(literal(e, env) for e in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _NotLiteral("a ** in a dict")
        return {literal(k, env): literal(v, env) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise _NotLiteral(f"{node.id} is not a constant defined above it")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = literal(node.operand, env)
        if not _number(v):
            raise _NotLiteral("a sign on a non-number")
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = literal(node.left, env), literal(node.right, env)
        if not (_number(a) and _number(b)):
            raise _NotLiteral("arithmetic on a non-number")
        if isinstance(node.op, ast.Pow) and (abs(b) > 64 or abs(a) > 1 << 32):
            raise _NotLiteral("a power too large to be a size")
        try:
            v = _BINOPS[type(node.op)](a, b)
        except (ArithmeticError, ValueError) as e:
            raise _NotLiteral(f"{type(e).__name__}: {e}") from None
        if isinstance(v, int) and abs(v) > 1 << 80:
            raise _NotLiteral("a number too large")
        return v
    raise _NotLiteral(f"{type(node).__name__.lower()} is not a literal")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ------------------------------------------------------------------------------------------ the spec

@dataclass(frozen=True)
class Spec:
    """What a task file declares, read without running it."""

    path: Path
    src: str
    kind: str  # "kbench" or "kernelbench"
    name: str
    level: int
    description: str
    decl: dict[str, Any]  # the declarations made, by name
    ref_src: str | None  # kbench format: forward and what it uses; KernelBench: made after the probe
    params_arity: int  # make_params's positional parameters (0: no make_params)
    folder: Path | None = None  # the task's own folder (task.py), where its candidates are

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.src.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError as e:
        raise _fail(path, f"cannot read it ({e.strerror or e})") from None
    if path.is_dir():
        raise _fail(path, "a directory, not a task file")
    if size > MAX_SOURCE_BYTES:
        raise _fail(path, f"{size / 1e6:.1f} MB; task files are limited to {MAX_SOURCE_BYTES / 1e6:.0f} MB")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise _fail(path, f"cannot read it ({e.strerror or e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(path, f"not UTF-8 text (byte {e.start})") from None


def _bound(stmt: ast.stmt) -> set[str]:
    """The top-level names a statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    names: set[str] = set()
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.For, ast.With, ast.If, ast.Try)):
        targets = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    for t in targets:
        names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _used(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _is_main_block(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test) and "__name__" in ast.unparse(stmt.test)


def _lines(src_lines: list[str], stmt: ast.stmt) -> str:
    first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    return "\n".join(src_lines[first - 1: stmt.end_lineno])


def _reference(tree: ast.Module, src: str, forward: ast.FunctionDef) -> str:
    """``forward`` and every top-level statement it uses (transitively), in file order; ``__future__``
    imports first. Declarations, the parameter maker and what only they use are left out."""
    body = [s for s in tree.body if not _is_main_block(s)]
    need = set(_used(forward))
    keep = {id(forward)}
    changed = True
    while changed:
        changed = False
        for s in body:
            if id(s) in keep or s is forward:
                continue
            if _bound(s) & need and not (isinstance(s, ast.FunctionDef) and s.name == "make_params"):
                keep.add(id(s))
                need |= _used(s)
                changed = True
    src_lines = src.splitlines()
    future = [s for s in body if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    parts = [_lines(src_lines, s) for s in future] + \
            [_lines(src_lines, s) for s in body if id(s) in keep and s not in future]
    return "\n" + "\n\n".join(parts) + "\n"


def _description(tree: ast.Module, decl: dict[str, Any]) -> str:
    if isinstance(decl.get("DESCRIPTION"), str):
        return " ".join(decl["DESCRIPTION"].split())
    doc = ast.get_docstring(tree)
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _shape(path: Path, what: str, v: Any) -> tuple[int, ...]:
    if not (isinstance(v, tuple) and v and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in v)):
        raise _fail(path, f"{what} must be a shape, a tuple of positive ints (got {v!r:.60})")
    if math.prod(v) > MAX_ELEMENTS:
        raise _fail(path, f"{what} {v} has {math.prod(v):,} elements; at most {MAX_ELEMENTS:,}")
    return v


def _check_decl(path: Path, name: str, v: Any) -> Any:
    bad = _fail(path, f"{name} must be {DECLARATIONS[name]} (got {v!r:.60})")
    if name == "NAME" and not (isinstance(v, str) and NAME_RE.match(v)):
        raise bad
    if name == "LEVEL" and not (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 9):
        raise bad
    if name == "DESCRIPTION" and not isinstance(v, str):
        raise bad
    if name == "INPUTS":
        if not (isinstance(v, dict) and v and all(isinstance(k, str) and NAME_RE.match(k) for k in v)):
            raise bad
        return {k: _shape(path, f"INPUTS[{k!r}]", s) for k, s in v.items()}
    if name == "OUTPUT":
        return _shape(path, "OUTPUT", v)
    if name in ("FLOPS", "BYTES", "MIN_FLOPS", "MIN_BYTES", "ATOL", "RTOL"):
        if not (_number(v) and v >= 0 and math.isfinite(v)):
            raise bad
    if name == "DISTS":
        v = (v,) if isinstance(v, str) else v
        if not (isinstance(v, tuple) and v and all(d in distributions.ALL_DISTS for d in v)):
            raise bad
    if name == "AXIS" and not (isinstance(v, int) and not isinstance(v, bool)):
        raise bad
    if name == "PROPERTIES":
        v = (v,) if isinstance(v, str) else v
        if not (isinstance(v, tuple) and all(p in judging.PROPERTIES for p in v)):
            raise bad
    if name == "STRUCTURE" and v not in STRUCTURES:
        raise bad
    return v


def parse(path: Path, src: str | None = None, default_name: str | None = None, folder: Path | None = None) -> Spec:
    """Read a task file's declarations and its reference without running anything."""
    path = Path(path)
    src = read_text(path) if src is None else src
    try:
        tree = ast.parse(src, filename=str(path))
    except SyntaxError as e:
        raise _fail(path, f"SyntaxError: {e.msg}" + (f" (line {e.lineno})" if e.lineno else "")) from None
    except (MemoryError, RecursionError):
        raise _fail(path, "SyntaxError: too deeply nested to parse") from None
    except ValueError as e:  # NUL bytes
        raise _fail(path, f"ValueError: {e}") from None
    env: dict[str, Any] = {}
    decl: dict[str, Any] = {}
    for stmt in tree.body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            names = [t.id] if isinstance(t, ast.Name) else [e.id for e in t.elts if isinstance(e, ast.Name)] \
                if isinstance(t, ast.Tuple) else []
            try:
                v = literal(stmt.value, env)
            except _NotLiteral as e:
                for n in names:
                    if n in DECLARATIONS:
                        raise _fail(path, f"{n} (line {stmt.lineno}) must be a literal: numbers, strings, tuples, "
                                          f"dicts and arithmetic on them and on constants above it ({e})") from None
                    env.pop(n, None)
                continue
            if isinstance(t, ast.Tuple):
                if not (isinstance(v, tuple) and len(v) == len(t.elts) == len(names)):
                    continue
                pairs = list(zip(names, v))
            else:
                pairs = [(names[0], v)] if names else []
            for n, val in pairs:
                env[n] = val
                if n in DECLARATIONS:
                    decl[n] = _check_decl(path, n, val)
    funcs = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
    used = set().union(*(_used(s) for s in tree.body)) if tree.body else set()
    for n in env:
        if n.isupper() and n not in DECLARATIONS and n not in used:
            close = difflib.get_close_matches(n, list(DECLARATIONS), n=1, cutoff=0.75)
            if close:
                raise _fail(path, f"{n} is not a declaration kbench reads (did you mean {close[0]}?)")
    name = decl.get("NAME") or default_name or path.stem
    if not NAME_RE.match(name):
        raise _fail(path, f"{name!r} is not a usable task name (letters, digits and _; or declare NAME)")
    level = decl.get("LEVEL", 1)
    mp = funcs.get("make_params")
    arity = 0
    if mp is not None:
        arity = len(mp.args.posonlyargs) + len(mp.args.args)
        if arity < 1 and mp.args.vararg is None:
            raise _fail(path, f"make_params (line {mp.lineno}) must take (rng, randomize, draw)")
        arity = 3 if mp.args.vararg is not None else min(arity, 3)
    if "forward" in funcs:
        fwd = funcs["forward"]
        nargs = len(fwd.args.posonlyargs) + len(fwd.args.args)
        if nargs != 3 and fwd.args.vararg is None:
            raise _fail(path, f"forward (line {fwd.lineno}) must take (x, params, alloc), as a candidate does")
        if "INPUTS" not in decl:
            raise _fail(path, "no INPUTS declared (e.g. INPUTS = {\"x\": (1024, 1024)})")
        return Spec(path, src, "kbench", name, level, _description(tree, decl), decl,
                    _reference(tree, src, fwd), arity, folder)
    if "Model" in classes and "get_inputs" in funcs:
        m_fwd = next((s for s in classes["Model"].body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
        if m_fwd is None:
            raise _fail(path, f"class Model (line {classes['Model'].lineno}) has no forward method")
        desc = _description(tree, decl) or f"KernelBench-style problem {name}."
        return Spec(path, src, "kernelbench", name, level, desc, decl, None, 0, folder)
    raise _fail(path, "no forward(x, params, alloc) defined (nor a KernelBench-style class Model with get_inputs())")


# ------------------------------------------------------------------------------------------ running it

@dataclass(frozen=True)
class KernelBenchShape:
    """What a KernelBench-style file's ``get_inputs()``/``Model`` told the probe."""

    inputs: dict[str, tuple[int, ...]]
    init: tuple  # get_init_inputs(), literal values
    arrays: tuple[str, ...]  # Model attributes that are parameters (float arrays)
    scalars: tuple[str, ...]  # ... float attributes, also parameters
    consts: dict[str, Any]  # other attributes: baked into the reference


class Executor(Protocol):
    """Where a task file's own code runs: the parameter maker, the KernelBench probe, a measured output shape,
    and the reference in float64 (the grader's second opinion)."""

    def make_params(self, rng: np.random.Generator, randomize: bool, draw: int) -> Params: ...

    def kernelbench(self) -> KernelBenchShape: ...

    def output_of(self, ref_src: str, inputs: dict[str, tuple[int, ...]]) -> tuple[str, tuple[int, ...]]: ...

    def ref_fn(self, ref_src: str) -> Callable[..., np.ndarray] | None: ...


#: Code appended to a task file where it runs (in-process or in a worker): one entry point for every operation,
#: so both executors run the same operations the same way.
RUNNER = '''

def _kbench_rng(state):
    import numpy as _np
    bg = {"PCG64": _np.random.PCG64, "PCG64DXSM": _np.random.PCG64DXSM, "MT19937": _np.random.MT19937,
          "Philox": _np.random.Philox, "SFC64": _np.random.SFC64}[state["bit_generator"]]()
    bg.state = state
    return _np.random.Generator(bg)


def _kbench_op(op, args):
    """(header, arrays) for one operation; the caller validates both."""
    import numpy as _np
    g = globals()
    if op == "params":
        rng = _kbench_rng(args["state"])
        fn = g.get("make_params")
        p = {} if fn is None else fn(*(rng, bool(args["randomize"]), int(args["draw"]))[: args["arity"]])
        if type(p) is not dict:
            raise TypeError(f"make_params returned {type(p).__name__}, not a dict")
        arrays = {k: v for k, v in p.items() if isinstance(v, _np.ndarray)}
        scalars = {k: v for k, v in p.items() if k not in arrays}
        return {"state": rng.bit_generator.state, "scalars": scalars, "order": list(p)}, arrays
    if op in ("kb_probe", "kb_params"):
        init = list(g["get_init_inputs"]()) if "get_init_inputs" in g else []
        if op == "kb_params":
            rng = _kbench_rng(args["state"])
            _np.random.seed(int(rng.integers(2 ** 31)))
            model = g["Model"](*args["init"])
        else:
            _np.random.seed(0)
            model = g["Model"](*init)
        attrs = dict(vars(model))
        if op == "kb_params":
            arrays = {k: _np.asarray(v, _np.float32) for k, v in attrs.items()
                      if isinstance(v, _np.ndarray) and v.dtype.kind == "f"}
            scalars = {k: float(v) for k, v in attrs.items() if type(v) is float}
            return {"state": rng.bit_generator.state, "scalars": scalars, "order": list(attrs)}, arrays
        import inspect as _inspect
        sig = _inspect.signature(g["Model"].forward)
        names = [n for n, p in list(sig.parameters.items())[1:]]
        kinds = [p.kind.name for p in list(sig.parameters.values())[1:]]
        xs = list(g["get_inputs"]())
        desc = {}
        for k, v in attrs.items():
            if isinstance(v, _np.ndarray):
                desc[k] = ["array", v.dtype.str, list(v.shape)]
            elif type(v) is float:
                desc[k] = ["float"]
            elif v is None or type(v) in (int, bool, str) or (type(v) in (tuple, list) and all(
                    type(e) in (int, float, bool, str) for e in v)):
                desc[k] = ["const", repr(v)]
            else:
                desc[k] = ["other", type(v).__name__]
        return {"names": names, "kinds": kinds, "init": repr(init), "attrs": desc,
                "inputs": [[type(v).__name__, getattr(v, "dtype", None) and v.dtype.str,
                            list(getattr(v, "shape", ()))] for v in xs]}, {}
    raise ValueError(f"unknown operation {op!r}")
'''


def parse_params(path: Path, header: dict, arrays: dict[str, np.ndarray]) -> Params:
    """The parameters an operation returned, checked against the contract (float32 arrays and floats), in
    the order the maker gave them (``header["order"]``)."""
    scalars = header.get("scalars", {})
    if not isinstance(scalars, dict):
        raise _fail(path, "make_params returned something other than a dict")
    values = {**arrays, **scalars}
    order = [k for k in header.get("order", ()) if k in values] if isinstance(header.get("order"), list) else []
    p: Params = {}
    for k in order + [k for k in values if k not in order]:
        v = values[k]
        if not (isinstance(k, str) and NAME_RE.match(k)):
            raise _fail(path, f"parameter name {k!r:.40} is not an identifier")
        if isinstance(v, np.ndarray):
            if v.dtype != np.float32:
                raise _fail(path, f"parameter {k!r} is a {v.dtype} array; parameters are float32 arrays and floats")
            p[k] = v
        elif _number(v) or isinstance(v, (np.floating, np.integer)):
            p[k] = float(v)
        else:
            raise _fail(path, f"parameter {k!r} is a {type(v).__name__}; parameters are float32 arrays and floats")
    return p


def kernelbench_shape(path: Path, header: dict) -> KernelBenchShape:
    """A KernelBench-style file's inputs and parameters, from what the probe saw (one line per problem)."""
    names, kinds, xs = header.get("names"), header.get("kinds"), header.get("inputs")
    if not (isinstance(names, list) and isinstance(kinds, list) and isinstance(xs, list)):
        raise _fail(path, "the KernelBench probe returned nothing usable")
    if any(k not in ("POSITIONAL_OR_KEYWORD", "POSITIONAL_ONLY") for k in kinds):
        raise _fail(path, "Model.forward must take named positional inputs (no *args, **kwargs or keyword-only)")
    if len(names) != len(xs):
        raise _fail(path, f"get_inputs() returns {len(xs)} inputs but Model.forward takes {len(names)}")
    inputs: dict[str, tuple[int, ...]] = {}
    for n, (tname, dtype, shape) in zip(names, xs):
        if tname != "ndarray":
            raise _fail(path, f"input {n!r} from get_inputs() is a {tname}; inputs are float arrays")
        if not (isinstance(dtype, str) and np.dtype(dtype).kind == "f"):
            raise _fail(path, f"input {n!r} from get_inputs() is {np.dtype(dtype) if dtype else '?'}; kbench's inputs "
                              "are float32 arrays drawn from its distributions")
        inputs[n] = _shape(path, f"input {n!r}", tuple(int(d) for d in shape))
    try:
        init = ast.literal_eval(header.get("init", "[]"))
    except (ValueError, SyntaxError):
        raise _fail(path, "get_init_inputs() must return literal values (numbers, strings, tuples)") from None
    arrays, scalars, consts = [], [], {}
    for k, d in dict(header.get("attrs", {})).items():
        if not NAME_RE.match(k) or k.startswith("__"):
            raise _fail(path, f"Model attribute {k!r:.40} is not a plain name")
        if d[0] == "array":
            if np.dtype(d[1]).kind != "f":
                raise _fail(path, f"Model attribute {k!r} is a {np.dtype(d[1])} array; parameters are float arrays")
            arrays.append(k)
        elif d[0] == "float":
            scalars.append(k)
        elif d[0] == "const":
            consts[k] = ast.literal_eval(d[1])
        else:
            raise _fail(path, f"Model attribute {k!r} is a {d[1]}; kbench's parameters are float arrays and floats")
    return KernelBenchShape(inputs, tuple(init), tuple(arrays), tuple(scalars), consts)


def kernelbench_reference(spec: Spec, shape: KernelBenchShape) -> str:
    """The reference of a KernelBench-style file: the whole file, then a subclass of its Model built from
    kbench's params dict and a ``forward`` in the candidate contract."""
    lines = ["", "", "class _KbenchModel(Model):",
             '    """The task\'s Model with its parameters from the params dict (kbench\'s adapter)."""', "",
             "    def __init__(self, params):"]
    for k in shape.arrays + shape.scalars:
        lines.append(f"        self.{k} = params[{k!r}]")
    for k, v in shape.consts.items():
        lines.append(f"        self.{k} = {v!r}")
    if len(lines) == 6:
        lines.append("        pass")
    args = ", ".join(f"x[{n!r}]" for n in shape.inputs)
    lines += ["", "", "def forward(x, params, alloc):", f"    return _KbenchModel(params).forward({args})", ""]
    return spec.src.rstrip("\n") + "\n" + "\n".join(lines)


class InProcess:
    """Runs a task file's code in this process: only for kbench's own task sets (package data, trusted as
    the rest of kbench is). The file is executed once, as a module of its own."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self._module: types.ModuleType | None = None

    def _ns(self) -> dict[str, Any]:
        if self._module is None:
            mod = types.ModuleType(f"kbench_task_{self.spec.name}")
            mod.__dict__.update({"np": np, "math": math, "__file__": str(self.spec.path)})
            try:
                exec(compile(self.spec.src + RUNNER, str(self.spec.path), "exec", dont_inherit=True),  # noqa: S102
                     mod.__dict__)
            except Exception as e:  # noqa: BLE001 - the file's own error, one line
                raise _fail(self.spec.path, f"{type(e).__name__}: {e}") from None
            self._module = mod
        return self._module.__dict__

    def _op(self, op: str, args: dict) -> tuple[dict, dict]:
        try:
            return self._ns()["_kbench_op"](op, args)
        except TaskFileError:
            raise
        except Exception as e:  # noqa: BLE001
            raise _fail(self.spec.path, f"{op.replace('_', ' ')} raised {type(e).__name__}: {e}") from None

    def make_params(self, rng: np.random.Generator, randomize: bool, draw: int) -> Params:
        if self.spec.kind == "kbench":
            fn = self._ns().get("make_params")
            if fn is None:
                return {}
            p = fn(*(rng, randomize, draw)[: self.spec.params_arity])  # the caller's generator, advanced in place
            if type(p) is not dict:
                raise _fail(self.spec.path, f"make_params returned {type(p).__name__}, not a dict")
            return parse_params(self.spec.path, {"order": list(p), "scalars": {
                k: v for k, v in p.items() if not isinstance(v, np.ndarray)}},
                {k: v for k, v in p.items() if isinstance(v, np.ndarray)})
        header, arrays = self._op("kb_params", {"state": rng.bit_generator.state, "init": list(self.kb().init),
                                                "randomize": randomize, "draw": draw})
        rng.bit_generator.state = header["state"]
        return parse_params(self.spec.path, header, arrays)

    _kb: KernelBenchShape | None = None

    def kb(self) -> KernelBenchShape:
        if self._kb is None:
            self._kb = kernelbench_shape(self.spec.path, self._op("kb_probe", {})[0])
        return self._kb

    def kernelbench(self) -> KernelBenchShape:
        return self.kb()

    def output_of(self, ref_src: str, inputs: dict[str, tuple[int, ...]]) -> tuple[str, tuple[int, ...]]:
        from kbench.core.tasks import base_namespace

        ns = base_namespace()
        exec(compile(ref_src, f"<reference {self.spec.name}>", "exec", dont_inherit=True), ns)  # noqa: S102
        rng = np.random.default_rng(0)
        x = {k: distributions.sample(rng, "normal", s) for k, s in inputs.items()}
        out = ns["forward"](x, self.make_params(rng, False, 0), lambda shape, dtype=np.float32: np.empty(shape, dtype))
        if not isinstance(out, np.ndarray):
            raise _fail(self.spec.path, f"the reference returned {type(out).__name__}, not a numpy array")
        return out.dtype.str, tuple(out.shape)

    def ref_fn(self, ref_src: str) -> Callable[..., np.ndarray] | None:
        return None  # Task.ref_fn executes ref_src here, as it always has for kbench's own tasks


# ------------------------------------------------------------------------------------------ building a Task

def build(spec: Spec, executor: Executor, origin: str) -> Any:
    """The ``Task`` a spec describes, its code running in ``executor`` (a ``kbench.core.tasks.Task``)."""
    from kbench.core.tasks import Task

    d = spec.decl
    ref_src = spec.ref_src
    inputs: dict[str, tuple[int, ...]]
    if spec.kind == "kernelbench":
        kb = executor.kernelbench()
        ref_src = kernelbench_reference(spec, kb)
        inputs = dict(d.get("INPUTS") or kb.inputs)
    else:
        inputs = dict(d["INPUTS"])
    assert ref_src is not None
    out = d.get("OUTPUT")
    if out is None:
        dtype, out = executor.output_of(ref_src, inputs)
        if np.dtype(dtype) != np.float32:
            raise _fail(spec.path, f"the reference returns {np.dtype(dtype)}; outputs are float32 (cast the result, "
                                   "or declare float32 parameters)")
        out = _shape(spec.path, "the reference's output", tuple(out))
    axis = d.get("AXIS", -1)
    if not -len(out) <= axis < len(out):
        raise _fail(spec.path, f"AXIS {axis} is not an axis of the output {out}")
    in_elems = sum(math.prod(s) for s in inputs.values())
    out_elems = math.prod(out)
    min_bytes = d.get("MIN_BYTES", 4 * (in_elems + out_elems))
    min_flops = d.get("MIN_FLOPS", float(out_elems))
    for low, high in (("MIN_FLOPS", "FLOPS"), ("MIN_BYTES", "BYTES")):
        if low in d and high in d and d[low] > d[high]:
            raise _fail(spec.path, f"{low} ({d[low]:g}) is more than {high} ({d[high]:g}): the least work any "
                                   "kernel needs cannot exceed what the reference does")
    fn_factory = executor.ref_fn(ref_src)
    return Task(spec.name, spec.level, spec.description, ref_src, inputs, out, executor.make_params,
                flops=d.get("FLOPS", min_flops), bytes=d.get("BYTES", min_bytes), min_flops=min_flops,
                min_bytes=min_bytes, axis=axis, properties=tuple(d.get("PROPERTIES", ())),
                structure=d.get("STRUCTURE", "rows"), atol=d.get("ATOL"), rtol=d.get("RTOL"),
                dists=d.get("DISTS"), origin=origin, path=spec.path, _ref_runner=fn_factory)


# ------------------------------------------------------------------------------------------ folders and sets

@dataclass(frozen=True)
class Entry:
    """One task in a folder: its file, and its own folder when it has one (``NAME/task.py``)."""

    path: Path
    name: str
    folder: Path | None


def entries(root: Path) -> tuple[list[Entry], list[str]]:
    """The task files under ``root``: ``root/NAME/task.py`` (a folder with its candidates) and ``root/NAME.py``
    (one file); plus one line for each entry that is neither. Never raises."""
    out: list[Entry] = []
    problems: list[str] = []
    try:
        items = sorted(root.iterdir())
    except OSError as e:
        return [], [f"{root}: cannot list it ({e.strerror or type(e).__name__})"]
    for p in items:
        if p.name.startswith((".", "_")) or p.name in ("taskset.toml",):
            continue
        try:
            if p.is_dir():
                if (p / TASK_FILE).is_file():
                    out.append(Entry(p / TASK_FILE, p.name, p))
                else:
                    problems.append(f"{p}/: a folder without a {TASK_FILE}")
            elif p.suffix == ".py":
                out.append(Entry(p, p.stem, None))
        except OSError as e:
            problems.append(f"{p}: {e.strerror or type(e).__name__}")
    return out, problems


def set_order(root: Path) -> list[str]:
    """The order a task set's ``taskset.toml`` gives (empty without one)."""
    try:
        data = tomllib.loads((root / "taskset.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    order = data.get("order", [])
    return [n for n in order if isinstance(n, str)] if isinstance(order, list) else []


@dataclass
class Loaded:
    """The tasks a folder holds and one line for every file that did not load."""

    tasks: list[Any] = field(default_factory=list)
    folders: dict[str, Path] = field(default_factory=dict)  # task name -> its own folder (candidates)
    errors: list[str] = field(default_factory=list)


def load_dir(root: Path, make_executor: Callable[[Spec], Executor], origin: str,
             taken: set[str] | frozenset[str] = frozenset()) -> Loaded:
    """Every task file under ``root``; a bad file is one line in ``errors`` and the others still load.
    ``taken``: names already in use (a file reusing one is an error, not a replacement)."""
    found, problems = entries(root)
    res = Loaded(errors=list(problems))
    order = {n: i for i, n in enumerate(set_order(root))}
    found.sort(key=lambda e: (order.get(e.name, len(order)), e.name))
    seen = set(taken)
    for e in found:
        try:
            spec = parse(e.path, default_name=e.name, folder=e.folder)
            if spec.name in seen:
                raise _fail(e.path, f"task name {spec.name!r} is already taken by another task")
            task = build(spec, make_executor(spec), origin)
        except TaskFileError as err:
            res.errors.append(str(err))
            continue
        except Exception as err:  # noqa: BLE001 - whatever else one file does, the others still load
            res.errors.append(str(_fail(e.path, f"{type(err).__name__}: {err}")))
            continue
        seen.add(task.name)
        res.tasks.append(task)
        if e.folder is not None:
            res.folders[task.name] = e.folder
    return res


def expected_verdicts(folder: Path) -> dict[str, dict[str, Any]]:
    """A task folder's ``expected.toml``: candidate name -> {naive, hardened, edge, hack, why}."""
    try:
        data = tomllib.loads((folder / "expected.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    out = {}
    for name, row in data.items():
        if isinstance(row, dict):
            edge = row.get("edge", row.get("hardened"))
            out[name] = {"naive": row.get("naive"), "hardened": row.get("hardened"),
                         "edge": None if edge == "skip" else edge, "hack": bool(row.get("hack", False)),
                         "why": str(row.get("why", ""))}
    return out

