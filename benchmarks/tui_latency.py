"""TUI key-to-screen latency while "evaluate all" runs (headless, Pilot-driven). Target: p95 < 50 ms.

The explorer (``kbench_tui.app.KbenchApp``, real engine, no results database, an empty temporary data
directory) runs headless at 200x50. After ``a`` starts evaluate-all, the script sends ``down``/``up``
key events (alternating, random 150-350 ms gaps in both phases) and, for each, timestamps every frame the compositor hands to
``App._display`` (headless, so nothing reaches a terminal; the frame's spans say which screen cells it
repaints). Two latencies per key, from sending the key:
  - "cursor" (the target): the first frame repainting the tree row the cursor moved to;
  - "source view": the first frame repainting the source pane after the screen finished redrawing the
    new selection (``show_selection``), i.e. the full visible response to the key.
20 idle samples come first, for comparison.

Why not time ``await pilot.press(); await pilot.pause()``: both wait for the process to look idle
(``wait_for_idle``: >= 20 ms sleeps, up to 1 s while an evaluation keeps the CPU busy), so they time
Pilot's idle detection, not the app. Those figures are printed too (``--pilot N``), for reference.

    python benchmarks/tui_latency.py [--samples 50] [--idle 20] [--pilot 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time

# Heavy imports only in the parent: sandbox workers start through multiprocessing's fork server, which
# re-imports the parent's main module (as __mp_main__) in every worker; importing rich there would add
# ~20 ms to every worker start and distort what is measured.
if __name__ == "__main__":
    from _common import console, footer, header, pct, verdict
    from rich.table import Table


TARGET_S = 0.050
# random pause between keys, the same in both phases: longer than one key's full response when idle
# (~60-110 ms), so a key does not wait for the previous key's redraw
GAP_S = (0.15, 0.35)


async def measure(samples: int, idle_samples: int, pilot_samples: int) -> dict[str, list[float] | int | str]:
    from textual import events
    from textual._compositor import ChopsUpdate

    from kbench_tui.app import KbenchApp

    app = KbenchApp(store=False)
    # every frame handed to the display: (time, [(y, x1, x2) spans] or None for a full-screen update)
    frames: list[tuple[float, list[tuple[int, int, int]] | None]] = []
    shown: list[tuple[float, float]] = []  # (start, end) of each redraw of the selection (source view)
    out: dict[str, list[float] | int | str] = {"idle_cursor": [], "idle_full": [], "busy_cursor": [],
                                               "busy_full": [], "pilot": [], "not_busy": 0, "timeouts": 0}

    async with app.run_test(size=(200, 50)) as pilot:
        screen = app.main_screen
        tree = screen.query_one("#tree")
        source = screen.query_one("#source")
        orig_display = app._display

        def display(scr, renderable):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            orig_display(scr, renderable)
            if renderable is not None:
                frames.append((t, list(renderable.spans) if isinstance(renderable, ChopsUpdate) else None))

        app._display = display  # type: ignore[method-assign]
        orig_show = screen.show_selection

        def show_selection() -> None:
            t = time.perf_counter()
            orig_show()
            shown.append((t, time.perf_counter()))

        screen.show_selection = show_selection  # type: ignore[method-assign]
        await pilot.pause()
        for _ in range(3):  # onto a candidate row (level, task, candidate)
            await pilot.press("down")
        await pilot.pause()
        await asyncio.sleep(0.3)

        def touches(spans, region, row=None) -> bool:  # type: ignore[no-untyped-def]
            if spans is None:
                return True
            return any(x1 < region.right and x2 > region.x and (y == row if row is not None else
                                                                region.y <= y < region.bottom)
                       for y, x1, x2 in spans)

        direction = ["down", "up"]

        async def one(k: int) -> tuple[float, float] | None:
            before = tree.cursor_line
            n_frames, n_shown = len(frames), len(shown)
            t0 = time.perf_counter()
            app._driver.send_message(events.Key(direction[k % 2], None))
            cursor_t = full_t = None
            while time.perf_counter() - t0 < 5.0:
                await asyncio.sleep(0.001)
                if tree.cursor_line == before:
                    continue
                row = tree.content_region.y + tree.cursor_line - int(tree.scroll_offset.y)
                new = frames[n_frames:]
                if cursor_t is None:
                    cursor_t = next((t for t, sp in new if touches(sp, tree.region, row)), None)
                if full_t is None and len(shown) > n_shown:
                    done = shown[n_shown][1]
                    full_t = next((t for t, sp in new if t >= done and touches(sp, source.region)), None)
                if cursor_t is not None and full_t is not None:
                    return cursor_t - t0, full_t - t0
            out["timeouts"] = int(out["timeouts"]) + 1
            return None

        for k in range(idle_samples):
            r = await one(k)
            if r:
                out["idle_cursor"].append(r[0])  # type: ignore[union-attr]
                out["idle_full"].append(r[1])  # type: ignore[union-attr]
            await asyncio.sleep(random.uniform(*GAP_S))

        await pilot.press("a")
        t_a = time.perf_counter()
        while not screen.scheduler.busy and time.perf_counter() - t_a < 5:
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.0)  # let the first evaluations get going
        for k in range(samples):
            busy = screen.scheduler.busy
            r = await one(k)
            if r:
                out["busy_cursor"].append(r[0])  # type: ignore[union-attr]
                out["busy_full"].append(r[1])  # type: ignore[union-attr]
            if not busy:
                out["not_busy"] = int(out["not_busy"]) + 1
            await asyncio.sleep(random.uniform(*GAP_S))
        for k in range(pilot_samples):
            t0 = time.perf_counter()
            await pilot.press(direction[k % 2])
            await pilot.pause()
            out["pilot"].append(time.perf_counter() - t0)  # type: ignore[union-attr]
        out["progress"] = f"{screen.scheduler.batch_done}/{screen.scheduler.batch_total} evaluations done"
        await pilot.press("escape")
        await pilot.pause()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--idle", type=int, default=20)
    ap.add_argument("--pilot", type=int, default=10, help="pilot.press + pause samples, for reference")
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="kbench-bench-tui-")
    os.environ["KBENCH_DATA_DIR"] = data  # no user candidates, no stored results
    os.environ["KBENCH_EXPORT_DIR"] = data
    os.environ.pop("NO_COLOR", None)
    try:
        import kbench_tui.app  # noqa: F401
    except ImportError as e:  # the explorer is written concurrently; say so instead of a traceback
        console.print(f"[red]kbench_tui.app is not importable ({e}); nothing measured[/]")
        return 1
    t0 = header("TUI key-to-screen latency during evaluate-all",
                f"headless KbenchApp 200x50, real engine; {args.samples} down/up keys while `a` runs "
                f"({args.idle} idle first); target p95 < {TARGET_S * 1e3:.0f} ms.", monitor=False)
    out = asyncio.run(measure(args.samples, args.idle, args.pilot))
    table = Table("phase", "response", "n", "p50", "p95", "max", "target", title="key-to-screen latency")
    for phase, key in (("idle", "idle"), ("evaluate-all running", "busy")):
        for label, suffix in (("tree cursor drawn at its new row", "cursor"), ("source view redrawn for the new selection", "full")):
            xs = out[f"{key}_{suffix}"]
            assert isinstance(xs, list)
            if not xs:
                table.add_row(phase, label, "0", "—", "—", "—", "")
                continue
            p95 = pct(xs, 95)
            tgt = verdict(p95 < TARGET_S) if key == "busy" and suffix == "cursor" else ""
            table.add_row(phase, label, str(len(xs)), f"{pct(xs, 50) * 1e3:.1f} ms", f"{p95 * 1e3:.1f} ms",
                          f"{max(xs) * 1e3:.1f} ms", f"p95 < {TARGET_S * 1e3:.0f} ms {tgt}" if tgt else "")
    pil = out["pilot"]
    if isinstance(pil, list) and pil:
        table.add_row("after the busy samples", "pilot.press + pilot.pause (Pilot idle waits included)", str(len(pil)),
                      f"{pct(pil, 50) * 1e3:.1f} ms", f"{pct(pil, 95) * 1e3:.1f} ms", f"{max(pil) * 1e3:.1f} ms", "")
    return footer(t0, table, f"evaluate-all progress when sampling ended: {out.get('progress')}; busy samples "
                             f"taken while the scheduler was idle: {out['not_busy']}; keys with no frame within 5 s: "
                             f"{out['timeouts']}")


if __name__ == "__main__":
    raise SystemExit(main())
