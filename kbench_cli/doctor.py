"""``kbench doctor``: start one sandbox worker and show which OS layers it applied, and what each blocks.

Exit code 0 when every layer holds, 1 when one is missing (the table says why), 2 when no worker starts.
"""

from __future__ import annotations

import os
import platform

from rich.console import Console
from rich.table import Table

from kbench.sandbox import confine
from kbench.sandbox.server import Worker, WorkerError
from kbench.timing import wakeups


def run_doctor() -> int:
    console = Console(highlight=False)
    try:
        with Worker("candidate") as w:
            hello = w.layers()
    except (WorkerError, OSError) as e:
        console.print(f"[bold red]kbench doctor: no sandbox worker could start: {e}[/]")
        return 2
    missing = dict(hello.missing)
    table = Table("layer", "state", "blocks", "note", title="sandbox layers (applied in every worker, both modes)")
    skipped = confine.not_needed()
    for layer in confine.LAYERS:
        applied = [a for a in hello.active if a == layer or (layer == "nonroot" and a == "nocaps")]
        if layer in skipped:
            table.add_row(layer, "[dim]not needed[/]", confine.BLOCKS[layer], skipped[layer])
        elif applied and applied[0] == layer:
            table.add_row(layer, "[green]active[/]", confine.BLOCKS[layer], "")
        elif applied:  # root kept, capabilities gone
            table.add_row(layer, "[yellow]partial: nocaps[/]", confine.BLOCKS["nocaps"], missing.get(layer, ""))
        else:
            table.add_row(layer, "[bold red]missing[/]", confine.BLOCKS[layer], missing.get(layer, "not applied"))
    console.print(table)
    console.print(f"kernel {platform.release()}, Landlock ABI {confine.landlock_abi()}, running as uid {os.getuid()}")
    # Not sandbox layers: what a timed call's round trip costs depends on them (kbench.timing.wakeups).
    console.print(f"timing: {wakeups.state()}; {wakeups.slice_state()}")
    if hello.missing:
        console.print("[yellow]A missing layer means what it blocks is stopped only by the other layers and "
                      "by the audit hook's Python-level checks (see the README's threat model).[/]")
        return 1
    console.print("[green]every layer holds[/]")
    return 0
