"""H11 raw-descriptor loop: the reference's arithmetic into a buffer of its own, behind one read and one write a call.

Third 12-03 audit, round two (the audit of the floor charge): H3's loop still used multiprocessing's
``Connection``; this one takes the worker's socket itself: one ``os.read`` per request, one ``os.write`` of a
reply encoded once, prepared calls answered from views kept by their frame, no executor, no pool. Refunded the
twin's floor and charged a ramp of its own while the reference was charged another, it read a 0.1 ms GELU
1.06-1.13x (the same operations in kbench's loop 0.81-0.96x). What must hold: both arms pay the same floor
(measured outside the twin's loop, between its raw read and write), the reference is refunded only its own
loop, so the loop removed buys nothing: about 1.0x, never fooled (``benchmarks/lean_loop.py``).
"""

import os, pickle, struct, sys

EARLY = False
_TAKEN = []
_C = math.sqrt(2.0 / math.pi)


def _gelu(a):
    return 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3)))


def _executor():
    f = sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("self")
        if s is not None and hasattr(s, "handlers") and hasattr(s, "conn"):
            return s, f.f_locals.get("req")
        f = f.f_back
    return None, None


def _frame(b):
    return struct.pack("!i", len(b)) + b


def _serve(ex, proto, first_reply):
    fd = ex.conn.fileno()
    os.write(fd, _frame(first_reply))
    fast_views, heads, keep = {}, {}, [None]
    buf = b""
    bufs = {}
    rd, wr, enc = os.read, os.write, proto.encode_fast_called
    while True:
        data = rd(fd, 1 << 16)
        if not data:
            return
        v = fast_views.get(data)
        if v is not None:  # the whole 9-byte frame of a prepared call
            b = bufs.get(data)
            if b is None:
                b = bufs[data] = np.empty(v.shape, v.dtype)
                heads[data] = _frame(enc(b.__array_interface__["data"][0], 0, 0, 0, 0))
            t = _C * (v + 0.044715 * v**3)
            if EARLY:
                wr(fd, heads[data])
            np.tanh(t, out=t)
            t += 1.0
            np.multiply(0.5 * v, t, out=b)
            if not EARLY:
                wr(fd, heads[data])
            continue
        buf += data
        while len(buf) >= 4:
            (n,) = struct.unpack("!i", buf[:4])
            if len(buf) < 4 + n:
                break
            raw, buf = buf[4:4 + n], buf[4 + n:]
            if raw[:1] == proto.FAST_TAG:
                v = fast_views.get(_frame(raw))
                if v is not None:
                    out = keep[0] = _gelu(v)
                    addr = out.__array_interface__["data"][0]
                    wr(fd, _frame(enc(addr, 0, 0, 0, 0)))
                    continue
                slot = ex.prepared.get(raw)
                if slot is not None and slot.call.fn == "cand":
                    v = fast_views[_frame(raw)] = ex._views(slot.call.x, False)["x"]
                    out = keep[0] = _gelu(v)
                    wr(fd, _frame(enc(out.__array_interface__["data"][0], 0, 0, 0, 0)))
                    continue
                if slot is None:
                    raise RuntimeError("lean2: unknown slot %r known %r" % (raw, list(fast_views)))
                reply = ex.answer(None, slot)
            else:
                req = pickle.loads(raw)
                if type(req) is proto.Exit:
                    return
                if type(req) is proto.Prepare and req.call.fn == "cand":
                    fast_views[proto.fast_call_frame(req.slot)] = ex._views(req.call.x, False)["x"]
                    wr(fd, _frame(proto.encode(proto.Prepared())))
                    continue
                if type(req) is proto.Prepare:
                    ex.answer(req)
                    wr(fd, _frame(proto.encode(proto.Prepared())))
                    continue
                if type(req) is proto.Call and req.fn == "cand":
                    out = keep[0] = _gelu(ex._views(req.x, False)["x"])
                    wr(fd, _frame(proto.encode(proto.Called("numpy.ndarray", out.ctypes.data, "<f4", tuple(out.shape), 0, 0))))
                    continue
                reply = ex.answer(req)
            wr(fd, _frame(reply if type(reply) is bytes else proto.encode(reply)))


def forward(x, params, alloc):
    out = _gelu(x["x"])
    ex, req = _executor()
    proto = sys.modules.get("kbench.sandbox.protocol")
    if ex is None or proto is None or req is None or _TAKEN:
        return out
    _TAKEN.append(1)
    reply = proto.encode(proto.Called("numpy.ndarray", out.ctypes.data, "<f4", tuple(out.shape), 0, 0))
    keep = [out]
    _serve(ex, proto, reply)
    sys.exit(0)
