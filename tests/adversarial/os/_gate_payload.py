"""The payload of the gate evasions (G1-G4, G6-G11), appended by the test to each evasion once it holds ``os``.

It leaves a marker file in /tmp, written through ``dir_fd`` (S1), so every evasion also tests the OS layers
when the gate is off, and in naive mode, where there is no gate; then it computes the task's real GELU, so a
verdict of "correct" is honest and only the marker tells a contained run from an escape. ``_TAG`` is the
evasion's.
"""


def _mark(tag):
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
