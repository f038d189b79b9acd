"""Confinement: every step that stands between a candidate and the rest of the machine, in the order applied.

The steps marked ``warden`` (environment, secrets, descriptors, namespaces, the filesystem view) come first,
then those marked ``worker`` (identity, limits, Landlock, seccomp), all before the worker loads anything;
it then reports which layers hold (its first frame, ``protocol.Hello``) and serves requests. Which process
runs the first half depends on who can make the pid namespace:

- as root, the fork server forks each worker straight into a pid namespace of its own (``fork_server``): the
  worker is one process, pid 1 there, and runs both halves itself;
- otherwise the fork server starts a *warden*, which never runs candidate code: it applies the warden
  half (a user namespace first), unshares the pid namespace and forks the worker, pid 1 of it, which
  applies the worker half. The warden only waits for the worker and exits as it did.

``STEPS`` is the one table: a step's name, what it blocks, how it is applied, and what still stops that
attack when the step cannot be applied on this machine. A step that fails is reported, never fatal (the
worker runs with the layers that hold, and every result records them: ``Result.isolation``); ``kbench
doctor`` prints the table with this machine's state. The modules under ``layers/`` know how to apply one
layer each. As nsjail's ``containProc`` does, the steps run in one place, in this order, every time.
"""

from __future__ import annotations

import ctypes
import errno
import itertools
import multiprocessing
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from kbench.sandbox import layers
from kbench.sandbox.layers import fsview, identity, landlock, namespaces, rlimits, seccomp
from kbench.sandbox.layers.namespaces import CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUTS

# ---------------------------------------------------------------------------------------- environment

#: Environment variables a worker keeps: what Python, numpy and BLAS read. Nothing else of the user's
#: shell (API keys, tokens, data paths) reaches a process that runs candidate code.
ENV_KEPT = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE")
ENV_KEPT_PREFIXES = ("LC_", "OPENBLAS_", "OMP_", "MKL_", "GOTO_", "BLIS_", "NUMEXPR_")


def worker_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The part of ``env`` a sandbox worker may see."""
    return {k: v for k, v in env.items() if k in ENV_KEPT or k.startswith(ENV_KEPT_PREFIXES)}


# ---------------------------------------------------------------------------------------- computed once

#: What the filesystem view holds and what Landlock lets a worker read, computed in the fork server
#: (resolving it costs milliseconds a worker start should not pay).
_PLAN: fsview.Plan | None = None
_ROOTS: list[str] | None = None


def read_roots() -> list[str]:
    global _ROOTS
    if _ROOTS is None:
        _ROOTS = fsview.read_roots()
    return _ROOTS


def view_plan() -> fsview.Plan:
    global _PLAN
    if _PLAN is None:
        _PLAN = fsview.plan()
    return _PLAN


if sys.platform == "linux":
    try:
        read_roots()
        view_plan()
    except Exception:  # noqa: BLE001 - computed again (and reported) in the worker
        pass


def prepare_view(base: str) -> None:
    """In the fork server: stage the filesystem view once (root only; ``fsview.prepare``). When it cannot,
    each warden builds the view itself on ``base``, and reports the mount namespace missing if that fails."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return
    try:
        fsview.prepare(base, view_plan())
    except Exception:  # noqa: BLE001 - the wardens fall back to building it (and report why it fails)
        pass


# ---------------------------------------------------------------------------------------- the table

@dataclass
class Context:
    """What the steps share while they run: the worker's configuration and what has held so far."""

    cfg: dict[str, Any]
    keep_fds: tuple[int, ...] = ()
    outer_pid: int = 0
    active: list[str] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    ruleset: int | None = None
    pid1: bool = False  # one process: the fork server forked it as pid 1 of a pid namespace of its own

    def holds(self, name: str) -> bool:
        return name in self.active


@dataclass(frozen=True)
class Step:
    name: str  # the layer's name in reports
    blocks: str  # what it stops, in words
    how: str  # how it is applied, in one line
    when_missing: str  # what still stops those attacks without it
    warden: Callable[[Context], str | None] | None = None  # before the worker is forked; returns the name held
    worker: Callable[[Context], str | None] | None = None  # in the worker, before any candidate code
    layer: bool = True  # reported as a layer (False: a step that always applies)


class NotNeeded(Exception):
    """A step that does not apply on this machine (a user namespace when running as root): not missing."""


def _environment(ctx: Context) -> None:
    kept = worker_environment(os.environ)
    os.environ.clear()  # the fork server started with a clean environment; this is the second line
    os.environ.update(kept)
    os.environ["HOME"] = "/"


def _authkey(ctx: Context) -> None:
    # The grading process's multiprocessing key (it authenticates connections to its listeners and managers)
    # came with the process object: replace it before any candidate code can read it.
    multiprocessing.current_process().authkey = os.urandom(32)


def _command_line(ctx: Context) -> None:
    """Zero the command line and the initial environment block the fork server passed down: they hold the
    grading process's sys.path (``/proc/self/cmdline``) and sit in every worker's own memory."""
    with open("/proc/self/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    arg_start, arg_end, env_start, env_end = (int(fields[i]) for i in (45, 46, 47, 48))
    for start, end in ((arg_start, arg_end), (env_start, env_end)):
        if 0 < start < end:
            ctypes.memset(start, 0, end - start)


def _descriptors(ctx: Context) -> None:
    close_inherited(ctx.keep_fds)


def _userns(ctx: Context) -> None:
    if os.geteuid() == 0:
        raise NotNeeded("running as root: the other namespaces need no user namespace")
    namespaces.enter_user_namespace()


def _netns(ctx: Context) -> None:
    namespaces.unshare(CLONE_NEWNET, "CLONE_NEWNET")


def _ipcns(ctx: Context) -> None:
    import socket

    namespaces.unshare(CLONE_NEWIPC | CLONE_NEWUTS, "CLONE_NEWIPC|CLONE_NEWUTS")
    socket.sethostname("kbench-worker")  # the namespace starts with the machine's name


def _mountns(ctx: Context) -> None:
    namespaces.unshare(CLONE_NEWNS, "CLONE_NEWNS")  # as root: a copy of the fork server's, view included
    if fsview.PREPARED is not None:
        fsview.enter(fsview.PREPARED)
    else:
        fsview.build(ctx.cfg["view_dir"], view_plan())


def _pidns(ctx: Context) -> None:
    if ctx.pid1:
        return  # forked into a pid namespace of its own by the fork server (pid 1 there: checked by enter)
    namespaces.unshare(CLONE_NEWPID, "CLONE_NEWPID")


def _own_proc(ctx: Context) -> None:
    if not ctx.holds("pidns"):
        return
    if not ctx.holds("mountns"):
        raise OSError("no mount namespace to mount a /proc of its own in: /proc lists every process")
    namespaces.mount_own_proc()


def _rlimits(ctx: Context) -> None:
    rlimits.apply(int(ctx.cfg["memory_limit_mb"]))


def _identity(ctx: Context) -> str:
    name = identity.become_unprivileged(ctx.outer_pid, ctx.holds("mountns"), read_roots(),
                                        ctx.holds("userns"))
    if name == "nocaps":
        ctx.missing.append(("nonroot", "the interpreter is not readable by an unprivileged uid and there is no "
                                       "mount namespace to show it: uid 0 kept without capabilities"))
    return name


def _tasks(ctx: Context) -> None:
    if os.getuid() == 0 and not ctx.holds("userns"):
        raise OSError("uid 0 is exempt from RLIMIT_NPROC")


def _death_signal(ctx: Context) -> None:
    # After every credential change: the kernel clears the parent-death signal when credentials change.
    layers.die_with_parent()


def _no_new_privs(ctx: Context) -> None:
    import pyprctl

    pyprctl.set_no_new_privs()


#: A candidate worker's second Landlock layer, reading no file but a few of its own /proc: prepared while paths
#: can still be named, enforced by ``drop_reads`` before its candidate's module runs.
_NO_READS: int | None = None
#: What it may still read of its own /proc: no counter of its own (stat, status, io, sched, schedstat: major
#: faults, blocks read, I/O waits, context switches). The preimport and the page loads before the drop read
#: from disk exactly when nobody had those files cached, and the candidate's top level could read its counters
#: (S21). Its /proc's directories stay listable (its pid, its threads, its descriptors).
OWN_PROC_READABLE = ("maps", "cmdline", "environ", "comm", "mountinfo", "limits")


class ThreadsRunning(OSError):
    """A Landlock layer was not stacked: other threads run, or their number could not be read."""


def _only_thread() -> None:
    """Landlock binds the thread that stacks a layer and the threads it starts afterwards, not those already
    running (LANDLOCK_RESTRICT_SELF_TSYNC, Landlock ABI 8, would bind them all): a thread started earlier, by
    a module's import or by OpenBLAS's pool, would keep every right a layer takes away, and native code can make
    any thread of its process run what it wants. So a layer is stacked only on a process of one thread."""
    try:
        n = len(os.listdir("/proc/self/task"))
    except OSError as e:
        raise ThreadsRunning(e.errno, f"its threads could not be counted ({e.strerror})") from None
    if n != 1:
        raise ThreadsRunning(errno.EBUSY, f"{n} threads were running: Landlock would bind only the calling one")


def _landlock(ctx: Context) -> None:
    global _NO_READS
    # Its own /proc lists only its own processes: let it look (tests show the pid namespace that way).
    own_proc = ["/proc"] if ctx.holds("pidns") and ctx.holds("mountns") else []
    _only_thread()
    landlock.restrict(landlock.prepare(read_roots() + own_proc))
    if ctx.cfg.get("role") == "candidate":
        _NO_READS = landlock.prepare([], list_roots=own_proc, own_proc_files=OWN_PROC_READABLE)


def drop_reads() -> bool:
    """Stack the candidate worker's second Landlock layer: from here on it opens no file of the installation.
    Its candidate's imports have run (loading a module reads files); what runs next (``init``, every call)
    could time its reads of installation files, whose pages are the page cache every process shares, and so
    tell which files others read lately, or leave a message for the next worker in which pages it loaded
    (S9). Once only; False when there is no such layer (not a candidate worker, or Landlock missing);
    ``ThreadsRunning`` when another thread runs (``_only_thread``)."""
    global _NO_READS
    fd, _NO_READS = _NO_READS, None
    if fd is None:
        return False
    try:
        _only_thread()
    except ThreadsRunning:
        os.close(fd)
        raise
    landlock.restrict(fd)
    return True


PAGE = os.sysconf("SC_PAGE_SIZE")
#: MADV_POPULATE_READ (Linux 5.14): fill the page tables of a mapping, reading what is not cached.
_MADV_POPULATE_READ = 22
#: The installation-file mappings whose every page is in the page tables, or always cached: (start, end).
#: Mappings made later (a module the preimport loaded) are touched page by page at the drop
#: (``prefault_new_mappings``).
_LOADED: set[tuple[int, int]] = set()
#: ``sys.modules`` when _LOADED was taken: its length and its last name (modules are appended as imported).
_MODULES_MARK: tuple[int, str] | None = None


def _mark_modules() -> None:
    global _MODULES_MARK
    _MODULES_MARK = (len(sys.modules), next(reversed(sys.modules)))


def _extension_loaded_since_mark() -> bool:
    """Whether an extension module (what maps a library after start-up) may have been imported since
    ``_mark_modules``. Only the names added since are looked at: touching every module object, as a scan of
    ``sys.modules`` does, writes their reference counts and copies each page that holds one (~1.7 ms of a
    worker's start)."""
    if _MODULES_MARK is None:
        return True
    n, last = _MODULES_MARK
    added = len(sys.modules) - n
    if added < 0:
        return True  # modules were removed: the mark no longer says what is new
    names = list(itertools.islice(reversed(sys.modules), added + 1))
    if len(names) != added + 1 or names[-1] != last:
        return True
    return any(str(getattr(sys.modules.get(name), "__file__", "") or "").endswith((".so", ".pyd"))
               for name in names[:-1])


def file_mappings(sizes_known: bool = True) -> list[tuple[int, int, bool]]:
    """(start, end, whether the end is known to be within the file) of this process's readable mappings of
    installation files: its shared libraries and extension modules, not the grader's arenas or devices. Cut
    at the file's end when its size can be read (a load past it is SIGBUS); an unprivileged worker cannot
    stat the interpreter under a 0700 home, whose mappings keep their full length. ``sizes_known=False``:
    no size is looked up (every mapping whole)."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    sizes: dict[str, int] = {}
    out = []
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or not parts[1].startswith("r") or not parts[5].startswith("/"):
            continue
        path = parts[5]
        if path.startswith(("/dev/", "/memfd:", "/proc/")) or path.endswith("(deleted)"):
            continue
        if not sizes_known:
            sizes[path] = -1
        elif path not in sizes:
            try:
                sizes[path] = os.stat(path).st_size
            except OSError:
                sizes[path] = -1
        lo, hi = (int(v, 16) for v in parts[0].split("-"))
        size = sizes[path]
        end = hi if size < 0 else min(hi, -(-(lo + max(size - int(parts[2], 16), 0)) // PAGE) * PAGE)
        if end > lo:
            out.append((lo, end, size >= 0))
    return out


def pin_library_pages() -> int:
    """In the fork server, once: lock every page of the installation files it has mapped (numpy's extensions,
    OpenBLAS, libpython, ~60 MB) in memory. A worker's first load from a page of them faults (fork copies no
    page-table entries of a read-only file mapping): after a disk read when the page is not cached, quickly
    when it is. A candidate timing first loads learned which pages of numpy other processes ran lately, and
    could leave a message for the next worker, with no file opened (S20). Locked, every page is always
    cached: a first load says nothing. (Locks are not inherited: workers' memory limits are unchanged.)
    Returns the pages locked; OSError when the kernel refuses (a user without CAP_IPC_LOCK past
    RLIMIT_MEMLOCK): workers then populate their own page tables (``_prefault``)."""
    lib = layers.libc()
    for lo, end, _ in file_mappings():
        if lib.mlock(ctypes.c_void_p(lo), ctypes.c_size_t(end - lo)) != 0:
            err = ctypes.get_errno()
            lib.munlockall()
            raise OSError(err, f"mlock: {os.strerror(err)}")
    _LOADED.update((lo, end) for lo, end, _ in file_mappings())
    _mark_modules()
    return sum(end - lo for lo, end in _LOADED) // PAGE


def _prefault(ctx: Context) -> None:
    # Without the fork server's locked pages, the worker fills its own page tables: every page is then
    # mapped when its candidate runs (~15 ms of every start; locking costs the fork server ~once).
    if ctx.cfg.get("role") != "candidate":
        raise NotNeeded("only a candidate worker runs code that could time its first loads")
    if _LOADED:  # the fork server's locked mappings (``pin_library_pages``)
        return
    lib = layers.libc()
    for lo, end, _ in file_mappings(sizes_known=False):  # past a file's end it stops with EFAULT, never SIGBUS
        if lib.madvise(ctypes.c_void_p(lo), ctypes.c_size_t(end - lo), _MADV_POPULATE_READ) != 0:
            err = ctypes.get_errno()
            if err != errno.EFAULT:
                raise OSError(err, f"madvise(MADV_POPULATE_READ): {os.strerror(err)}")
        _LOADED.add((lo, end))
    _mark_modules()


class _Pages:
    """Memory at an address as a read-only byte array (numpy's array interface: no copy, no ctypes call)."""

    def __init__(self, addr: int, n: int) -> None:
        self.__array_interface__ = {"data": (addr, True), "shape": (n,), "typestr": "|u1", "version": 3}


def prefault_new_mappings() -> int:
    """Before a candidate's code runs: load one byte of every page of the installation files mapped since
    ``_prefault`` or locked by the fork server (all of them when neither happened), so that no first load is
    left for the candidate to time. When no extension module was imported since, nothing can have been
    mapped: nothing to do. Returns the pages touched."""
    import numpy as np  # in the fork server already

    if _LOADED and not _extension_loaded_since_mark():
        return 0
    touched = 0
    for lo, end, within in file_mappings():
        if (lo, end) in _LOADED or not within:
            continue
        view = np.asarray(_Pages(lo, end - lo))
        int(view[::PAGE].max())
        touched += (end - lo) // PAGE
    return touched


def _pin(ctx: Context) -> None:
    cpu = ctx.cfg.get("cpu")
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(cpu)})  # the grader pins again from outside; seccomp forbids changing it


def _seccomp(ctx: Context) -> None:
    seccomp.apply()


STEPS: tuple[Step, ...] = (
    Step("environment", "the user's secrets in the shell (API keys, tokens, paths)",
         "the fork server starts with PATH, locale and BLAS variables only; the warden keeps no more",
         "—", warden=_environment, layer=False),
    Step("authkey", "the grading process's multiprocessing key",
         "replaced by a fresh random key", "—", warden=_authkey, layer=False),
    Step("cmdline", "the grading process's command line and sys.path (/proc/self/cmdline)",
         "the inherited argv and environment blocks are zeroed in memory", "—", warden=_command_line, layer=False),
    Step("descriptors", "files and pipes the fork server had open",
         "every descriptor but the reply socket is closed", "—", warden=_descriptors, layer=False),
    Step("userns", "nothing by itself: it lets a non-root user make the namespaces below",
         "a user namespace mapping only the invoking uid (non-root users)",
         "without it a non-root user gets no network, mount or pid namespace", warden=_userns),
    Step("netns", "every network connection (the worker sees no interface)",
         "a new, empty network namespace", "sockets are refused by seccomp and TCP by Landlock", warden=_netns),
    Step("ipcns", "System V IPC, POSIX message queues and the host name of other processes",
         "new IPC and UTS namespaces", "seccomp refuses the IPC syscalls", warden=_ipcns),
    Step("mountns", "every file outside the installation: no home, no data directory, no other sandbox; "
                    "stat, access and readlink see nothing else",
         "pivot_root into a read-only tmpfs holding the installation bind-mounted read-only, /dev/null, "
         "/dev/urandom (as root staged once by the fork server, in its own mount namespace)",
         "Landlock limits reads to the installation, but stat/access/readlink still see every path",
         warden=_mountns),
    Step("pidns", "every other process: the worker is pid 1 of its own pid namespace, /proc lists only it",
         "a new pid namespace (the worker is forked into it) and a /proc of its own",
         "seccomp limits signals to the worker itself, but /proc/<n> lists every process",
         warden=_pidns, worker=_own_proc),
    Step("rlimits", "memory past the cap (address space), big files, many open files, core dumps",
         "setrlimit AS, FSIZE (1 MiB), NOFILE (64), CORE (0)", "a memory bomb is stopped only by the OOM killer",
         worker=_rlimits),
    Step("nonroot", "root's powers: the worker's uid is unprivileged outside, with no capabilities",
         "a uid and gid of its own (2e9 + pid) when kbench runs as root; capabilities dropped",
         "root-owned files are guarded by the view and Landlock alone", worker=_identity),
    Step("tasks", f"more than {rlimits.TASK_CAP} threads or processes (the machine's pid space)",
         f"RLIMIT_NPROC {rlimits.TASK_CAP}, which applies to the worker's own uid",
         "seccomp allows threads only, without a bound", worker=_tasks),
    Step("pdeathsig", "a worker outliving the warden", "PR_SET_PDEATHSIG SIGKILL, after the identity change",
         "—", worker=_death_signal, layer=False),
    Step("no_new_privs", "regaining privileges through exec", "PR_SET_NO_NEW_PRIVS",
         "—", worker=_no_new_privs, layer=False),
    Step("landlock", "file writes anywhere, reads outside the installation (a candidate worker's candidate, once "
                     "loaded, reads no file: page-cache probes by read timing), TCP bind/connect, signals and "
                     "abstract sockets leaving the worker",
         "a Landlock ruleset (ABI 1-6 features as the kernel offers)",
         "the view is read-only anyway; without the view too, C-level writes (dir_fd, sqlite3) get through",
         worker=_landlock),
    Step("prefault", "page-cache probes by the timing of a first load from a mapped library page",
         "the fork server locks its library pages in memory (always cached); without that lock, MADV_POPULATE_READ "
         "on every installation-file mapping of a candidate worker; a library mapped later is loaded page by "
         "page before its candidate runs",
         "at the drop every page is loaded once instead (slower)", worker=_prefault, layer=False),
    Step("cpu", "more cores than the one timing runs on", "sched_setaffinity to the timing core", "—",
         worker=_pin, layer=False),
    Step("seccomp", "exec, fork, ptrace, process_vm_*, pidfd, signals and rlimits aimed at other processes, "
                    "affinity changes, sockets, namespaces, mounts, bpf, perf, io_uring, userfaultfd, keys, memfd, "
                    "fcntl leases/owners/signals, ioctl other than a few, page-cache probes (fadvise, mincore, "
                    "RWF_NOWAIT), populate-style madvise/mmap",
         "a default-deny allow-list with argument rules on the low 32 bits, loaded on every thread",
         "exec, fork and signals are stopped only by the audit hook, which C calls bypass", worker=_seccomp),
)

LAYERS: tuple[str, ...] = tuple(s.name for s in STEPS if s.layer)
BLOCKS: dict[str, str] = {s.name: s.blocks for s in STEPS}
BLOCKS["nocaps"] = "every capability (uid 0 kept: the interpreter is not readable by an unprivileged uid)"


def _run(ctx: Context, step: Step, fn: Callable[[Context], str | None]) -> None:
    try:
        got = fn(ctx)
    except NotNeeded:
        return
    except Exception as e:  # noqa: BLE001 - a missing layer is reported, not fatal
        ctx.missing.append((step.name, _reason(e)))
        return
    second_half = fn is step.worker and step.warden is not None  # the warden's half already counted
    name = got if isinstance(got, str) else step.name
    if step.layer and not second_half and name not in ctx.active:
        ctx.active.append(name)


@dataclass(frozen=True)
class LayerReport:
    """What a worker managed to apply: active layer names, and for each missing one, why."""

    active: tuple[str, ...]
    missing: tuple[tuple[str, str], ...]


def enter(cfg: dict[str, Any], keep_fds: Iterable[int], announce: Callable[[int], None]) -> Context:
    """Run the warden's steps, fork the worker and return in it, after the worker's steps.

    ``announce(pid)`` is called in the warden with the worker's pid as the grading process sees it, before
    the worker applies anything; the warden then waits for the worker and exits as it did (it never returns).

    Where the fork server already forked this process as pid 1 of a pid namespace of its own (as root:
    ``fork_server``), there is no warden and no second fork: this process announces itself and runs both
    halves of the table, in the same order."""
    ctx = Context(cfg, tuple(keep_fds))
    if os.getpid() == 1:
        return _enter_as_pid1(ctx, announce)
    for step in STEPS:
        if step.warden is not None:
            _run(ctx, step, step.warden)
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid:  # the warden
        os.close(go_r)
        layers.die_with_parent()  # with the fork server
        try:
            announce(pid)
            os.write(go_w, pid.to_bytes(8, "little"))
        finally:
            os.close(go_w)
            close_inherited(())
        _wait_and_exit(pid)
    os.close(go_w)
    ctx.outer_pid = int.from_bytes(os.read(go_r, 8) or b"\0" * 8, "little")
    os.close(go_r)
    if not ctx.outer_pid:
        os._exit(1)  # the warden is gone
    for step in STEPS:
        if step.worker is not None:
            _run(ctx, step, step.worker)
    return ctx


def _enter_as_pid1(ctx: Context, announce: Callable[[int], None]) -> Context:
    ctx.pid1 = True
    layers.die_with_parent()  # with the fork server (set again after the identity change)
    try:
        ctx.outer_pid = int(os.readlink("/proc/self"))  # the fork server's /proc: this process's pid outside
    except (OSError, ValueError):
        os._exit(1)
    announce(ctx.outer_pid)
    for step in STEPS:
        if step.warden is not None:
            _run(ctx, step, step.warden)
    for step in STEPS:
        if step.worker is not None:
            _run(ctx, step, step.worker)
    return ctx


def report(ctx: Context) -> LayerReport:
    """The layers in table order; a layer that applied its warden half but not its worker half is missing."""
    missing = tuple(dict.fromkeys(ctx.missing))
    failed = {name for name, _ in missing}
    active = tuple(a for a in ctx.active if a not in failed or a == "nocaps")
    return LayerReport(active, missing)


def _wait_and_exit(pid: int) -> None:
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
    if os.WIFSIGNALED(status):  # die the same way, so the grading process sees which signal ended the worker
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be handled: signal.signal raised, and
            signal.signal(sig, signal.SIG_DFL)            # multiprocessing read sources for a traceback (~10 ms)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def close_inherited(keep: Iterable[int]) -> None:
    """Close every descriptor but ``keep`` (and stdio): nothing a candidate finds open leads out."""
    keep_set = sorted(set(keep) | {0, 1, 2})
    lo = 0
    for fd in keep_set:
        if fd > lo:
            os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, 1 << 16)


def not_needed() -> dict[str, str]:
    """Layers that do not apply on this machine, with why (reported as such, neither active nor missing)."""
    return {"userns": "running as root: the namespaces need no user namespace"} if os.geteuid() == 0 else {}


def missing_layers(active: Iterable[str]) -> list[str]:
    """The layers of ``LAYERS`` a worker with ``active`` lacks, leaving out those not needed on this machine
    (``nocaps`` stands for a partial ``nonroot``, which is missing)."""
    held, skipped = set(active), not_needed()
    return [name for name in LAYERS if name not in held and name not in skipped]


def landlock_abi() -> int:
    return landlock.abi()


def _reason(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:200]
