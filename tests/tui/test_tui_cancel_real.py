"""Cancel kills: on the real engine, Esc ends a running infinite loop at once, and it is not stored."""

from __future__ import annotations

import asyncio
import threading
import time

from tui_helpers import SIZE, idle, log_text, make_app

from kbench.core.library import Candidate
from kbench.grading.pipeline import Cancelled, evaluate
from kbench.store import Store

LOOP = '"""Spins forever."""\n\ndef forward(x, params, alloc):\n    while True:\n        pass\n'


def test_cancel_kills_a_worker_blocked_in_an_infinite_loop() -> None:
    cancel = threading.Event()
    started = threading.Event()

    def on_event(ev) -> None:  # type: ignore[no-untyped-def]
        if ev.step == "init":
            started.set()

    threading.Timer(0.0, lambda: (started.wait(30), time.sleep(0.3), cancel.set())).start()
    t0 = time.perf_counter()
    try:
        evaluate("L1_gelu", LOOP, "hardened", "spin", on_event=on_event, cancel=cancel)
    except Cancelled:
        pass
    else:
        raise AssertionError("an infinite loop cancelled mid-trial must end in Cancelled")
    assert time.perf_counter() - t0 < 15  # the time-out is 30 s: the cancel, not the clock, ended it


async def test_escape_cancels_a_running_infinite_loop_and_nothing_is_stored(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spin = Candidate("L1_gelu", "spin", "Spins forever.", LOOP, None, "user")
    store = Store(tmp_path / "db")
    app = make_app(evaluate=None, store=store, candidates=[spin])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")
        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while "trial 1" not in log_text(app) and "init" not in log_text(app):
            assert loop.time() < end
            await asyncio.sleep(0.05)
            await pilot.pause()
        await asyncio.sleep(0.3)
        t0 = loop.time()
        await pilot.press("escape")
        await idle(pilot, timeout=10)
        assert loop.time() - t0 < 5
        assert "cancelled" in log_text(app)
        assert app.model.verdict(spin) is None
    assert Store(tmp_path / "db").all() == []
