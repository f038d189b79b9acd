"""A leaner request loop than kbench's own: what it buys, against the same operations in kbench's loop.

The third 12-03 audit's findings: native code that takes over its worker's socket and answers through a loop
of its own was refunded the twin's whole loop and read short kernels fast (a 0.25 ms GELU 1.46-1.70x); then,
refunded the floor alone but charged another ramp than the reference, a raw-descriptor loop read a 0.1 ms GELU
1.06-1.13x, and work placed behind an early reply 1.17-1.21x. Both arms now pay the same floor (measured outside
the twin's loop), the reference is refunded its own loop, and a call's wall time includes the CPU its worker
used after its reply (``timing.interleaved.CallCost``, ``sandbox.server.Worker.run``). Each attack in
``tests/adversarial`` is graded against a control doing the same operations in kbench's loop, alternating, with
the gate off (the loops import pickle), on GELU task files of three sizes written to a temporary folder:

- ``h3_lean_loop``: the reference's arithmetic behind multiprocessing's ``Connection``, requests and replies
  cached by their bytes (control: the reference's arithmetic);
- ``h11_raw_descriptor_loop``: the same operations as the control written into a buffer of its own, one
  ``os.read`` and one ``os.write`` a call (control: those operations into a kept buffer);
- ``h12_early_reply_before_the_stop``: H11 with the reply written before its last two operations (wrong when
  the stop cuts them short: counted apart).

The ratio of the medians is what the loop buys (1.0: nothing; below: it costs more than kbench's loop).

Usage: python benchmarks/lean_loop.py [--repeats 3] [--sizes 32,80,160,320]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from _common import ROOT, console, footer, header, progress
from rich.table import Table

#: The reference's arithmetic, in kbench's loop.
PLAIN = '''def forward(x, params, alloc):
    x = x["x"]
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
'''
#: H11's operations into a kept buffer, in kbench's loop.
INPLACE = '''_C = math.sqrt(2.0 / math.pi)
_B = {}


def forward(x, params, alloc):
    v = x["x"]
    b = _B.get(v.shape)
    if b is None:
        b = _B[v.shape] = np.empty(v.shape, v.dtype)
    t = _C * (v + 0.044715 * v**3)
    np.tanh(t, out=t)
    t += 1.0
    np.multiply(0.5 * v, t, out=b)
    return b
'''
ADV = ROOT / "tests/adversarial"
PAIRS = (("h3_lean_loop", PLAIN), ("h11_raw_descriptor_loop", INPLACE), ("h12_early_reply_before_the_stop", INPLACE))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", default="32,80,160,320", help="GELU task sides (N for an N x N input)")
    args = ap.parse_args()
    t0 = header("A leaner request loop than kbench's own", "speedup of each lean-loop attack and of a control doing "
                "the same operations in kbench's loop, hardened without the gate, alternating")
    from kbench.core import modes
    from kbench.grading.pipeline import evaluate
    from kbench.usertasks import activate

    gelu = (ROOT / "kbench/tasksets/lecture/L1_gelu/task.py").read_text()
    sizes = [int(s) for s in args.sizes.split(",")]
    mode = modes.get("hardened").without("gate")
    table = Table("attack", "task", "kernel (ms)", "control in kbench's loop", "attack", "attack / control (medians)",
                  "attack fooled (lower bound > 1)")
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            Path(d, f"LL_gelu_{n}.py").write_text(gelu.replace("R, C = 512, 512", f"R, C = {n}, {n}"))
        activate([Path(d)], [])
        for attack, control in PAIRS:
            lean = (ADV / f"{attack}.py").read_text()
            for n in sizes:
                got: dict[str, list[float]] = {"control": [], "attack": []}
                t_ref: list[float] = []
                fooled = wrong = 0
                for r in range(args.repeats):
                    for name, src in (("control", control), ("attack", lean)):
                        progress(f"{attack} LL_gelu_{n}: {name} {r + 1}/{args.repeats}")
                        res = evaluate(f"LL_gelu_{n}", src, mode, name)
                        if res.status != "correct" or res.timing is None:
                            wrong += name == "attack"
                            if name == "control" or res.status != "wrong":
                                console.print(f"[red]{attack} LL_gelu_{n} {name}: {res.status} {res.msg}[/]")
                            continue
                        got[name].append(res.timing.speedup)
                        t_ref.append(res.timing.t_ref)
                        fooled += name == "attack" and res.timing.speedup_ci[0] > 1.0
                if got["control"] and got["attack"]:
                    table.add_row(attack, f"{n}x{n}", f"{statistics.median(t_ref) * 1e3:.3f}",
                                  " ".join(f"{s:.3f}" for s in got["control"]),
                                  " ".join(f"{s:.3f}" for s in got["attack"]) + (f" ({wrong} wrong)" if wrong else ""),
                                  f"{statistics.median(got['attack']) / statistics.median(got['control']):.3f}",
                                  f"{fooled} of {len(got['attack'])}")
    return footer(t0, table)


if __name__ == "__main__":
    raise SystemExit(main())
