"""Explorer: a derived defence switched off or on → the screen redrawn with the new verdicts. Target: p95 < 100 ms.

The explorer (``KbenchApp``, no results database) at 200x50, with real hardened results (the explorer's own
mode: all seven distributions, wrong candidates timed too) for ``--candidates`` library candidates, graded by
the real engine before the app starts. Then every derived defence (``kbench.core.defences.DERIVED``) is
switched off and on again, ``--rounds`` times, by the handler the ``g`` screen's space key calls
(``MainScreen.toggle_defence``: the views for every candidate, the badges, fast_p, the verdict lines, the
status bar). Latency: from the call to the first frame the compositor hands to the display afterwards
(headless: nothing reaches a terminal). No derived switch may queue a run; the script counts any that does.

    python benchmarks/defence_toggle_latency.py [--candidates 8] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time

if __name__ == "__main__":  # rich only in the parent (sandbox workers re-import the main module)
    from _common import console, footer, header, pct, verdict
    from rich.table import Table

TARGET_S = 0.100
#: Cheap library candidates on several tasks, hacks and honest ones (L1_diag_matmul's reference costs ~0.2 s
#: a call, so its candidates come last).
PICK = ("L1_gelu/cube_by_mult", "L1_softmax/no_max", "L1_layernorm/one_pass_var", "L2_matmul_sum/matvec",
        "L2_gemm_relu_scale/fold_scale", "L3_mlp_block/hack_content_hash", "L3_attention/flash_tiled",
        "L1_gelu/half_precision", "L2_gemm_bias_gelu/no_cubic", "L1_diag_matmul/hack_stale_alloc")


async def measure(n: int, rounds: int) -> dict[str, object]:
    from kbench.core import defences as catalogue
    from kbench.grading.pipeline import evaluate
    from kbench_tui.app import KbenchApp
    from kbench_tui.model import EXPLORER_HARDENED

    app = KbenchApp(store=False)
    cands = [c for key in PICK[:n] for c in app.model.candidates if c.key == key and c.origin == "library"]
    t0 = time.perf_counter()
    for c in cands:
        app.model.record(c.digest, c.task, evaluate(c.task, c.src, EXPLORER_HARDENED, c.name))
    graded = time.perf_counter() - t0
    frames: list[float] = []
    out: dict[str, object] = {"graded": len(cands), "grade_s": graded, "queued": 0, "by": {}}
    async with app.run_test(size=(200, 50)) as pilot:
        screen = app.main_screen
        orig = app._display

        def display(scr, renderable):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            orig(scr, renderable)
            if renderable is not None:
                frames.append(t)

        app._display = display  # type: ignore[method-assign]
        screen.refresh_views()
        await pilot.pause()
        await asyncio.sleep(0.3)
        by: dict[str, list[float]] = {}
        for _ in range(rounds):
            for name in sorted(catalogue.DERIVED):
                for _flip in range(2):  # off, then on again
                    n_frames = len(frames)
                    t0 = time.perf_counter()
                    screen.toggle_defence(name)
                    out["queued"] = int(out["queued"]) + int(screen.scheduler.busy)  # type: ignore[arg-type]
                    while len(frames) == n_frames and time.perf_counter() - t0 < 5:
                        await asyncio.sleep(0.001)
                    if len(frames) > n_frames:
                        by.setdefault(name, []).append(frames[n_frames] - t0)
                    await asyncio.sleep(0.05)
        # for comparison: the distribution switches (keys 1-7) through the same path, lognormal and offset
        for _ in range(rounds):
            for index in (3, 4):
                for _flip in range(2):
                    n_frames = len(frames)
                    t0 = time.perf_counter()
                    screen.action_toggle_dist(index)
                    while len(frames) == n_frames and time.perf_counter() - t0 < 5:
                        await asyncio.sleep(0.001)
                    if len(frames) > n_frames:
                        by.setdefault("(distribution 4/5, for comparison)", []).append(frames[n_frames] - t0)
                    await asyncio.sleep(0.05)
        out["by"] = by
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=8, help=f"library candidates graded first (at most {len(PICK)})")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="kbench-bench-defences-")
    os.environ["KBENCH_DATA_DIR"] = data
    os.environ["KBENCH_EXPORT_DIR"] = data
    t0 = header("Explorer: derived defence switch → redraw",
                f"headless KbenchApp 200x50; {args.candidates} candidates graded by the real engine, then every derived "
                f"defence switched off and on {args.rounds}×; target p95 < {TARGET_S * 1e3:.0f} ms.", monitor=False)
    from kbench_tui.app import prepare_engine

    prepare_engine()
    out = asyncio.run(measure(min(args.candidates, len(PICK)), args.rounds))
    by = out["by"]
    assert isinstance(by, dict)
    table = Table("defence", "n", "p50", "p95", "max", title="switch → first frame")
    every: list[float] = []
    for name, xs in by.items():
        every += xs if not name.startswith("(") else []
        table.add_row(name, str(len(xs)), f"{pct(xs, 50) * 1e3:.1f} ms", f"{pct(xs, 95) * 1e3:.1f} ms",
                      f"{max(xs) * 1e3:.1f} ms")
    p95 = pct(every, 95)
    table.add_row("every defence", str(len(every)), f"{pct(every, 50) * 1e3:.1f} ms", f"{p95 * 1e3:.1f} ms",
                  f"{max(every) * 1e3:.1f} ms" if every else "—", style="bold")
    return footer(t0, table, f"target p95 < {TARGET_S * 1e3:.0f} ms: {verdict(p95 < TARGET_S)}; {out['graded']} "
                             f"candidates graded in {out['grade_s']:.1f} s before the app started; switches that "
                             f"queued a run: {out['queued']} (derived: should be 0)")


if __name__ == "__main__":
    raise SystemExit(main())
