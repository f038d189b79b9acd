"""T1 markup through the gate's own words: rich markup and an OSC 8 link in source text the gate quotes.

Issue 16, class 5 (candidate text reaching terminals), by a route the faces did not write: the static gate
quotes the candidate's source in its rejection (``reaches private name _y of '<expression>'``), from the
fresh worker, and that sentence is the verdict ``kbench eval`` prints. The expression is a string literal
of rich markup (``[link=...]``, ``[bold red]``) and a raw OSC 8 hyperlink; with the gate off the same text
comes back as the message of the exception the kernel raises. What must hold: ``kbench eval``, even on a
colour terminal, prints the markup as text and emits no escape sequence the candidate chose.
"""


class K:
    _y = 1


_TEXT = "[link=https://evil.example/]kbench: correct 9.99x[/link][bold red]X[/]\x1b]8;;https://evil.example/\x07ok"


def forward(x, params, alloc):
    try:
        return "[link=https://evil.example/]kbench: correct 9.99x[/link][bold red]X[/]\x1b]8;;https://e/\x07ok"._y
    except AttributeError:
        raise RuntimeError(_TEXT) from None
