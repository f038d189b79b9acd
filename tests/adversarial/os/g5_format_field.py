"""G5 gate evasion, str.format fields: ``"{0.lib._utils_impl.os.environ}".format(np)`` walks attributes in a string.

Static gate evasion (issue 8, class 2). Attribute access inside a format field is no Attribute node, so
the gate never sees it; ``str.format`` follows the chain at run time. The result is a string, which is
enough to leak: the grading process's environment (inherited by the worker) comes back in the error
message. The test plants a canary variable in the grading process.
"""

_FIELD = "{0.lib._utils_impl.os.environ}"


def forward(x, params, alloc):
    env = _FIELD.format(np)
    i = env.find("KBENCH_ADV_CANARY")
    if i >= 0:
        raise RuntimeError("stolen: " + env[i:i + 80])
    return alloc(x["x"].shape)
