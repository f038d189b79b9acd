"""C5 infinite loop: ``forward`` never returns (a hung kernel, or a stall to cut timed iterations short).

Exploit note C5 (pygpubench: sleeps to cut the number of timed iterations) and plain robustness: the
evaluation must end at its time-out with a verdict, and the grading process must not hang with it.
"""


def forward(x, params, alloc):
    n = 0
    while True:
        n += 1
