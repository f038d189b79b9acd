"""G2 gate evasion, chain rooted at a list: ``[np][0].lib._utils_impl.os``.

Static gate evasion (issue 8, class 2). Attribute chains are only judged when their root is a Name bound to a module; a subscript of a list literal has no such root. Once ``os`` is in hand the payload
leaves a marker file in /tmp (through ``dir_fd``, S1), so the same file also tests the OS layers when the
gate is off, and in naive mode, where there is no gate.
"""

os = [np][0].lib._utils_impl.os

_TAG = "G2"

def _mark(tag):
    """The payload once past the gate: a marker file in /tmp (S1: written through dir_fd)."""
    try:
        d = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY)
        fd = os.open("kbench_adv_" + tag, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=d)
        os.write(fd, b"a candidate reached os past the static gate\n")
        os.close(fd)
        os.close(d)
    except OSError:
        pass


_C = math.sqrt(2.0 / math.pi)


def forward(x, params, alloc):
    _mark(_TAG)
    a = x["x"]
    return 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))

