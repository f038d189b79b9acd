"""The worker protocol: typed replies rebuilt field by field, bounded, and every malformation a
``ProtocolError``; a worker that writes anything at all to its reply socket cannot crash, hang or bloat
the grading process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kbench.sandbox import protocol as P
from kbench.sandbox.server import Worker, WorkerError


def _called(**over) -> bytes:
    h = {"type": "Called", "out_type": "numpy.ndarray", "out_addr": 4096, "out_dtype": "<f4", "out_shape": [4],
         "kernel_ns": 5, "alloc_used": 0}
    h.update(over)
    return json.dumps(h).encode()


def test_a_reply_round_trips():
    reply = P.Called("numpy.ndarray", 1 << 40, "<f4", (2, 3), 9, 64)
    assert P.decode(P.encode(reply), P.Called) == reply
    assert P.decode(P.encode(P.Failure("ZeroDivisionError: x", "error")), P.Called) == P.Failure("ZeroDivisionError: x")
    hello = P.Hello(("netns", "seccomp"), (("landlock", "absent"),))
    assert P.decode(P.encode(hello), P.Hello) == hello


def test_a_prepared_calls_reply_says_only_where_the_output_is_and_the_workers_counts():
    """The fixed-size reply of a prepared call: dtype and shape come from the grader's own record of what it
    prepared, never from the worker; its counts are checked as a JSON reply's are; outside a prepared call (or
    of another size) it is not a reply at all."""
    prep = P.Prepare(3, P.Call("cand", "p", ()), "<f4", (2, 3))
    raw = P.encode_fast_called(1 << 40, 9, 64, 1000, 2000)
    assert len(raw) == P.FAST_CALLED.size
    assert P.decode_reply(raw, P.Called, prep) == P.Called("numpy.ndarray", 1 << 40, "<f4", (2, 3), 9, 64, 1000, 2000)
    with pytest.raises(P.ProtocolError):
        P.decode_reply(P.FAST_CALLED.pack(P.FAST_CALLED_TAG, 4096, -5, 0, 0, 0), P.Called, prep)
    for bad in (raw + b"x", raw[:-1]):
        with pytest.raises(P.ProtocolError):
            P.decode_reply(bad, P.Called, prep)
    with pytest.raises(P.ProtocolError):
        P.decode_reply(raw, P.Called, None)  # an unprepared call's reply is JSON
    json_reply = P.Called("numpy.ndarray", 4096, "<f8", (5,), 1, 0, 7, 8)
    assert P.decode_reply(P.encode(json_reply), P.Called, prep) == json_reply  # another output: said in full
    assert P.fast_call_frame(3)[4:] == P.FAST_CALL.pack(P.FAST_TAG, 3) and P.fast_call_frame(3)[4:5] != b"\x80"


def test_prepared_calls_take_a_few_bytes_and_are_forgotten_with_their_arena():
    """A timed call is prepared once (``P.Prepare``) and then sent as a frame of a few bytes; a new inputs arena
    forgets every prepared call on both sides, and the next call is prepared again under a new number (a frame
    can only ever mean the call it was prepared for)."""
    from tests.sandbox_probe import ready

    with Worker("candidate") as w:
        arena, spec = ready(w, "def forward(x, params, alloc):\n    return x['x'] * 2\n")
        call, expect = P.Call("cand", "p", spec), ("<f4", (16,))
        for _ in range(2):
            k = w.run(call, 10.0, expect)
            assert np.array_equal(k.output, np.arange(16, dtype=np.float32) * 2)
            assert isinstance(k.reply, P.Called) and 0 < k.reply.recv_ns <= k.reply.sent_ns
        (prep, frame), = [v for v in w._prepared.values() if v is not None]
        assert prep.slot == 0 and len(frame) == 4 + P.FAST_CALL.size
        arena.view("<f4", (16,), 0)[:] = 1.0
        assert isinstance(w.call(P.MapArena("inputs", arena.size), 10.0, fd=arena.fd), P.Mapped)
        assert isinstance(w.call(P.SetParams("p", (), {}), 10.0), P.ParamsKept)
        assert not w._prepared
        k = w.run(call, 10.0, expect)
        assert np.array_equal(k.output, np.full(16, 2.0, np.float32))
        assert [v[0].slot for v in w._prepared.values() if v is not None] == [1]
        # a frame the worker does not keep is refused in words, never taken for another call
        w._prepared[(call, "<f4", (16,))] = (P.Prepare(7, call, "<f4", (16,)), P.fast_call_frame(7))
        k = w.run(call, 10.0, expect)
        assert isinstance(k.reply, P.Failure) and "prepared call" in k.reply.error
        arena.close()


def test_every_reply_field_is_declared_with_a_wire_type():
    import dataclasses

    for name, (kind, wire) in P._WIRE.items():
        assert [f.name for f in dataclasses.fields(kind)] == [n for n, _ in wire], name
        assert all(isinstance(w, P.Wire) for _, w in wire), name


@pytest.mark.parametrize("raw, why", [
    (b"[" * 60_000, "nesting deep enough to raise RecursionError"),
    (b"\xff\xfe not json", "bytes that are not UTF-8"),
    (b"[1, 2]", "not an object"),
    (json.dumps({"type": "Loaded", "has_init": True}).encode(), "the wrong reply type"),
    (json.dumps({"type": "Evil", "x": 1}).encode(), "an unknown reply type"),
    (_called(out_addr="1"), "a string where an int belongs"),
    (_called(out_addr=True), "a bool where an int belongs"),
    (_called(kernel_ns=-1), "a negative clock"),
    (_called(out_dtype="|O"), "an object dtype"),
    (_called(out_shape=[1] * 9), "too many dimensions"),
    (_called(out_shape=[1 << 62]), "a huge dimension"),
    (_called(out_shape=[4.0]), "a float dimension"),
    (_called(out_type=["x"]), "a list where a string belongs"),
    (_called(extra=1), "a field no declaration has"),
    (json.dumps({"type": "NaiveTimes", "ref": [1e-3, float("nan")], "cand": []}).encode(), "a NaN sample"),
    (json.dumps({"type": "Called"}).encode(), "missing fields"),
    (json.dumps({"type": "GateVerdict", "findings": [["r", -1, "x"]], "error": ""}).encode(), "a negative line"),
    (b" " * (P.MAX_HEADER_BYTES + 1), "a header over 64 KiB"),
])
def test_malformed_replies_are_protocol_errors(raw, why):
    expected = next((t for t in (P.NaiveTimes, P.GateVerdict) if t.__name__.encode() in raw), P.Called)
    with pytest.raises(P.ProtocolError):
        P.decode(raw, expected)


def test_candidate_controlled_names_and_messages_are_short():
    hello = P.decode(json.dumps({"type": "Hello", "active": ["k" * 50_000] + [str(i) for i in range(500)],
                                 "missing": []}).encode(), P.Hello)
    assert isinstance(hello, P.Hello)
    assert len(hello.active[0]) <= P.MAX_NAME
    assert len(hello.active) == P.MAX_NAMES + 1 and hello.active[-1].startswith("…")
    failure = P.decode(json.dumps({"type": "Failure", "error": "e" * 60_000, "kind": "error"}).encode(), P.Called)
    assert isinstance(failure, P.Failure) and len(failure.error) <= P.MAX_TEXT


def test_shape_sizes_are_python_ints():
    # 2**31 * 2**31 * 4 overflows int64 (np.prod would wrap to 0); the reply's size must not.
    reply = P.Called("numpy.ndarray", 4096, "<f4", (1 << 31, 1 << 31, 4))
    assert reply.nbytes == (1 << 64) * 4


# ---------------------------------------------------------------------------------------- live workers

_HOSTILE = '''
import os, stat, struct, json, time

def _sock():
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return fd
        except OSError:
            pass

def _frame(b):
    return struct.pack("!i", len(b)) + b

def forward(x, params, alloc):
    s = _sock()
{body}
    time.sleep(120)
'''

_ATTACKS = {
    "claims a 2 GiB header": 'os.write(s, struct.pack("!i", 0x7FFFFFFF))',
    "claims an 8-byte length of 2**62": 'os.write(s, struct.pack("!iQ", -1, 1 << 62))',
    "sends 60 KiB of nesting": 'os.write(s, _frame(b"[" * 60000))',
    "claims an output overflowing int64": 'os.write(s, _frame(json.dumps({"type": "Called", '
                                          '"out_type": "numpy.ndarray", "out_addr": 4096, "out_dtype": "<f4", '
                                          '"out_shape": [2**31, 2**31, 4], "kernel_ns": 1, "alloc_used": 0}).encode()))',
    "names an address that is not mapped": 'os.write(s, _frame(json.dumps({"type": "Called", '
                                           '"out_type": "numpy.ndarray", "out_addr": 4096, "out_dtype": "<f4", '
                                           '"out_shape": [16], "kernel_ns": 1, "alloc_used": 0}).encode()))',
    "stalls after half a length": 'os.write(s, b"\\x00\\x00")',
    "answers a prepared call with a negative count": 'os.write(s, _frame(struct.pack("<2s5q", b"\\x00C", 4096, '
                                                     '-1, 0, 0, 0)))',
}


def _hostile(body: str) -> str:
    return _HOSTILE.format(body="    " + body)


@pytest.mark.parametrize("attack", list(_ATTACKS))
def test_hostile_replies_end_as_worker_errors(attack):
    from tests.sandbox_probe import ready

    with Worker("candidate") as w:
        arena, spec = ready(w, _hostile(_ATTACKS[attack]))
        expect = ("<f4", (16,)) if "not mapped" in attack or "prepared" in attack else ("<f4", (2**31, 2**31, 4))
        with pytest.raises(WorkerError) as e:
            w.run(P.Call("cand", "p", spec), 3.0, expect)
        assert e.value.kind == ("timeout" if "stalls" in attack else "protocol"), e.value
        assert w.dead
        arena.close()


_RSS_SCRIPT = textwrap.dedent('''
    import dataclasses, json, resource, sys
    import kbench
    from kbench.core.modes import HARDENED
    attacks = json.loads(sys.argv[1])
    template = sys.argv[2]
    mode = dataclasses.replace(HARDENED.without("gate"), timeout_s=5.0)
    def hwm_kib():  # this process's own peak RSS (ru_maxrss also counts the parent's, from before exec)
        return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
    statuses, peaks = {}, {}
    for name, body in attacks.items():
        r = kbench.evaluate("L1_gelu", template.format(body="    " + body), mode, name)
        statuses[name] = r.status
        peaks[name] = hwm_kib() // 1024  # MiB, after each attack
    print(json.dumps({"maxrss_kib": hwm_kib(), "statuses": statuses,
                      "peak_mib_after": peaks}))
''')


def test_grading_process_peak_rss_stays_under_1_gib_whatever_a_candidate_replies():
    attacks = {k: v for k, v in _ATTACKS.items() if "stalls" not in k}
    attacks["returns a 3 GiB output"] = "return np.zeros((3 << 30) // 4, np.float32)"
    p = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, json.dumps(attacks), _HOSTILE],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    statuses = out["statuses"]
    assert statuses.pop("returns a 3 GiB output") in ("wrong", "runtime_error"), out  # never read: not its size
    assert set(statuses.values()) == {"runtime_error"}, out
    assert out["maxrss_kib"] < (1 << 20), out["peak_mib_after"]


def test_candidate_text_is_made_harmless():
    raw = json.dumps({"type": "Failure", "error": "RuntimeError: \x1b[2J\x1b]52;c;eA==\x07 fake \u202e verdict",
                      "kind": "error"}).encode()
    reply = P.decode(raw, P.Called)
    assert isinstance(reply, P.Failure)
    assert reply.error.isprintable() and "\\x1b[2J" in reply.error and "\\u202e" in reply.error


def test_a_client_gone_mid_request_leaves_the_fork_server_running():
    """Ctrl-C in a grading process while it asks the fork server for a worker: the fork server's loop
    (Python 3.11) died of the EOFError with a traceback on the terminal; now it skips that client."""
    import socket
    import time
    from multiprocessing import forkserver

    from kbench.sandbox import protocol as P
    from kbench.sandbox import server

    server._context()
    pid, address = forkserver._forkserver._forkserver_pid, forkserver._forkserver._forkserver_address
    s = socket.socket(socket.AF_UNIX)
    s.connect(address)
    s.close()  # gone before sending the file descriptors a fork request carries
    time.sleep(0.5)
    assert server._fork_server_alive(pid)
    w = server.Worker("candidate")
    try:
        assert isinstance(w.call(P.Ping(), 30), P.Pong)
    finally:
        w.close()
    assert forkserver._forkserver._forkserver_pid == pid  # the same fork server made it


def test_a_child_whose_client_left_before_its_start_up_data_exits_quietly():
    """Ctrl-C one step later: the fork server has forked the child and the grading process dies before sending
    the child's preparation data. The child printed an EOFError traceback on the terminal; now it exits."""
    script = textwrap.dedent("""
        import os, time
        from multiprocessing import forkserver
        from kbench.sandbox import server
        server._context()
        fs = forkserver._forkserver
        parent_r, parent_w = fs.connect_to_new_process([])
        forkserver.read_signed(parent_r)  # the child's pid: it is running
        os.close(parent_w)  # gone before sending its preparation data
        time.sleep(1.0)
        print("alive" if server._fork_server_alive(fs._forkserver_pid) else "dead")
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.stdout.strip() == "alive", (p.stdout, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "EOFError" not in p.stderr, p.stderr[-2000:]


def test_an_output_read_on_another_core_is_the_same_and_the_thread_leaves_that_core_before_the_next_request():
    """While the grader times, outputs are read on the timing core (``Worker.read_cpu``: idle while the worker is
    stopped): the same bytes; the grading thread stays there for its work between calls, and is back on its own
    cores before its next request lets a worker run, and after ``parallel.unpark``."""
    import os

    from kbench.core import parallel
    from tests.sandbox_probe import ready

    cpus = sorted(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    seen: list[set[int]] = []
    with Worker("candidate") as w:
        arena, spec = ready(w, "def forward(x, params, alloc):\n    return x['x'] * 3\n")
        call, expect = P.Call("cand", "p", spec), ("<f4", (16,))
        w.read_cpu = cpus[-1]
        k = w.run(call, 10.0, expect)
        assert np.array_equal(k.output, np.arange(16, dtype=np.float32) * 3)
        if len(cpus) > 1:
            assert os.sched_getaffinity(0) == {cpus[-1]}  # parked on the idle core after the read
        send = w._send_frame
        w._send_frame = lambda *a: (seen.append(os.sched_getaffinity(0)), send(*a))[1]  # type: ignore[method-assign]
        w.read_cpu = None
        assert isinstance(w.call(P.Ping(), 10.0), P.Pong)
        assert seen and seen[0] == mine  # moved back before the request went out
        w.read_cpu = cpus[-1]
        w.run(call, 10.0, expect)
        parallel.unpark()
        assert os.sched_getaffinity(0) == mine
        arena.close()


def test_the_calibration_output_is_off_the_heap_of_the_reference_twin():
    """The twin's calibration output lies in a mapping of its own: an array left on its heap moved where the
    reference's temporaries land, and the twin ran layer norm's reference 3-5 % faster than the candidate's worker
    ran the same code (12-04)."""
    from kbench.grading.pipeline import calibration_source
    from tests.sandbox_probe import ready

    shape = (512, 1024)  # 2 MiB: below the workers' 32 MiB heap threshold, so np.zeros would be on the heap
    with Worker("reference") as w:
        arena, spec = ready(w, "def forward(x, params, alloc):\n    return x['x']\n")
        assert isinstance(w.call(P.Load(calibration_source(shape), "calibrate", trusted=True), 10.0), P.Loaded)
        k = w.run(P.Call("calibrate", "p", spec, "readonly", "pool"), 10.0, ("<f4", shape))
        assert isinstance(k.reply, P.Called) and k.output is not None and not k.output.any()
        addr = k.reply.out_addr
        with open(f"/proc/{w.pid}/maps") as f:
            rows = [line.split() for line in f]
        holding = [r for r in rows if int(r[0].split("-")[0], 16) <= addr < int(r[0].split("-")[1], 16)]
        assert holding, "the output's address is in no mapping"
        assert holding[0][-1] != "[heap]", holding[0]
        # and the way it was before would have been on the heap: the test can tell the two apart
        heap_src = f"_out = np.zeros({shape!r}, np.float32)\ndef forward(x, params, alloc):\n    return _out\n"
        assert isinstance(w.call(P.Load(heap_src, "calibrate2", trusted=True), 10.0), P.Loaded)
        k2 = w.run(P.Call("calibrate2", "p", spec, "readonly", "pool"), 10.0, ("<f4", shape))
        with open(f"/proc/{w.pid}/maps") as f:
            rows = [line.split() for line in f]
        a2 = k2.reply.out_addr  # type: ignore[union-attr]
        assert [r for r in rows if int(r[0].split("-")[0], 16) <= a2 < int(r[0].split("-")[1], 16)][0][-1] == "[heap]"
        arena.close()


def test_an_output_in_the_alloc_pool_is_copied_from_the_graders_own_mapping(monkeypatch):
    """An output named inside the worker's ``alloc`` pool is copied from the grader's mapping of the pool's memfd
    (memory speed), not read through ``process_vm_readv``; one on the worker's heap still is. A worker that puts
    memory of its own where the pool was mapped is judged on the pool's bytes: only it wrote them, and it is
    stopped while they are read (``Worker.share_pool``)."""
    from kbench.sandbox import server
    from kbench.sandbox.arena import ScratchArena
    from tests.sandbox_probe import harness, ready

    reads: list[int] = []
    real = server._readv
    monkeypatch.setattr(server, "_readv", lambda *a: (reads.append(1), real(*a))[1])
    src = ("def forward(x, params, alloc):\n"
           "    if params.get('heap'):\n        return x['x'] * 7\n"
           "    out = alloc((16,))\n    np.multiply(x['x'], 5, out=out)\n    return out\n")
    with Worker("candidate") as w:
        pool = ScratchArena(1 << 16, "probe")
        mapped = w.call(P.MapArena("scratch", pool.size), 10.0, fd=pool.fd)
        assert isinstance(mapped, P.Mapped) and mapped.addr
        w.share_pool(pool.map, mapped.addr)
        arena, spec = ready(w, src)
        k = w.run(P.Call("cand", "p", spec), 10.0, ("<f4", (16,)))
        assert np.array_equal(k.output, np.arange(16, dtype=np.float32) * 5) and not reads
        assert isinstance(k.reply, P.Called) and mapped.addr <= k.reply.out_addr < mapped.addr + pool.size
        assert isinstance(w.call(P.SetParams("h", (), {"heap": 1}), 10.0), P.ParamsKept)
        k = w.run(P.Call("cand", "h", spec), 10.0, ("<f4", (16,)))
        assert np.array_equal(k.output, np.arange(16, dtype=np.float32) * 7) and reads
        arena.close()
        pool.close()

    # Which of its buffers a kernel returns, and in what form: each read where it lies (the worker names a buffer the
    # pool handed out by its known offset, anything else by numpy's address).
    which = ("def forward(x, params, alloc):\n"
             "    a, b = alloc((16,)), alloc((4, 4))\n"
             "    np.multiply(x['x'], 3, out=a)\n    np.multiply(x['x'], 9, out=b.reshape(-1))\n"
             "    return (a, b.reshape(-1), b.reshape(16)[:], a * 1)[int(params['k'])]\n")
    with Worker("candidate") as w:
        pool = ScratchArena(1 << 16, "probe")
        mapped = w.call(P.MapArena("scratch", pool.size), 10.0, fd=pool.fd)
        w.share_pool(pool.map, mapped.addr)  # type: ignore[union-attr]
        arena, spec = ready(w, which)
        expect = {"first": (3, 0), "second": (9, 64), "view": (9, 64), "copy": (3, None)}
        for i, (k_name, (factor, offset)) in enumerate(expect.items()):
            assert isinstance(w.call(P.SetParams(k_name, (), {"k": i}), 10.0), P.ParamsKept)
            k = w.run(P.Call("cand", k_name, spec), 10.0, ("<f4", (16,)))
            assert np.array_equal(k.output, np.arange(16, dtype=np.float32) * factor), k_name
            if offset is not None:
                assert k.reply.out_addr == mapped.addr + offset, k_name  # type: ignore[union-attr]
        arena.close()
        pool.close()

    swap = ("def forward(x, params, alloc):\n"
            "    out = alloc((16,))\n    page = out.ctypes.data & ~4095\n"
            "    libc.mmap.restype = ctypes.c_void_p\n"
            "    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,"
            " ctypes.c_long]\n"
            "    assert libc.mmap(page, 4096, 3, 0x32, -1, 0) == page  # private, anonymous, fixed\n"
            "    np.multiply(x['x'], 5, out=out)\n    return out\n")
    with harness("native"), Worker("candidate") as w:
        pool = ScratchArena(1 << 16, "probe")
        mapped = w.call(P.MapArena("scratch", pool.size), 10.0, fd=pool.fd)
        w.share_pool(pool.map, mapped.addr)  # type: ignore[union-attr]
        np.frombuffer(pool.map, np.float32)[:] = -1.0
        arena, spec = ready(w, swap)
        k = w.run(P.Call("cand", "p", spec), 10.0, ("<f4", (16,)))
        assert isinstance(k.reply, P.Called), k.reply
        assert np.array_equal(k.output, np.full(16, -1.0, np.float32))  # the pool's bytes, not its own page's
        arena.close()
        pool.close()
