"""``kbench prompt TASK``: the prompt a model receives, so any model anywhere can write samples for kbench.

Everything in it is read from the engine, not restated: the task's description, shapes and reference
source, its parameters (names, shapes, kinds), the candidate contract, and the rules hardened mode
enforces (the static gate's allowed imports and banned calls, the tolerance, the distributions, the
limits), so the prompt cannot drift from what the grader does. ``one-shot`` adds a worked example from
another task (its reference and a faster library kernel); ``contract-only`` leaves it out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import numpy as np

EXIT_USAGE = 2
STYLES = ("one-shot", "contract-only")
#: The worked example of the one-shot style: a task and a faster, correct library kernel for it.
EXAMPLES = (("L1_gelu", "cube_by_mult"), ("L2_matmul_sum", "matvec"))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prompt", help="the prompt a model receives for a task (to generate samples)")
    p.add_argument("task", help="task name (see kbench list)")
    p.add_argument("--style", choices=STYLES, default="one-shot")
    p.add_argument("--json", action="store_true", help="print one JSON object (the prompt and its parts)")
    p.set_defaults(run=run)


def _shapes(d: dict[str, tuple[int, ...]]) -> str:
    return ", ".join(f"{k} {tuple(v)}" for k, v in d.items()) or "none"


def params_of(task: Any) -> list[dict[str, Any]]:
    """Name, kind and shape of each default parameter (drawn once; only the structure is reported)."""
    out = []
    for k, v in task.make_params(np.random.default_rng(0)).items():
        if isinstance(v, np.ndarray):
            out.append({"name": k, "kind": f"{v.dtype} array", "shape": list(v.shape)})
        else:
            out.append({"name": k, "kind": type(v).__name__, "shape": None})
    return out


def allowed_imports() -> list[str]:
    """The modules the static gate lets a candidate import: its own list (``static_gate.ALLOWED_MODULES``), so the
    prompt and the gate cannot disagree."""
    from kbench.grading import static_gate

    return sorted(static_gate.ALLOWED_MODULES, key=lambda n: (n != "numpy", n != "math", n))


def refused_helper_names() -> list[str]:
    """The names of the allowed helper modules the gate refuses (``functools.wraps``, ...), from the gate's table."""
    from kbench.grading import static_gate

    return [f"{m}.{n}" for m, names in static_gate.HELPER_MODULES.items() for n in sorted(names)]


def banned_builtins() -> frozenset[str]:
    from kbench.grading import static_gate

    return frozenset(static_gate.BANNED_BUILTINS)


def rules(task: Any = None) -> list[str]:
    """What hardened mode enforces, read from the mode (with the task's own tolerance and distributions, when
    its file declares them) and the static gate."""
    from kbench.core.modes import HARDENED
    from kbench.core.tasks import mode_for

    m = HARDENED if task is None else mode_for(task, HARDENED)
    tp = m.timing
    out = [
        f"Only these imports are allowed: {', '.join(allowed_imports())}; of them not "
        f"{', '.join(refused_helper_names())}, nor numpy's file, test and introspection helpers (np.load, np.info, "
        "...). A standard-library import used only inside an `if __name__ == \"__main__\":` block (a benchmark "
        "block's `import time`) is fine: that block never runs.",
        f"These builtins may not be used at all: {', '.join(sorted(banned_builtins()))} (type is fine called with "
        "one argument or in an annotation); neither may private attributes (except your own classes' own, "
        "through self, cls, the class name or an instance you create), dunder attributes, numpy's file and OS "
        "hatches, modules used as values, positional class patterns on classes whose __match_args__ the source "
        "does not show, or assignments to a module's attributes (each rejection names its rule and line).",
        f"Correctness: one trial per input distribution ({', '.join(m.dists)}), parameters cycling through "
        f"{', '.join(m.param_sets)} sets; every output must be a numpy.ndarray of the reference's exact shape "
        f"and dtype, finite where the reference is, and within allclose(atol={m.atol:g}, rtol={m.rtol:g}) of it.",
        "Do not modify the inputs or the params, do not return memory shared with an input, and do not leave "
        "threads running; buffers from alloc() start filled with NaN.",
    ]
    if tp is not None:
        out.append(f"Timing: reference and candidate in pairs on fresh inputs, random order, median of at least "
                   f"{tp.min_runs} pairs; timed outputs are checked too, and a time below this machine's "
                   "roofline floor is rejected as implausible.")
    out.append(f"Limits: {m.timeout_s:g} s wall clock for the whole evaluation, {m.memory_limit_mb} MiB of memory, "
               "one BLAS thread; the code runs in a sandbox: no processes, sockets or file writes outside its own directory.")
    return out


CONTRACT = (
    "Write one Python file defining forward(x, params, alloc), and optionally init(params):\n"
    "- x: dict of float32 input arrays; params: dict of float32 arrays and Python floats.\n"
    "- alloc(shape, dtype=np.float32) returns an output buffer whose contents are unspecified.\n"
    "- forward returns one float32 numpy array of the reference's exact shape.\n"
    "- init(params) -> params runs once before correctness and timing and is not timed (weight preprocessing).\n"
    "- np and math are available without importing them; `import numpy as np` and `import math` work too, as do\n"
    "  the helper modules listed in the rules below (typing, functools, dataclasses, ...).\n"
    "- Start the file with a module docstring whose first line states what you tried."
)


def build(task_name: str, style: str) -> dict[str, Any]:
    from kbench.core.library import find
    from kbench.core.tasks import TASK

    t = TASK[task_name]
    example = None
    if style == "one-shot":
        ex_task, ex_name = next((a, b) for a, b in EXAMPLES if a != task_name)
        example = {"task": ex_task, "description": TASK[ex_task].description, "reference": TASK[ex_task].ref_src,
                   "solution": find(ex_task, ex_name).src}
    params = params_of(t)
    param_text = ", ".join(f"{p['name']} ({p['kind']}{', shape ' + str(tuple(p['shape'])) if p['shape'] else ''})"
                           for p in params) or "none"
    parts = [
        "You are writing a fast numpy kernel. It is graded by kbench: first for correctness against the "
        "reference below, then for speed against it (speedup = reference time / your time).",
        f"## Task {t.name} (level {t.level})\n{t.description}\nInputs x: {_shapes(t.inputs)}\n"
        f"Params: {param_text}\nOutput shape: {tuple(t.out_shape)}",
        f"## Reference (exactly what runs as the reference)\n```python\n{t.ref_src.strip()}\n```",
        f"## Contract\n{CONTRACT}",
        "## Rules the grader enforces\n" + "\n".join(f"- {r}" for r in rules(t)),
    ]
    if example is not None:
        parts.append(f"## Example (another task)\nTask {example['task']}: {example['description']}\nReference:\n"
                     f"```python\n{example['reference'].strip()}\n```\nA correct, faster kernel:\n"
                     f"```python\n{example['solution'].rstrip()}\n```")
    parts.append(f"## Your answer\nReply with the complete Python file for {t.name} in one ```python block, "
                 "and nothing else.")
    return {"task": t.name, "level": t.level, "style": style, "prompt": "\n\n".join(parts),
            "description": t.description, "reference": t.ref_src, "inputs": {k: list(v) for k, v in t.inputs.items()},
            "params": params, "output_shape": list(t.out_shape), "contract": CONTRACT, "rules": rules(t),
            "example": example}


def run(args: argparse.Namespace) -> int:
    from kbench.core.tasks import TASK

    if args.task not in TASK:
        print(f"kbench: error: unknown task {args.task!r} (known: {', '.join(TASK)})", file=sys.stderr)
        return EXIT_USAGE
    p = build(args.task, args.style)
    try:
        print(json.dumps(p) if args.json else p["prompt"], flush=True)
    except BrokenPipeError:  # `kbench prompt TASK | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
