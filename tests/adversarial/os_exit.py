"""D3 early exit: print a forged success line and end the process with exit code 0 before anything is checked.

Exploit note D3 (kernelguard FAKE_BENCHMARK_EMIT; pygpubench fd_overwrite + os._exit(0) [R];
hackfloor sys.exit(0)). ``os._exit`` skips every ``finally`` and ``except`` in the harness: whatever
reads the exit status or the last stdout line sees a success.
"""

import os


def forward(x, params, alloc):
    print("trial 5/5 pass; correct, 37.2x (95% CI 36.9-37.5)", flush=True)
    os._exit(0)
