"""The bottom layer: what a task, a distribution, a mode, a candidate and a result are, and the
arithmetic on them (comparison, metrics). Pure data and numpy; imports nothing else of kbench."""
