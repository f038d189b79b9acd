"""Each OS layer, shown active on this machine by an attack it stops.

Every attack runs as candidate code in a real sandbox worker. It runs twice: in a candidate worker (audit
hook on, for readable messages) and in a reference-role worker, which has every OS layer but no audit
hook and no static gate, so the OS alone must stop it. A test skips only when the worker's own probe
says the layer it relies on is missing here, and then with the probe's reason.
"""

from __future__ import annotations

import os
import time
import uuid

import numpy as np
import pytest

from kbench.sandbox import protocol as P
from kbench.sandbox.arena import SEALS
from kbench.sandbox.server import Worker, WorkerError

ROLES = ("candidate", "reference")

# Each attack is the body of ``_attack()``: it returns a word saying what happened (``_each`` runs several
# attempts and names each outcome). ``forward`` raises that word, so it comes back in the Failure message
# whatever the worker's role.
_TEMPLATE = '''
import os, sys, errno

def _each(**attempts):
    # Each named attempt (a callable) in turn: "name done" or "name blocked", joined by commas.
    words = []
    for name, attempt in attempts.items():
        try:
            attempt()
            words.append(name + " done")
        except (OSError, RuntimeError):
            words.append(name + " blocked")
    return ",".join(words)

def _attack():
{body}

def forward(x, params, alloc):
    try:
        outcome = _attack()
    except OSError as e:
        outcome = "blocked " + (errno.errorcode.get(e.errno, "?") if e.errno else type(e).__name__)
    except Exception as e:
        outcome = "blocked " + type(e).__name__
    raise RuntimeError("OUTCOME " + str(outcome))
'''


def _src(body: str) -> str:
    return _TEMPLATE.format(body="\n".join("    " + line for line in body.strip().splitlines()))


def _outcome(role: str, body: str, needs: tuple[str, ...]) -> str:
    """Run the attack in a fresh worker of ``role``; return its outcome word(s)."""
    with Worker(role) as w:  # type: ignore[arg-type]
        hello = w.layers()
        for layer in needs:
            if layer not in hello.active:
                reason = dict(hello.missing).get(layer, "not reported active")
                pytest.skip(f"the {layer} layer is missing on this machine: {reason}")
        assert isinstance(w.call(P.Load(_src(body), "cand"), 10.0), P.Loaded)
        assert isinstance(w.call(P.SetParams("p", {}), 10.0), P.ParamsKept)
        reply = w.call(P.Call("cand", "p", {"x": np.zeros(16, np.float32)}, "nan", 64), 10.0)
    assert isinstance(reply, P.Failure), reply
    assert "OUTCOME " in reply.error, reply.error
    return reply.error.split("OUTCOME ", 1)[1].split(" (line ")[0]


@pytest.mark.parametrize("role", ROLES)
def test_write_outside_its_directory_fails(role, tmp_path):
    os.chmod(tmp_path, 0o777)
    target = tmp_path / f"escape-{uuid.uuid4().hex}"
    out = _outcome(role, f'''
d = os.open({str(tmp_path)!r}, os.O_RDONLY)  # the dir_fd route the audit hook judged wrongly
fd = os.open("{target.name}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d)
os.write(fd, b"x")
return "wrote"
''', ("landlock",))
    assert out.startswith("blocked"), out
    assert not target.exists()


@pytest.mark.parametrize("role", ROLES)
def test_write_in_its_own_directory_fails_too(role):
    out = _outcome(role, '''
with open(os.path.join(os.getcwd(), "cache.bin"), "wb") as f:
    f.write(b"x" * 1000)
return "wrote"
''', ("landlock",))
    assert out.startswith("blocked"), out


@pytest.mark.parametrize("role", ROLES)
def test_exec_and_fork_fail(role):
    out = _outcome(role, '''
def fork():
    if os.fork() == 0:
        os._exit(0)
return _each(execv=lambda: os.execv("/bin/sh", ["sh", "-c", "true"]),
             posix_spawn=lambda: os.posix_spawn("/bin/true", ["true"], {}), fork=fork)
''', ("seccomp",))
    assert out == "execv blocked,posix_spawn blocked,fork blocked", out


@pytest.mark.parametrize("role", ROLES)
def test_socket_fails(role):
    out = _outcome(role, '''
import socket
return _each(inet=lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM),
             unix=lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),
             netlink=lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM))
''', ("seccomp",))
    assert out == "inet blocked,unix blocked,netlink blocked", out


@pytest.mark.parametrize("role", ROLES)
def test_grader_proc_mem_and_environ_are_unreadable(role):
    out = _outcome(role, f'''
def read(name):
    with open("/proc/{os.getpid()}/" + name, "rb") as f:
        f.read(16)
return _each(mem=lambda: read("mem"), environ=lambda: read("environ"), maps=lambda: read("maps"))
''', ("landlock",))
    assert out == "mem blocked,environ blocked,maps blocked", out


@pytest.mark.parametrize("role", ROLES)
def test_signal_to_the_grader_fails(role):
    out = _outcome(role, f'''
import signal
return _each(kill=lambda: os.kill({os.getpid()}, 0),
             pidfd=lambda: signal.pidfd_send_signal(os.pidfd_open({os.getpid()}), 0),
             renice=lambda: os.setpriority(os.PRIO_PROCESS, {os.getpid()}, 19))
''', ("seccomp",))
    assert out == "kill blocked,pidfd blocked,renice blocked", out
    assert os.getpriority(os.PRIO_PROCESS, 0) < 19


@pytest.mark.parametrize("role", ROLES)
def test_the_arena_cannot_be_truncated(role):
    body = '''
import stat
for fd in range(3, 64):
    try:
        if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:kbench-arena"):
            os.ftruncate(fd, 0)
            return "truncated"
    except OSError as e:
        if os.path.exists(f"/proc/self/fd/{fd}") and "arena" in os.readlink(f"/proc/self/fd/{fd}"):
            raise
return "no arena descriptor found"
'''
    with Worker(role) as w:  # type: ignore[arg-type]
        assert isinstance(w.call(P.Load(_src(body), "cand"), 10.0), P.Loaded)
        w.call(P.SetParams("p", {}), 10.0)
        x = {"x": np.arange(16, dtype=np.float32)}
        reply = w.call(P.Call("cand", "p", x, "nan", 64), 10.0)
        assert isinstance(reply, P.Failure) and "OUTCOME blocked EPERM" in reply.error, reply
        assert w._arena is not None and w._arena.seals() & SEALS == SEALS
        assert os.fstat(w._arena.fd).st_size == w._arena.size
        # The grader still reads and writes its mapping (a truncation would have made this a SIGBUS).
        assert isinstance(w.call(P.Load("def forward(x, params, alloc):\n    return x['x'] * 2\n", "ok"), 10.0),
                          P.Loaded)
        again = w.call(P.Call("ok", "p", x, "nan", 64), 10.0)
        assert isinstance(again, P.Called) and np.array_equal(again.output, x["x"] * 2)


def test_layers_are_reported_and_active_here():
    with Worker("candidate") as w:
        hello = w.layers()
    for layer in ("rlimits", "landlock", "seccomp"):
        assert layer in hello.active, (layer, hello.missing)
    assert "nonroot" in hello.active or "nocaps" in hello.active or os.getuid() != 0, hello
    missing = dict(hello.missing)
    assert all(layer not in missing for layer in hello.active)


def test_a_spinning_candidate_ends_at_its_deadline():
    with Worker("candidate") as w:
        w.call(P.Load("def forward(x, params, alloc):\n    while True:\n        pass\n", "cand"), 10.0)
        w.call(P.SetParams("p", {}), 10.0)
        t0 = time.monotonic()
        with pytest.raises(WorkerError) as e:
            w.call(P.Call("cand", "p", {"x": np.zeros(4, np.float32)}, "nan", 16), 1.0)
        assert e.value.kind == "timeout"
        assert time.monotonic() - t0 < 10.0  # bounded by the deadline, not by the candidate
        assert w.dead


def test_doctor_lists_every_layer_and_its_state():
    import subprocess
    import sys

    from kbench.sandbox.confine import LAYERS

    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "doctor"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert p.returncode in (0, 1), p.stderr
    assert "Traceback" not in p.stderr
    for layer in LAYERS:
        line = next((ln for ln in p.stdout.splitlines() if ln.strip("│┃ ").startswith(layer)), None)
        assert line is not None and ("active" in line or "missing" in line or "partial" in line), (layer, p.stdout)
    assert (p.returncode == 0) == ("every layer holds" in p.stdout)


def test_the_worker_environment_carries_no_secret_of_the_grader(monkeypatch):
    monkeypatch.setenv("KBENCH_TEST_SECRET", "s3cr3t-value")
    out = _outcome("reference", '''
with open("/proc/self/environ", "rb") as f:
    block = f.read()
return "env " + str("KBENCH_TEST_SECRET" in os.environ) + " block " + str(b"s3cr3t-value" in block)
''', ())
    assert out == "env False block False", out


@pytest.mark.parametrize("role", ROLES)
def test_a_worker_cannot_widen_its_cpu_affinity(role):
    out = _outcome(role, '''
os.sched_setaffinity(0, range(os.cpu_count() or 1))
return "widened"
''', ("seccomp",))
    assert out == "blocked EPERM", out


@pytest.mark.parametrize("mode", ["naive", "hardened"])
def test_results_record_the_layers_and_the_log_names_missing_ones(mode):
    import kbench
    from kbench.core.tasks import TASK

    events = []
    task = TASK["L1_gelu"]
    r = kbench.evaluate(task, task.ref_src, mode, "reference", on_event=events.append)
    with Worker("candidate") as w:
        hello = w.layers()
    assert r.isolation == hello.active and "seccomp" in r.isolation and "landlock" in r.isolation
    assert r.to_dict()["isolation"] == hello.active
    lines = [e.message for e in events if e.step == "load"]
    assert any(ln == "sandbox layers: " + ", ".join(hello.active) for ln in lines), lines
    for layer, _ in hello.missing:
        assert any(ln.startswith(f"sandbox runs without {layer}: ") for ln in lines), (layer, lines)
