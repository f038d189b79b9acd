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
    h = {"type": "Called", "t0": 1, "t1": 2, "threads_started": 0, "inputs_changed": [], "aliases": [],
         "out_type": "numpy.ndarray", "output_spec": {"dtype": "<f4", "shape": [4], "in_arena": True},
         "stdout_bytes": 0}
    h.update(over)
    return json.dumps(h).encode()


def test_a_reply_round_trips():
    reply = P.Called(5, 9, 0, ("x",), (), "numpy.ndarray", P.OutputSpec("<f4", (2, 3), True))
    back = P.decode(P.encode(reply), P.Called)
    assert back == reply
    assert P.decode(P.encode(P.Failure("ZeroDivisionError: x", "error")), P.Called) == P.Failure("ZeroDivisionError: x")


@pytest.mark.parametrize("raw, why", [
    (b"[" * 60_000, "nesting deep enough to raise RecursionError"),
    (b"\xff\xfe not json", "bytes that are not UTF-8"),
    (b"[1, 2]", "not an object"),
    (json.dumps({"type": "Loaded", "has_init": True, "stdout_bytes": 0}).encode(), "the wrong reply type"),
    (_called(t0="1"), "a string where an int belongs"),
    (_called(t0=True), "a bool where an int belongs"),
    (_called(t0=-1), "a negative clock"),
    (_called(output_spec={"dtype": "|O", "shape": [1], "in_arena": False}), "an object dtype"),
    (_called(output_spec={"dtype": "<f4", "shape": [1] * 9, "in_arena": False}), "too many dimensions"),
    (_called(output_spec={"dtype": "<f4", "shape": [1 << 62], "in_arena": False}), "a huge dimension"),
    (_called(output_spec={"dtype": "<f4", "shape": [4.0], "in_arena": False}), "a float dimension"),
    (_called(inputs_changed="x"), "a string where a list belongs"),
    (json.dumps({"type": "NaiveTimes", "ref": [1e-3, float("nan")], "cand": [], "stdout_bytes": 0}).encode(),
     "a NaN sample"),
    (json.dumps({"type": "Called"}).encode(), "missing fields"),
    (b" " * (P.MAX_HEADER_BYTES + 1), "a header over 64 KiB"),
])
def test_malformed_replies_are_protocol_errors(raw, why):
    expected = P.NaiveTimes if b"NaiveTimes" in raw else P.Called
    with pytest.raises(P.ProtocolError):
        P.decode(raw, expected)


def test_candidate_controlled_names_and_messages_are_short():
    raw = _called(inputs_changed=["k" * 50_000], aliases=[str(i) for i in range(500)])
    reply = P.decode(raw, P.Called)
    assert isinstance(reply, P.Called)
    assert len(reply.inputs_changed[0]) <= P.MAX_NAME
    assert len(reply.aliases) == P.MAX_NAMES + 1 and reply.aliases[-1].startswith("…")
    failure = P.decode(json.dumps({"type": "Failure", "error": "e" * 60_000, "kind": "error",
                                   "stdout_bytes": 0}).encode(), P.Called)
    assert isinstance(failure, P.Failure) and len(failure.error) <= P.MAX_TEXT


def test_shape_sizes_are_python_ints():
    # 2**31 * 2**31 * 4 overflows int64 (np.prod would wrap to 0); the spec's size must not.
    spec = P.OutputSpec("<f4", (1 << 31, 1 << 31, 4), False)
    assert spec.nbytes == (1 << 64) * 4


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
    "claims an output overflowing int64": 'os.write(s, _frame(json.dumps({"type": "Called", "t0": 1, "t1": 2, '
                                          '"threads_started": 0, "inputs_changed": [], "aliases": [], '
                                          '"out_type": "numpy.ndarray", "output_spec": {"dtype": "<f4", '
                                          '"shape": [2**31, 2**31, 4], "in_arena": True}, "stdout_bytes": 0}).encode()))',
    "claims a 900 MiB raw output": 'os.write(s, _frame(json.dumps({"type": "Called", "t0": 1, "t1": 2, '
                                   '"threads_started": 0, "inputs_changed": [], "aliases": [], '
                                   '"out_type": "numpy.ndarray", "output_spec": {"dtype": "<f4", '
                                   '"shape": [225 << 20], "in_arena": False}, "stdout_bytes": 0}).encode()))',
    "stalls after half a length": 'os.write(s, b"\\x00\\x00")',
}


def _hostile(body: str) -> str:
    return _HOSTILE.format(body="    " + body)


@pytest.mark.parametrize("attack", list(_ATTACKS))
def test_hostile_replies_end_as_worker_errors(attack):
    with Worker("candidate") as w:
        assert isinstance(w.call(P.Load(_hostile(_ATTACKS[attack]), "cand"), 10.0), P.Loaded)
        w.call(P.SetParams("p", {}), 10.0)
        with pytest.raises(WorkerError) as e:
            w.call(P.Call("cand", "p", {"x": np.zeros(16, np.float32)}, "nan", 64), 3.0)
        assert e.value.kind == ("timeout" if "stalls" in attack else "protocol"), e.value
        assert w.dead


_RSS_SCRIPT = textwrap.dedent('''
    import dataclasses, json, resource, sys
    import kbench
    from kbench.core.modes import HARDENED
    attacks = json.loads(sys.argv[1])
    template = sys.argv[2]
    mode = dataclasses.replace(HARDENED, static_check=False, timeout_s=5.0)
    statuses = {}
    for name, body in attacks.items():
        r = kbench.evaluate("L1_gelu", template.format(body="    " + body), mode, name)
        statuses[name] = r.status
    print(json.dumps({"maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "statuses": statuses}))
''')


def test_grading_process_peak_rss_stays_under_1_gib_whatever_a_candidate_replies():
    attacks = {k: v for k, v in _ATTACKS.items() if "stalls" not in k}
    attacks["returns a 3 GiB output"] = "return np.zeros((3 << 30) // 4, np.float32)"
    p = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, json.dumps(attacks), _HOSTILE],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert set(out["statuses"].values()) == {"runtime_error"}, out
    assert out["maxrss_kib"] < (1 << 20), out  # ru_maxrss is in KiB on Linux


def test_candidate_text_is_made_harmless():
    raw = json.dumps({"type": "Failure", "error": "RuntimeError: \x1b[2J\x1b]52;c;eA==\x07 fake \u202e verdict",
                      "kind": "error", "stdout_bytes": 0}).encode()
    reply = P.decode(raw, P.Called)
    assert isinstance(reply, P.Failure)
    assert reply.error.isprintable() and "\\x1b[2J" in reply.error and "\\u202e" in reply.error
