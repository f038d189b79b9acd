"""P9 wild output address: the reply names an output in kernel space, then one that runs off its mapping.

Issue 16: "the output the grader reads from the address the worker names (process_vm_readv)". The kernel
rewrites its executor's ``Called`` replies (the shape and dtype the grader expects, so the grader does read):
the first names ``0xffff800000000000`` (kernel memory), later ones an address 4 KiB before the end of its
last mapping, so the read runs off it. What must hold: the grader's read fails cleanly (a runtime error
naming the unreadable output), never a crash, a hang or bytes from anywhere but the worker.
"""

_calls = [0]


def _last_mapping_end():
    with open("/proc/self/maps") as f:
        rows = [ln.split()[0].split("-") for ln in f if "[vsyscall]" not in ln]
    return max(int(hi, 16) for _, hi in rows)


def _patch():
    ex = _executor()
    proto = _sys.modules.get("kbench.sandbox.protocol")
    if ex is None or proto is None or getattr(ex, "_p9", False):
        return
    real = ex._call  # both ways a call is answered: plain and prepared

    def call(req, prepared):
        r = real(req, prepared)
        if isinstance(r, bytes):  # a prepared call's fixed-size reply: the same fields, packed
            _, _, kernel_ns, used, recv_ns, sent_ns = proto.FAST_CALLED.unpack(r)
            r = proto.Called("numpy.ndarray", 0, prepared.out_dtype, prepared.out_shape, kernel_ns, used, recv_ns,
                             sent_ns)
        if isinstance(r, proto.Called) and r.out_type == "numpy.ndarray":
            _calls[0] += 1
            addr = 0xFFFF800000000000 if _calls[0] == 1 else _last_mapping_end() - 4096
            r = proto.Called(r.out_type, addr, r.out_dtype, r.out_shape, r.kernel_ns, r.alloc_used)
        return r

    ex._call = call
    ex._p9 = True


def forward(x, params, alloc):
    _patch()
    return _gelu(x["x"])
