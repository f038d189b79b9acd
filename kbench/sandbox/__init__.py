"""Where untrusted code runs: worker processes forked from a fork server, confined by the operating
system, spoken to through typed messages. Imports only ``kbench.core``."""
