"""H12 early reply: the reply written before the last two operations, which run while the grader stops the worker.

Third 12-03 audit, round two: behind H11's loop, the reply goes out after ``tanh`` and before ``+ 1`` and the
final multiply. The grader stops the worker when the reply arrives, and a stop lands 40-60 us after the signal:
work placed there was off the wall clock (a 0.1 ms GELU read 1.17-1.21x, convicted 1 run in 4 when the race
was lost). What must hold: the wall time of a call is its time to the reply plus the CPU time the worker used
after it, until it stopped; work that does not finish before the stop leaves an unfinished output, judged as
such. Correct (about 1.0x; what is left is the grader's own wake-up, 10-20 us, README) or wrong, never fooled.
"""

import os, pickle, struct, sys

EARLY = True
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
            np.tanh(t, out=t)
            u = 0.5 * v
            if EARLY:
                wr(fd, heads[data])
            t += 1.0
            np.multiply(u, t, out=b)
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
