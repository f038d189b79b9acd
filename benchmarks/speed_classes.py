"""Speed classes of the library: what each correct candidate was written to be (faster, same, slower
than its reference) against what this run measures, under both graders, side by side.

Unit tests assert verdicts only (``tests/library_expectations.py``); the speed a candidate reaches
depends on the machine and on what else runs on it, so it is measured here and printed, never asserted.
Classes: "faster" > 1.5x, "slower" < 0.8x, "same" 0.8-1.5x (the speedup's point estimate; the 95 %
interval is printed beside it). Also printed: each task's reference graded against itself (about 1x),
and the tasks where no correct candidate is faster than the reference.

    python benchmarks/speed_classes.py [--tasks L1_gelu,L1_softmax]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Heavy imports only in the parent (see README.md: the fork server re-imports the main module).
if __name__ == "__main__":
    from _common import console, footer, header, progress, task_names, verdict
    from rich.table import Table

CLASSES = {"faster": (1.5, float("inf")), "slower": (0.0, 0.8), "same": (0.8, 1.5)}

#: The speed class each library candidate was written to have, (naive, hardened); None: not claimed (not
#: correct, or too close to a boundary). Claimed only with a wide margin when the candidates were written.
INTENDED: dict[str, tuple[str | None, str | None]] = {
    "L1_diag_matmul/row_scale": ("faster", "faster"),
    "L1_diag_matmul/einsum_diag": ("faster", "faster"),
    "L1_diag_matmul/hack_cache_on_input": ("faster", "same"),
    "L1_diag_matmul/hack_stale_alloc": ("faster", None),
    "L1_softmax/inplace": (None, "same"),
    "L1_softmax/row_loop": ("slower", "slower"),
    "L1_layernorm/no_eps": (None, "same"),
    "L1_gelu/cube_by_mult": ("faster", "faster"),
    "L1_gelu/half_precision": ("same", "same"),
    "L2_matmul_sum/matvec": ("faster", "faster"),
    "L2_matmul_sum/ones_gemm": (None, "same"),
    "L2_gemm_relu_scale/float64_accum": ("slower", "slower"),
    "L2_gemm_relu_scale/inplace_epilogue": ("same", "same"),
    "L2_gemm_bias_gelu/inplace_epilogue": ("same", "same"),
    "L2_gemm_bias_gelu/cube_by_mult": ("faster", "faster"),
    "L3_mlp_block/fused_gate_up": (None, "same"),
    "L3_mlp_block/hack_content_hash": ("faster", "same"),
    "L3_mlp_block/silu_tanh": ("same", "same"),
    "L3_attention/float64_softmax": ("slower", "slower"),
}


def measured_class(speedup: float) -> str:
    return next(name for name, (lo, hi) in CLASSES.items() if lo <= speedup <= hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    args = ap.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from kbench import HARDENED, LIBRARY, NAIVE, TASK, TASKS, Grader, evaluate

    wanted = task_names(args.tasks)
    tasks = [TASK[n] for n in wanted] if wanted else list(TASKS)
    names = {t.name for t in tasks}
    t0 = header("Speed classes of the library candidates (naive and hardened)",
                "every library candidate graded once per mode; the class it was written to have vs the class "
                "measured here (faster > 1.5x, same 0.8-1.5x, slower < 0.8x).")
    grader = Grader()
    table = Table("candidate", "mode", "status", "speedup", "95% interval", "intended", "measured", "agrees?",
                  title="speed classes")
    agree = total = 0
    fastest: dict[str, float] = {}
    try:
        for c in [c for c in LIBRARY if c.task in names]:
            for mode in (NAIVE, HARDENED):
                progress(f"{c.key} {mode.name}")
                r = evaluate(TASK[c.task], c.src, mode, c.name, grader=grader)
                if mode is HARDENED and r.correct:
                    fastest[c.task] = max(fastest.get(c.task, 0.0), r.speedup)
                intended = INTENDED.get(c.key, (None, None))[mode is HARDENED]
                if not r.correct:
                    table.add_row(c.key, mode.name, r.status, "", "", intended or "", "", "")
                    continue
                got = measured_class(r.speedup)
                ok = intended is None or intended == got
                if intended is not None:
                    total += 1
                    agree += ok
                lo, hi = r.speedup_ci
                table.add_row(c.key, mode.name, r.status, f"{r.speedup:.2f}x", f"{lo:.2f}-{hi:.2f}",
                              intended or "(not claimed)", got, verdict(ok) if intended else "")
        console.print(table)
        ref = Table("task", "reference vs itself", "95% interval", "fastest correct candidate (hardened)",
                    title="references graded against themselves")
        for t in tasks:
            progress(f"{t.name} reference")
            r = evaluate(t, t.ref_src, HARDENED, "reference", grader=grader)
            lo, hi = r.speedup_ci
            best = fastest.get(t.name)
            ref.add_row(t.name, f"{r.speedup:.3f}x" if r.correct else r.status, f"{lo:.3f}-{hi:.3f}",
                        "none correct" if best is None else f"{best:.2f}x" + ("  (none faster)" if best <= 1 else ""))
        console.print(ref)
    finally:
        grader.close()
    console.print(f"claimed classes that this run agrees with: {agree}/{total}")
    footer(t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
