"""Each confinement layer and seccomp rule, shown active on this machine by an attack it stops.

Every attack runs as candidate code in a real sandbox worker, three ways (``tests.sandbox_probe``): as a
candidate (audit hook on), in a reference-role worker (no audit hook: the OS alone must stop it), and in
the native harness (no audit hook, ``ctypes``/raw syscalls in the candidate's hands). A test skips only when
the worker's own report says the layer it relies on is missing here, and then with that report's reason.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

import numpy as np
import pytest

from kbench.sandbox import confine
from kbench.sandbox import protocol as P
from kbench.sandbox.arena import F_SEAL_FUTURE_WRITE, SIZE_SEALS
from kbench.sandbox.layers import rlimits
from kbench.sandbox.layers.identity import WORKER_ID_BASE
from kbench.sandbox.server import WorkerError
from tests.sandbox_probe import RUNS, outcome, ready, skip_unless, source, start

NATIVE = ("native",)


@pytest.mark.parametrize("run", RUNS)
def test_write_outside_fails_by_any_route(run, tmp_path):
    os.chmod(tmp_path, 0o777)
    target = tmp_path / f"escape-{uuid.uuid4().hex}"
    out = outcome(run, f'''
def dirfd():
    d = os.open({str(tmp_path)!r}, os.O_RDONLY)  # the dir_fd route an audit hook judges wrongly
    os.write(os.open("{target.name}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d), b"x")
def cwd():
    with open("cache.bin", "wb") as f:
        f.write(b"x")
def tmp():
    with open("/tmp/kbench-probe", "wb") as f:
        f.write(b"x")
return _each(dirfd=dirfd, cwd=cwd, tmp=tmp)
''', ("landlock",))
    assert out == "dirfd blocked,cwd blocked,tmp blocked", out
    assert not target.exists()


@pytest.mark.parametrize("run", RUNS)
def test_exec_and_fork_fail(run):
    out = outcome(run, '''
def fork():
    if os.fork() == 0:
        os._exit(0)
return _each(execv=lambda: os.execv("/bin/sh", ["sh", "-c", "true"]),
             posix_spawn=lambda: os.posix_spawn("/bin/true", ["true"], {}), fork=fork)
''', ("seccomp",))
    assert out == "execv blocked,posix_spawn blocked,fork blocked", out


@pytest.mark.parametrize("run", RUNS)
def test_socket_fails(run):
    out = outcome(run, '''
import socket
return _each(inet=lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM),
             unix=lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),
             netlink=lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM))
''', ("seccomp",))
    assert out == "inet blocked,unix blocked,netlink blocked", out


@pytest.mark.parametrize("run", RUNS)
def test_the_grader_is_out_of_reach(run):
    me = os.getpid()
    out = outcome(run, f'''
import signal
def read(name):
    with open("/proc/{me}/" + name, "rb") as f:
        f.read(16)
return _each(mem=lambda: read("mem"), environ=lambda: read("environ"), kill=lambda: os.kill({me}, 0),
             pidfd=lambda: signal.pidfd_send_signal(os.pidfd_open({me}), 0),
             renice=lambda: os.setpriority(os.PRIO_PROCESS, {me}, 19))
''', ("seccomp",))
    assert out == "mem blocked,environ blocked,kill blocked,pidfd blocked,renice blocked", out
    assert os.getpriority(os.PRIO_PROCESS, 0) < 19


@pytest.mark.parametrize("run", RUNS)
def test_it_sees_only_its_own_pid(run):
    out = outcome(run, '''
pids = sorted(n for n in os.listdir("/proc") if n.isdigit())
return "pid " + str(os.getpid()) + " sees " + ",".join(pids)
''', ("pidns", "mountns"))
    assert out == "pid 1 sees 1", out


def test_each_worker_has_a_pid_namespace_of_its_own():
    """Read by the grader from /proc: two live workers are each pid 1 of a pid namespace that is neither the
    other's nor the grader's (as root the fork server makes one per fork and returns to its own after)."""
    with start("candidate") as a, start("reference") as b:
        skip_unless(a, ("pidns",))
        skip_unless(b, ("pidns",))
        spaces = {os.readlink(f"/proc/{pid}/ns/pid") for pid in (os.getpid(), a.pid, b.pid)}
        nspids = []
        for w in (a, b):
            with open(f"/proc/{w.pid}/status") as f:
                nspids.append(next(line.split()[1:] for line in f if line.startswith("NSpid:")))
    assert len(spaces) == 3, spaces
    assert all(ids[-1] == "1" for ids in nspids), nspids


def test_a_grading_process_exits_with_its_workers_left_open():
    """multiprocessing ends leftover daemonic children with SIGTERM and then waits for them; a worker that is
    pid 1 of its pid namespace never receives a SIGTERM from outside, so its process must be ended with SIGKILL
    (``kbench grade``'s pool processes hung at exit before)."""
    import subprocess
    import sys

    code = ("from kbench.sandbox.server import Worker\n"
            "a, b = Worker('candidate'), Worker('reference')\n"
            "a.layers(), b.layers()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr[-500:]


def test_its_uid_outside_is_unprivileged_and_its_own():
    with start("candidate") as a, start("candidate") as b:
        skip_unless(a, ("nonroot",))
        uids = []
        for w in (a, b):
            w.layers()
            with open(f"/proc/{w.pid}/status") as f:  # read by the grader: the kernel's word, not the worker's
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            ids = {int(v) for v in fields["Uid"].split() + fields["Gid"].split()}
            assert 0 not in ids, fields["Uid"]
            assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0
            uids.append(int(fields["Uid"].split()[0]))
        if os.getuid() == 0:
            assert uids[0] != uids[1] and all(u >= WORKER_ID_BASE for u in uids), uids


@pytest.mark.parametrize("run", RUNS)
def test_its_filesystem_holds_only_the_installation(run):
    import kbench

    plan = confine.view_plan()
    allowed = {p for p, _ in plan.binds} | {"/", "/proc"}
    # Paths that exist here, next to and above the installation: none may exist in the worker's view.
    checkout = os.path.dirname(os.path.dirname(kbench.__file__))
    outside = [p for p in ("/etc/passwd", "/etc/hostname", "/home", "/tmp", "/var", os.path.expanduser("~/.bashrc"),
                           os.path.join(checkout, "tests"), os.path.join(checkout, "README.md"), "/work/shared")
               if os.path.lexists(p) and not any(p == a or p.startswith(a + "/") or a.startswith(p + "/")
                                                 for a in allowed - {"/", "/proc"})]
    # (an ancestor of the installation, /tmp for a checkout in /tmp/x, is in the view as the way to it)
    out = outcome(run, f'''
mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
extra = [m for m in mounts if m not in {sorted(allowed)!r}]
seen = [p for p in {outside!r} if os.path.lexists(p)]
stat_ok = []
for p in {outside!r}:
    try:
        os.stat(p)
        stat_ok.append(p)
    except OSError:
        pass
return "mounts " + str(len(mounts)) + " extra " + ",".join(extra[:3]) + " seen " + ",".join(seen[:3]) + " stat " + ",".join(stat_ok[:3])
''', ("mountns",))
    assert out.startswith("mounts ") and out.endswith(" extra  seen  stat "), out
    assert len(outside) >= 4, outside  # the check saw real paths of this machine


def test_its_view_is_read_only_down_to_the_file_system():
    """The view's tmpfs is read-only as a file system, not only as this worker's mount of it: as root the
    fork server stages one view that every worker's namespace copies, and it must carry nothing between them."""
    out = outcome("native", '''
root = [line.split() for line in open("/proc/self/mountinfo") if line.split()[4] == "/"][-1]
mount_opts, super_opts = root[5].split(","), root[-1].split(",")
try:
    os.mkdir("/kbench-probe")
    made = "mkdir done"
except OSError as e:
    made = "mkdir " + errno.errorcode[e.errno]
return root[-3] + " mount " + mount_opts[0] + " super " + super_opts[0] + " " + made
''', ("mountns",))
    assert out.startswith("tmpfs mount ro super ro mkdir E"), out  # refused (by the view, or Landlock first)


def test_a_worker_start_makes_no_directory_of_its_own():
    """Workers need no directory each: their views are mounted, in their own namespaces, on one directory
    per grading process (which stays empty here)."""
    from kbench.sandbox import server

    with start("candidate") as w:
        w.layers()
    base, mine = os.path.dirname(server._view_dir()), f"-{os.getpid()}-"  # others' sessions share the folder

    def ours() -> set[str]:
        return {name for name in os.listdir(base) if mine in name}
    before = ours()
    with start("candidate") as a, start("reference") as b:
        a.layers(), b.layers()
        during = ours()
    assert during == before == {os.path.basename(server._view_dir())}, sorted(during ^ before)
    assert os.listdir(server._view_dir()) == []


def test_the_fork_server_froze_what_it_preloaded():
    """``gc.freeze()`` in the fork server: a worker's collections skip the preloaded objects instead of
    writing to (and so copying) every page that holds one."""
    out = outcome("reference", '''
import gc
return "frozen " + str(gc.get_freeze_count() > 10_000)
''')
    assert out == "frozen True", out


@pytest.mark.parametrize("run", ("reference", "native"))
def test_a_task_cap_stops_the_65th_thread(run):
    out = outcome(run, '''
import threading
hold = threading.Event()
started = 0
try:
    while started < 500:
        threading.Thread(target=hold.wait, daemon=True).start()
        started += 1
except RuntimeError:
    pass
tasks = len(os.listdir("/proc/self/task"))
hold.set()
return "started " + str(started) + " tasks " + str(tasks)
''', ("tasks",))
    started, tasks = int(out.split()[1]), int(out.split()[3])
    assert tasks == rlimits.TASK_CAP and started == rlimits.TASK_CAP - 1, out


#: Forms seccomp must refuse with EPERM, each also with high bits set in the argument the kernel reads as 32-bit.
_REFUSED = {
    "F_SETOWN": "syscall(72, 0, 8, os.getpid())", "F_SETOWN_hi": "syscall(72, 0, 8 | 1 << 32, os.getpid())",
    "F_SETSIG": "syscall(72, 0, 10, 9)", "F_SETSIG_hi": "syscall(72, 0, 10 | 1 << 32, 9)",
    "F_SETLEASE": "syscall(72, ro, 1024, 0)", "F_SETLEASE_hi": "syscall(72, ro, 1024 | 1 << 32, 0)",
    "F_NOTIFY": "syscall(72, ro, 1026, 1)", "F_SETFL_ASYNC": "syscall(72, 0, 4, 0o20000)",
    "F_SETFL_ASYNC_hi": "syscall(72, 0, 4 | 1 << 32, 0o20000)", "F_SETLK": "syscall(72, ro, 6, 0)",
    "TIOCSTI": "syscall(16, 0, 0x5412, 0)", "TIOCSTI_hi": "syscall(16, 0, 0x5412 | 1 << 32, 0)",
    "FIOASYNC": "syscall(16, 0, 0x5452, 0)", "FIOSETOWN": "syscall(16, 0, 0x8901, 0)",
    "fadvise": "syscall(221, ro, 0, 0, 4)", "readahead": "syscall(187, ro, 0, 4096)",
    "mincore": "syscall(27, page, 4096, page)", "flock": "syscall(73, ro, 1)",
    "preadv2_nowait": "syscall(327, ro, iov, 1, 0, 0, 8)", "preadv2_nowait_hi": "syscall(327, ro, iov, 1, 0, 0, 8 | 1 << 32)",
    "madvise_populate": "syscall(28, page, 4096, 22)", "madvise_populate_hi": "syscall(28, page, 4096, 22 | 1 << 32)",
    "madvise_willneed": "syscall(28, page, 4096, 3)", "madvise_pageout": "syscall(28, page, 4096, 21)",
    "mmap_populate": "syscall(9, 0, 4096, 3, 0x22 | 0x8000, -1, 0)", "prctl_set_mm": "syscall(157, 35, 0, 0, 0, 0)",
    "prctl_ptracer": "syscall(157, 0x59616d61, 1, 0, 0, 0)", "sched_setaffinity": "syscall(203, 0, 8, page)",
    "getrusage": "syscall(98, 0, page)",
}
#: Their allowed neighbours still work (the filter is an allow-list of forms, not a ban of the syscall).
_ALLOWED = {"F_GETFD": "syscall(72, 0, 1)", "F_SETFL": "syscall(72, 0, 4, 0)", "FIOCLEX": "syscall(16, ro, 0x5451)",
            "preadv2": "syscall(327, ro, iov, 1, 0, 0, 0)", "madvise_dontneed": "syscall(28, page, 4096, 4)",
            "mmap": "syscall(9, 0, 4096, 3, 0x22, -1, 0)", "prctl_get_name": "syscall(157, 16, page, 0, 0, 0)"}


def test_seccomp_refuses_every_dangerous_form_with_high_bits_too():
    probes = {**_REFUSED, **_ALLOWED}
    out = outcome("native", f'''
buf = ctypes.create_string_buffer(8192)
page = (ctypes.addressof(buf) + 4095) // 4096 * 4096
iov_t = (ctypes.c_uint64 * 2)(page, 16)
iov = ctypes.addressof(iov_t)
ro = os.open("/proc/self/comm", os.O_RDONLY)  # a candidate worker opens no installation file
wrong = []
for name, call in {probes!r}.items():
    rc, err = eval(call)
    got = "ok" if rc >= 0 else errno.errorcode.get(err, str(err))
    if got != ("ok" if name in {sorted(_ALLOWED)!r} else "EPERM"):
        wrong.append(name + "=" + got)
return "wrong: " + " ".join(wrong)
''', ("seccomp",))
    assert out == "wrong: ", out  # every refused form EPERM, every allowed neighbour works


def test_inputs_are_sealed_against_the_worker_itself():
    with start("native") as w:
        skip_unless(w, ("seccomp",))
        arena, spec = ready(w, source('''
mine = [m for m in open("/proc/self/maps").read().splitlines() if "kbench-inputs-probe" in m]
start = int(mine[0].split("-")[0], 16)
words = ["mprotect " + errno.errorcode.get(syscall(10, start, 4096, 3)[1], "ok")]  # PROT_READ | PROT_WRITE
for n in os.listdir("/proc/self/fd"):
    try:
        if "kbench-inputs" not in os.readlink("/proc/self/fd/" + n):
            continue
    except OSError:
        continue
    fd = int(n)
    words.append("pwrite " + errno.errorcode.get(syscall(18, fd, start, 4, 0)[1], "ok"))
    words.append("ftruncate " + errno.errorcode.get(syscall(77, fd, 0)[1], "ok"))
    words.append("mmap_rw " + errno.errorcode.get(syscall(9, 0, 4096, 3, 1, fd, 0)[1], "ok"))  # MAP_SHARED
    try:  # a writable reopen through /proc: the seal is on the file, so writing through it fails too
        os.write(os.open("/proc/self/fd/" + n, os.O_RDWR), b"xxxx")
        words.append("reopen_write ok")
    except OSError as e:
        words.append("reopen_write " + errno.errorcode.get(e.errno, "?"))
return " ".join(words)
'''))
        k = w.run(P.Call("cand", "p", spec), 10.0, None)
        assert isinstance(k.reply, P.Failure) and "OUTCOME " in k.reply.error, k.reply
        words = k.reply.error.split("OUTCOME ", 1)[1].split(" (line ")[0].split()
        got = dict(zip(words[::2], words[1::2]))
        assert got.pop("mprotect") == "EACCES", got
        assert all(v in ("EPERM", "EACCES") for v in got.values()), got  # whatever descriptor it finds, no write
        assert arena.seals() & (SIZE_SEALS | F_SEAL_FUTURE_WRITE) == SIZE_SEALS | F_SEAL_FUTURE_WRITE
        assert np.array_equal(arena.view("<f4", (16,), 0), np.arange(16, dtype=np.float32))
        arena.close()


def test_the_worker_is_stopped_between_calls():
    body = '''
import threading
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
return "spinning"
'''
    with start("reference") as w:
        w.stops = True
        arena, spec = ready(w, source(body))
        w.run(P.Call("cand", "p", spec), 10.0, None)
        assert w.thread_count() == 2 and w._all_stopped()
        before = w.cpu_ns()
        time.sleep(0.2)
        assert w.cpu_ns() - before < 5_000_000  # its spinning thread got no CPU while it was stopped
        arena.close()


def test_layers_are_reported_and_active_here():
    with start("candidate") as w:
        hello = w.layers()
    expected = {"netns", "ipcns", "mountns", "pidns", "rlimits", "nonroot", "tasks", "landlock", "seccomp"}
    if os.getuid() != 0:
        expected.add("userns")
    assert expected <= set(hello.active), (hello.active, hello.missing)
    assert not hello.missing, hello.missing
    assert set(hello.active) <= set(confine.LAYERS)


def test_a_spinning_candidate_ends_at_its_deadline():
    with start("candidate") as w:
        arena, spec = ready(w, "def forward(x, params, alloc):\n    while True:\n        pass\n")
        t0 = time.monotonic()
        with pytest.raises(WorkerError) as e:
            w.run(P.Call("cand", "p", spec), 1.0, None)
        assert e.value.kind == "timeout"
        assert time.monotonic() - t0 < 10.0  # bounded by the deadline, not by the candidate
        assert w.dead
        arena.close()


def test_doctor_lists_every_layer_and_its_state():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "kbench_cli.cli", "doctor"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert p.returncode in (0, 1), p.stderr
    assert "Traceback" not in p.stderr
    for layer in confine.LAYERS:
        line = next((ln for ln in p.stdout.splitlines() if ln.strip("│┃ ").startswith(layer)), None)
        assert line is not None and any(w in line for w in ("active", "missing", "partial", "not needed")), \
            (layer, p.stdout)
    assert (p.returncode == 0) == ("every layer holds" in p.stdout)
    timing = next(ln for ln in p.stdout.splitlines() if ln.startswith("timing: "))  # the wake-ups, said either way
    assert timing.startswith(("timing: idle cores poll", "timing: idle cores halt")), timing


def test_the_worker_carries_no_secret_and_no_command_line_of_the_grader(monkeypatch):
    import sys

    monkeypatch.setenv("KBENCH_TEST_SECRET", "s3cr3t-value")
    out = outcome("reference", '''
return "env " + str("KBENCH_TEST_SECRET" in os.environ)
''')
    assert out == "env False", out
    # The worker's initial environment block and command line, as the kernel shows them (read from outside):
    # the fork server's argv carries this process's sys.path; the warden zeroed both blocks.
    with start("candidate") as w:
        w.layers()
        environ = open(f"/proc/{w.pid}/environ", "rb").read()
        cmdline = open(f"/proc/{w.pid}/cmdline", "rb").read()
    assert b"s3cr3t-value" not in environ
    paths = [p.encode() for p in sys.path if len(p) > 4]
    assert paths and not any(p in cmdline for p in paths), cmdline[:200]


@pytest.mark.parametrize("run", RUNS)
def test_a_worker_cannot_widen_its_cpu_affinity(run):
    out = outcome(run, '''
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
    with start("candidate") as w:
        hello = w.layers()
    assert r.isolation == hello.active and "seccomp" in r.isolation and "landlock" in r.isolation
    assert r.to_dict()["isolation"] == hello.active
    lines = [e.message for e in events if e.step == "load"]
    assert any(ln == "sandbox layers: " + ", ".join(hello.active) for ln in lines), lines
    for layer, _ in hello.missing:
        assert any(ln.startswith(f"sandbox runs without {layer}: ") for ln in lines), (layer, lines)


def test_many_workers_start_and_stop_cleanly():
    done, pids = [], []

    def one() -> None:
        with start("candidate") as w:
            arena, spec = ready(w, "def forward(x, params, alloc):\n    return x['x'] + 1\n")
            k = w.run(P.Call("cand", "p", spec), 10.0, ("<f4", (16,)))
            done.append(k.output is not None and np.array_equal(k.output, np.arange(16, dtype=np.float32) + 1))
            pids.extend((w.pid, w.proc.pid))
            arena.close()

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert done == [True] * 4
    time.sleep(0.2)
    left = [p for p in pids if os.path.exists(f"/proc/{p}")]
    assert not left, left  # every worker and every warden is gone


def test_the_fork_server_imports_nothing_from_the_current_directory(tmp_path):
    """Modules beside the folder kbench runs in (a samples folder, say) must not be what the fork server
    imports before it forks a confined worker: it runs unconfined."""
    import subprocess
    import sys

    marker = tmp_path / "RAN"
    for name in ("numpy.py", "threadpoolctl.py", "kbench.py"):
        (tmp_path / name).write_text(f"open({str(marker)!r}, 'w').write({name!r})\nraise SystemExit(1)\n")
    kbench = os.path.join(os.path.dirname(sys.executable), "kbench")
    cand = tmp_path / "gelu.py"
    cand.write_text("def forward(x, params, alloc):\n    return x['x']\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([kbench, "eval", "L1_gelu", str(cand), "--mode", "naive"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=180)
    assert not marker.exists(), marker.read_text()
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr[-2000:]


def test_threads_running_before_the_read_drop_are_bound_by_it():
    """Landlock binds the thread that stacks a layer and those it starts later, not those already running.
    With two BLAS threads, OpenBLAS's pool thread was started before the confinement: native code that made it
    run a signal handler opened any installation file from there, after the drop (S9's probe again). Now the
    pool starts after the drop, and every thread refuses."""
    out = outcome("native", '''
import ctypes, time
import numpy as np
me = syscall(186)[0]  # gettid
seen = {}
def on_signal(signum):
    try:
        os.close(os.open(np.__file__, os.O_RDONLY))
        seen[syscall(186)[0]] = "opened"
    except OSError:
        seen[syscall(186)[0]] = "refused"
handler = ctypes.CFUNCTYPE(None, ctypes.c_int)(on_signal)
libc.signal.restype = ctypes.c_void_p
libc.signal(10, handler)  # SIGUSR1, run by whichever thread it is sent to
others = [int(t) for t in os.listdir("/proc/self/task") if int(t) != me]
for tid in others:
    syscall(234, os.getpid(), tid, 10)  # tgkill
    for _ in range(100):
        if tid in seen:
            break
        time.sleep(0.005)
return f"others {len(others)} " + " ".join(sorted(seen.get(t, "silent") for t in others))
''', needs=("landlock",), blas_threads=2)
    if out.startswith("others 0"):
        pytest.skip("no BLAS thread pool runs beside the worker's thread here")
    assert "opened" not in out and "refused" in out, out


def test_no_landlock_layer_is_stacked_while_another_thread_runs():
    """The check itself (what TSYNC, Landlock ABI 8, would make unnecessary), and what a candidate gets when a
    thread runs at the drop: a refusal that says why, not a worker whose other thread keeps its reads."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        with pytest.raises(confine.ThreadsRunning):
            confine._only_thread()
    finally:
        stop.set()
        t.join()
    starts_a_thread = "import threading\nthreading.Thread(target=__import__('time').sleep, args=(60,), daemon=True)" \
                      ".start()\ndef forward(x, params, alloc):\n    return x['x']\n"
    with start("candidate") as w:
        skip_unless(w, ("landlock",))
        # A trusted source (naive mode loads the reference so) whose import starts a thread; then the candidate.
        assert isinstance(w.call(P.Load(starts_a_thread, "ref", trusted=True), 10.0), P.Loaded)
        reply = w.call(P.Load("def forward(x, params, alloc):\n    return x['x']\n", "cand"), 10.0)
    assert isinstance(reply, P.Failure) and "could not be dropped" in reply.error, reply


@pytest.mark.parametrize("run", ("reference", "native"))
def test_reads_through_its_view_write_no_access_time(run):
    """A worker's reads leave no atime behind (a candidate's source chooses what the preimport reads; the next
    worker could stat it). Where a user namespace locks the host's atime flags they are kept, and the test
    says so."""
    out = outcome(run, '''
flags = os.statvfs(os.path.dirname(os.__file__)).f_flag
return "noatime" if flags & 1024 else "atime written"
''', ("mountns",))
    if out != "noatime" and os.geteuid() != 0:
        pytest.skip("the view's atime flags are the host's, locked in a user namespace")
    assert out == "noatime", out
