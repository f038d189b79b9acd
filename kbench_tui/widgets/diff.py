"""A unified diff of reference → candidate as syntax-highlighted ``Content`` (difflib, no widget)."""

from __future__ import annotations

import difflib

from textual.content import Content
from textual.highlight import highlight

DEL_LINE, DEL_CHARS = "on $error 15%", "on $error 45%"
ADD_LINE, ADD_CHARS = "on $success 15%", "on $success 45%"


#: Above this many characters a side of the diff is not highlighted (see source_view.HIGHLIGHT_MAX_CHARS).
HIGHLIGHT_MAX_CHARS = 32_000


def _lines(src: str) -> list[Content]:
    lines = src.splitlines()
    if len(src) > HIGHLIGHT_MAX_CHARS:
        return [Content(line) for line in lines]
    hl = highlight("\n".join(lines), language="python").split("\n") if lines else []
    return (list(hl) + [Content("")] * len(lines))[: len(lines)]


def _row(old: int | None, new: int | None, sign: str, line: Content, line_style: str = "") -> Content:
    gutter = Content.assemble((f"{old if old is not None else '':>4} {new if new is not None else '':>4} ", "$text-muted"),
                              (f"{sign} ", "bold"))
    row = Content.assemble(gutter, line)
    return row.stylize(line_style, 0, len(row)) if line_style else row


def diff_content(ref: str, cand: str, context: int = 3) -> Content:
    """Unified diff with +/- marks (readable without colour), changed characters highlighted."""
    a, b = ref.splitlines(), cand.splitlines()
    ha, hb = _lines(ref), _lines(cand)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    rows: list[Content] = []
    groups = list(sm.get_grouped_opcodes(context))
    if not groups:
        return Content.assemble(("  (no changes: the candidate is the reference)", "$text-muted"))
    for gi, group in enumerate(groups):
        if gi:
            rows.append(Content.assemble(("     ⋯", "$text-muted")))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [_row(i1 + k + 1, j1 + k + 1, " ", ha[i1 + k]) for k in range(i2 - i1)]
                continue
            old = [(i, ha[i]) for i in range(i1, i2)]
            new = [(j, hb[j]) for j in range(j1, j2)]
            if tag == "replace":  # mark changed characters on paired lines
                for k in range(min(len(old), len(new))):
                    (i, lo), (j, ln) = old[k], new[k]
                    cm = difflib.SequenceMatcher(None, a[i], b[j], autojunk=False)
                    for t, x1, x2, y1, y2 in cm.get_opcodes():
                        if t != "equal":
                            if x2 > x1:
                                lo = lo.stylize(DEL_CHARS, x1, x2)
                            if y2 > y1:
                                ln = ln.stylize(ADD_CHARS, y1, y2)
                    old[k], new[k] = (i, lo), (j, ln)
            rows += [_row(i + 1, None, "-", line, DEL_LINE) for i, line in old]
            rows += [_row(None, j + 1, "+", line, ADD_LINE) for j, line in new]
    return Content("\n").join(rows)
