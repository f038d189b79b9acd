"""The hardened mode's AST gate: a cheap first filter, never the real defence.

Each rejection names its rule and line. Ordinary Python passes: classes with ``__init__``/``__call__``,
closures, comprehensions, ``with np.errstate(...)``, ``out=`` arguments.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

ALLOWED_IMPORTS = frozenset({"numpy", "math"})
BANNED_CALLS = frozenset({"eval", "exec", "compile", "open", "__import__", "globals", "vars", "locals",
                          "breakpoint", "input", "memoryview"})
#: Dunder names harmless to read or call (``super().__init__(...)``, ``type(x).__name__``).
HARMLESS_DUNDERS = frozenset({"__init__", "__call__", "__name__", "__doc__", "__len__", "__getitem__"})
#: Attribute names that lead out of numpy to the OS, the interpreter or files.
ESCAPE_ATTRS = frozenset({"os", "sys", "ctypes", "ctypeslib", "subprocess", "threading", "builtins", "importlib",
                          "gc", "inspect", "shutil", "pathlib", "io", "socket", "multiprocessing", "f2py",
                          "testing", "load", "save", "savez", "savez_compressed", "fromfile", "tofile",
                          "memmap", "loadtxt", "savetxt", "genfromtxt", "fromregex", "DataSource"})


@dataclass(frozen=True)
class Rejection:
    rule: str
    line: int
    detail: str

    def __str__(self) -> str:
        return f"line {self.line} {self.detail} [{self.rule}]"


class _Gate(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[Rejection] = []
        self.modules: set[str] = {"np", "math", "numpy"}

    def _reject(self, rule: str, node: ast.AST, detail: str) -> None:
        self.found.append(Rejection(rule, getattr(node, "lineno", 0), detail))

    def _root(self, node: ast.AST) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.value if not isinstance(node, ast.Call) else node.func
        return node.id if isinstance(node, ast.Name) else None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = alias.name.split(".")[0]
            if root not in ALLOWED_IMPORTS:
                self._reject("import", node, f"imports {alias.name}")
            else:
                self.modules.add(alias.asname or root)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        root = (node.module or "").split(".")[0]
        if node.level or root not in ALLOWED_IMPORTS:
            self._reject("import", node, f"imports from {'.' * node.level}{node.module or ''}")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        # ``n = np`` or ``u = np.lib``: the new name is a module too, so ``n.allclose = f`` later is a patch
        self.visit(node.value)
        if isinstance(node.value, (ast.Name, ast.Attribute)) and self._root(node.value) in self.modules:
            self.modules.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for t in node.targets:
            self.visit(t)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in HARMLESS_DUNDERS:
            self._reject("dunder", node, f"accesses dunder attribute {node.attr}")
        elif node.attr.startswith("_") and self._root(node) in self.modules:
            self._reject("private", node, f"reaches private module attribute {node.attr}")
        elif node.attr in ESCAPE_ATTRS and self._root(node) in self.modules:
            self._reject("escape", node, f"reaches {node.attr} through a module")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and self._root(node) in self.modules:
            self._reject("module-patch", node, f"assigns to module attribute {ast.unparse(node)}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id.startswith("__") and node.id.endswith("__") and node.id not in ("__name__", "__doc__"):
            self._reject("dunder", node, f"uses {node.id}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name):
            name = node.func.id
            if name in BANNED_CALLS:
                self._reject("builtin", node, f"calls {name}()")
            elif name in ("getattr", "setattr", "delattr", "hasattr") and node.args:
                if self._root(node.args[0]) in self.modules:
                    self._reject("module-reflection", node, f"calls {name}() on a module")
        self.generic_visit(node)


def check(src: str) -> list[Rejection]:
    """All rule violations in ``src`` (empty when it passes). Raises SyntaxError for unparsable code."""
    gate = _Gate()
    gate.visit(ast.parse(src))
    return sorted(gate.found, key=lambda r: r.line)
