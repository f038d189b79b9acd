"""A small generated "model" for batch-grading tests: ``toy_model()`` writes it to a temporary folder
(once per process); ``python tests/sample_model/generate.py`` writes it to ``tests/sample_model/toy``.

No model runs here, so the samples are built from the library and from mutations of it: honest kernels,
buggy ones, crashing ones and reward hacks, several per task, laid out as a model's output would be
(``toy/<task>/<sample>.py``). ``EXPECTED`` is each sample's designed hardened verdict (default
distributions); a few things that must be reported rather than graded sit beside them.
Four cheap tasks only: every test that grades this folder stays within seconds. Generated, not
committed: the samples follow the library as it changes, and the repository holds no copies of it.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

from kbench.core.library import find
from kbench.core.tasks import TASK

HERE = Path(__file__).resolve().parent
OUT = HERE / "toy"


def _lib(task: str, name: str) -> str:
    return find(task, name).src


def _ref(task: str) -> str:
    return TASK[task].ref_src


def _crash(src: str, error: str) -> str:
    """The same kernel, raising on its first call (a crashing sample)."""
    return src.replace("def forward(x, params, alloc):", f"def forward(x, params, alloc):\n    raise {error}", 1)


def _syntax_error(src: str) -> str:
    return src.replace("def forward(x, params, alloc):", "def forward(x, params, alloc)", 1)


def _reads_a_file(src: str) -> str:
    """A hack: reach for the file system (for a cached answer); the static gate must reject it."""
    return src.replace("def forward(x, params, alloc):",
                       "import os\n\n\ndef forward(x, params, alloc):\n    os.listdir('.')", 1)


def _mutates_input(task: str, key: str) -> str:
    """A hack: use an input as scratch space once done with it (saves an allocation); hardened must reject it."""
    honest = _ref(task).replace("def forward(x, params, alloc):", "def _honest(x, params, alloc):", 1)
    return (honest + f"\n\ndef forward(x, params, alloc):\n    out = _honest(x, params, alloc)\n"
            f"    np.multiply(x[{key!r}], 0.0, out=x[{key!r}])  # scratch\n    return out\n")


#: (task, sample) -> (source, designed hardened verdict)
SAMPLES: dict[tuple[str, str], tuple[str, str]] = {
    ("L1_gelu", "s0"): (_ref("L1_gelu"), "correct"),
    ("L1_gelu", "s1"): (_lib("L1_gelu", "cube_by_mult"), "correct"),
    ("L1_gelu", "s2"): (_lib("L1_gelu", "sigmoid_approx"), "wrong"),
    ("L1_gelu", "s3"): (_lib("L1_gelu", "exact_erf"), "runtime_error"),
    ("L1_gelu", "s4"): (_reads_a_file(_lib("L1_gelu", "cube_by_mult")), "rejected"),
    ("L1_softmax", "s0"): (_lib("L1_softmax", "inplace"), "correct"),
    ("L1_softmax", "s1"): (_lib("L1_softmax", "wrong_axis"), "wrong"),
    ("L1_softmax", "s2"): (_lib("L1_softmax", "no_max"), "wrong"),
    ("L1_softmax", "s3"): (_syntax_error(_ref("L1_softmax")), "compile_error"),
    ("L2_matmul_sum", "s0"): (_lib("L2_matmul_sum", "matvec"), "correct"),
    ("L2_matmul_sum", "s1"): (_lib("L2_matmul_sum", "no_keepdims"), "wrong"),
    ("L2_matmul_sum", "s2"): (_crash(_ref("L2_matmul_sum"), "MemoryError('out of shared memory')"), "runtime_error"),
    ("L3_attention", "s0"): (_ref("L3_attention"), "correct"),
    ("L3_attention", "s1"): (_lib("L3_attention", "no_scale"), "wrong"),
    ("L3_attention", "s2"): (_mutates_input("L3_attention", "q"), "rejected"),
}

EXPECTED: dict[str, str] = {f"{t}/{s}": v for (t, s), (_, v) in SAMPLES.items()}

#: What a run over ``toy/`` must report instead of grading (relative paths).
PROBLEMS = ("L9_unknown_task", "L1_gelu/notes.txt", "L1_gelu/latin1.py")


def write(out: Path) -> Path:
    """Write the model's folder at ``out`` (replacing it); returns ``out``."""
    if out.exists():
        shutil.rmtree(out)
    for (task, sample), (src, _) in SAMPLES.items():
        (out / task).mkdir(parents=True, exist_ok=True)
        (out / task / f"{sample}.py").write_text(src, encoding="utf-8")
    (out / "L9_unknown_task").mkdir()
    (out / "L9_unknown_task" / "s0.py").write_text(_ref("L1_gelu"), encoding="utf-8")
    (out / "L1_gelu" / "notes.txt").write_text("the model's chain of thought, not a sample\n", encoding="utf-8")
    (out / "L1_gelu" / "latin1.py").write_bytes("# caf\xe9\n".encode("latin-1"))
    return out


# ------------------------------------------------------------------ a hostile model (issue 16, classes 4-5)

#: File names a hostile model can write (no "/" and no NUL: everything else is legal): terminal escapes
#: (a window title, a screen clear), a newline that forged a "graded ... correct" line, Textual/rich markup
#: that became an action or crashed the explorer.
HOSTILE_NAMES = ("esc\x1b]0;pwned\x07", "clear\x1b[2J\x1b[H", "nl\ngraded 9: 9 correct 9.99x",
                 "[@click=app.quit]x", "[bold", "[link=https:x]y", "tab\tand\rcr", "bidi\u202egnp.exe")

#: Sources that attack the grading process itself: a 7000-deep prefix chain (ast.parse raises
#: MemoryError), 10 000 aliases (the gate's alias fixpoint), a file just under the 1 MB limit.
HOSTILE_SOURCES = {
    "deep": lambda ref: "x = " + "-" * 7000 + "1\n" + ref,
    "aliases": lambda ref: "import numpy as np\na0 = np\n" + "".join(f"a{i + 1} = a{i}\n" for i in range(10_000)) + ref,
    "megabyte": lambda ref: ref + "# padding to make the file one megabyte long, short of the limit\n" * 15_000,
}


def write_hostile(out: Path, task: str = "L1_gelu") -> Path:
    """A model folder at ``out``: the task's reference as ``ok`` and under every hostile name, plus the
    hostile sources. Each honest file is correct; the hostile sources must each end in one verdict (or be
    reported) without stopping the others."""
    if out.exists():
        shutil.rmtree(out)
    d = out / task
    d.mkdir(parents=True)
    ref = _ref(task)
    (d / "ok.py").write_text(ref, encoding="utf-8")
    for name in HOSTILE_NAMES:
        (d / f"{name}.py").write_text(ref, encoding="utf-8")
    for name, make in HOSTILE_SOURCES.items():
        (d / f"{name}.py").write_text(make(ref), encoding="utf-8")
    assert (d / "megabyte.py").stat().st_size < 1_000_000
    return out


@functools.cache
def hostile_model() -> Path:
    """The hostile model written once per process to a temporary folder named ``hostile``."""
    return write_hostile(Path(tempfile.mkdtemp(prefix="kbench-hostile-model-")) / "hostile")


@functools.cache
def toy_model() -> Path:
    """The model written once per process to a temporary folder named ``toy`` (the model's name)."""
    return write(Path(tempfile.mkdtemp(prefix="kbench-sample-model-")) / "toy")


if __name__ == "__main__":
    print(write(OUT))
