"""``python -m kbench_tui [DIR ...]``: open the explorer (``kbench`` with no arguments does the same)."""

if __name__ == "__main__":  # the engine's fork server re-imports the main module: keep this guarded
    import sys
    from pathlib import Path

    from kbench_tui.app import run

    run([Path(a) for a in sys.argv[1:]])
