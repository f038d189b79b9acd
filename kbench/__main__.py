"""``python -m kbench``: the ``kbench`` command (the explorer, ``eval``, ``grade``...), as the script runs it.

The engine never imports a face (tests/test_headless.py imports every kbench module, this one included,
and checks that rich, textual, kbench_cli and kbench_tui stay out), so the command line is looked up by
name only when this file runs as the main module, never when it is imported.
"""

if __name__ == "__main__":  # the sandbox's fork server and spawned pools re-import the main module
    import importlib
    import sys

    sys.exit(importlib.import_module("kbench_cli.cli").main())
