"""How speed is measured: statistics on samples (``stats``) and this machine's roofline. Imports
only ``kbench.core`` and ``kbench.sandbox``."""
