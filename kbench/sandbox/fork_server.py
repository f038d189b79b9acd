"""What the fork server prepares once, for every worker it forks: imported only there, last of
``server.PRELOAD``.

- The filesystem view: running as root, the fork server enters a mount namespace of its own
and stages the view there (``fsview.prepare``), on the directory the grading process named in
``KBENCH_VIEW_DIR``; each warden then copies that namespace and pivots into the view.
- The garbage collector's view of what is already loaded: ``gc.freeze()`` moves every object the fork
  server holds (numpy, kbench, the preloaded modules) out of the collector's reach. A collection in a forked
  warden or worker would otherwise visit them all and write to their headers, copying every page that holds
  one (~3 ms of each worker's start went to the first collection it happened to trigger).

Imported anywhere else (the variable is set only in the fork server's environment), it does nothing.
"""

from __future__ import annotations

import gc
import os

from kbench.sandbox import confine

VIEW_DIR_VAR = "KBENCH_VIEW_DIR"

_base = os.environ.pop(VIEW_DIR_VAR, None)  # popped: no warden inherits it
if _base:
    confine.prepare_view(_base)
    gc.collect()
    gc.freeze()
