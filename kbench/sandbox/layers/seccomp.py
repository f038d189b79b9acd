"""seccomp: a default-deny syscall allow-list, with argument rules where a syscall has dangerous forms.

Every argument the kernel reads as a 32-bit int (fcntl's and ioctl's command, madvise's advice, pids) is
compared on its low 32 bits (``MASKED_EQ`` with 0xffffffff): a rule comparing all 64 bits can be passed
with high bits set (``TIOCSTI | 1 << 32`` — flatpak's CVE-2019-10063), and every rule is an allow-list of
forms, never a deny-list. What the rules keep out, beyond the syscalls missing from the list:

- ``fcntl``: only F_DUPFD(_CLOEXEC), F_GETFD/F_SETFD, F_GETFL, F_SETFL without O_ASYNC, F_GET_SEALS. No
  F_SETOWN/F_SETSIG (with O_ASYNC they make the kernel signal the grading process), no F_SETLEASE
  (stalls every other opener of a file), no F_NOTIFY, no locks.
- ``ioctl``: only TCGETS, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX (no TIOCSTI, no FIOASYNC/FIOSETOWN).
- ``madvise``: no MADV_POPULATE_* (a long uninterruptible fault-in keeps running on the timing core after
  SIGSTOP), no WILLNEED/COLD/PAGEOUT/REMOVE (page-cache and shared-memory side effects).
- ``mmap``: no MAP_POPULATE or MAP_LOCKED (the same long fault-in).
- ``preadv2``/``pwritev2``: no flags (RWF_NOWAIT tells which pages other processes have cached).
- ``prctl``: only reading options and naming threads.
- ``kill``/``tgkill``/``rt_(tg)sigqueueinfo``/``prlimit64``: only the worker itself.
- ``clone``: only threads (CLONE_THREAD); ``clone3`` gives ENOSYS so glibc falls back to clone.
- gone entirely: getrusage (its blocks read and major faults: whether the files read for it before its
  code ran were cached, S21), sysinfo (the machine's load and process count), fadvise64, readahead, mincore, flock, exec, fork, ptrace, process_vm_*, pidfd_*,
  sockets, namespaces, mounts, bpf, perf, io_uring, userfaultfd, keys, memfd_create, affinity changes.

The filter is built with libseccomp (PyPI ``pyseccomp``) once, in the fork server, with a placeholder for
the worker's pid; each worker patches its pid into the BPF bytes and loads them with one ``seccomp(2)``
call (~0.1 ms instead of ~2 ms), on every thread (TSYNC).
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from dataclasses import dataclass
from typing import Any

from kbench.sandbox.layers import libc

# Imported in the fork server: finding libseccomp runs ldconfig, which a confined worker can no longer do.
try:
    import pyseccomp as _seccomp
    MISSING = ""
except Exception as _e:  # noqa: BLE001 - reported by the seccomp layer
    _seccomp: Any = None
    MISSING = f"pyseccomp/libseccomp unavailable: {_e}"[:200]

LOW32 = 0xFFFFFFFF

#: Syscalls allowed in every form (their arguments cannot reach outside the worker, given the other layers).
ALLOWED: tuple[str, ...] = (
    # files already open or opened read-only (Landlock and the view decide which)
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "lseek", "close",
    "close_range", "open", "openat", "openat2", "stat", "fstat", "lstat", "newfstatat", "statx", "access",
    "faccessat", "faccessat2", "readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir",
    "dup", "dup2", "dup3", "pipe", "pipe2", "fsync", "fdatasync", "ftruncate", "umask", "statfs", "fstatfs",
    # memory
    "munmap", "mprotect", "mremap", "brk", "msync", "membarrier", "get_mempolicy",
    # threads and their synchronisation
    "futex", "futex_waitv", "get_robust_list", "set_robust_list", "set_tid_address", "rseq", "exit", "exit_group",
    "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler", "sched_get_priority_max",
    "sched_get_priority_min", "getpriority", "arch_prctl",
    # signals (aimed at itself: see the rules below)
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigpending", "rt_sigtimedwait",
    "sigaltstack", "restart_syscall", "alarm", "setitimer", "getitimer", "pause",
    # identity and time
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid",
    "getpgrp", "getpgid", "getsid", "getrlimit", "times", "uname", "clock_gettime",
    "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time", "getrandom", "timerfd_create",
    "timerfd_settime", "timerfd_gettime", "getcpu",
    # waiting on descriptors; the reply socket it was given (no new sockets)
    "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
    "epoll_pwait2", "eventfd", "eventfd2", "recvmsg", "sendmsg", "recvfrom", "sendto", "getsockopt", "getsockname",
    "shutdown", "wait4", "waitid",
    # a further Landlock layer on itself (it only narrows: a candidate worker drops its reads once loaded)
    "landlock_restrict_self",
)

F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL = 0, 1, 2, 3, 4
F_DUPFD_CLOEXEC, F_GET_SEALS = 1030, 1034
O_ASYNC = 0o20000
TCGETS, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX = 0x5401, 0x541B, 0x5421, 0x5451, 0x5450
MAP_LOCKED, MAP_POPULATE = 0x2000, 0x8000
CLONE_THREAD = 0x00010000
PR_GET_DUMPABLE, PR_SET_NAME, PR_GET_NAME, PR_GET_SECCOMP = 3, 15, 16, 21
PR_CAPBSET_READ, PR_GET_SECUREBITS, PR_GET_NO_NEW_PRIVS = 23, 27, 39
#: madvise advice an honest worker uses: normal, random, sequential, dontneed, free, (no)hugepage, (do)dump.
MADVISE_OK = (0, 1, 2, 4, 8, 14, 15, 16, 17)
#: Stands for the worker's pid in the precompiled program (above any pid_max, below the other constants).
PID_PLACEHOLDER = 0x3FFFFFF1


@dataclass(frozen=True)
class Form:
    """One allowed form of a syscall: every (argument, mask, value) must hold: (arg & mask) == value."""

    syscall: str
    where: tuple[tuple[int, int, int], ...]


def _low32(arg: int, value: int) -> tuple[int, int, int]:
    return (arg, LOW32, value)


#: Syscalls allowed only in these forms (one row each; rows of one syscall are alternatives).
FORMS: tuple[Form, ...] = (
    *(Form("fcntl", (_low32(1, cmd),)) for cmd in (F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_DUPFD_CLOEXEC,
                                                    F_GET_SEALS)),
    Form("fcntl", (_low32(1, F_SETFL), (2, O_ASYNC, 0))),
    *(Form("ioctl", (_low32(1, cmd),)) for cmd in (TCGETS, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX)),
    *(Form("madvise", (_low32(2, advice),)) for advice in MADVISE_OK),
    Form("mmap", ((3, MAP_POPULATE | MAP_LOCKED, 0),)),
    Form("preadv2", (_low32(5, 0),)),
    Form("pwritev2", (_low32(5, 0),)),
    *(Form("prctl", (_low32(0, op),)) for op in (PR_GET_DUMPABLE, PR_SET_NAME, PR_GET_NAME, PR_GET_SECCOMP,
                                                  PR_CAPBSET_READ, PR_GET_SECUREBITS, PR_GET_NO_NEW_PRIVS)),
    *(Form(name, (_low32(0, PID_PLACEHOLDER),)) for name in ("kill", "tgkill", "rt_sigqueueinfo",
                                                             "rt_tgsigqueueinfo")),
    Form("prlimit64", (_low32(0, 0),)),
    Form("prlimit64", (_low32(0, PID_PLACEHOLDER),)),
    Form("clone", ((0, CLONE_THREAD, CLONE_THREAD),)),
)

_SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 1, 1


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def build(me: int) -> Any:
    """The filter as a libseccomp object, for the worker whose pid is ``me``."""
    sc = _seccomp
    f = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
    f.set_attr(sc.Attr.CTL_TSYNC, 1)  # every thread, not only this one
    f.set_attr(sc.Attr.CTL_NNP, 1)
    for name in ALLOWED:
        try:
            f.add_rule(sc.ALLOW, name)
        except (OSError, ValueError, RuntimeError):
            pass  # not a syscall on this architecture
    for form in FORMS:
        args = [sc.Arg(a, sc.MASKED_EQ, mask, (me if v == PID_PLACEHOLDER else v) & mask) for a, mask, v in form.where]
        try:
            f.add_rule(sc.ALLOW, form.syscall, *args)
        except (OSError, ValueError, RuntimeError):
            pass
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    return f


def _precompile() -> tuple[bytes, int] | None:
    """The filter's BPF bytes (with the pid placeholder) and seccomp's syscall number."""
    if _seccomp is None:
        return None
    try:
        f = build(PID_PLACEHOLDER)
        fd = os.memfd_create("kbench-bpf", os.MFD_CLOEXEC)
        try:
            with os.fdopen(os.dup(fd), "wb") as out:
                f.export_bpf(out)
            prog = os.pread(fd, 1 << 20, 0)
        finally:
            os.close(fd)
        nr = _seccomp.resolve_syscall(_seccomp.Arch.NATIVE, "seccomp")
    except Exception:  # noqa: BLE001 - each worker then builds its own filter
        return None
    if not prog or len(prog) % 8 or prog.count(PID_PLACEHOLDER.to_bytes(4, sys.byteorder)) == 0:
        return None
    return prog, int(nr)


_COMPILED = _precompile()


def _load_compiled(prog: bytes, nr: int) -> None:
    me, mark = os.getpid().to_bytes(4, sys.byteorder), PID_PLACEHOLDER.to_bytes(4, sys.byteorder)
    code = bytearray(prog)
    for i in range(0, len(code), 8):  # struct sock_filter {u16 code; u8 jt, jf; u32 k}: patch k only
        if code[i + 4:i + 8] == mark:
            code[i + 4:i + 8] = me
    buf = ctypes.create_string_buffer(bytes(code), len(code))
    fprog = _SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc().syscall(ctypes.c_long(nr), ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
                      ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"seccomp(SET_MODE_FILTER): {os.strerror(e)}")


def apply() -> None:
    if _COMPILED is not None:
        _load_compiled(*_COMPILED)
        return
    if _seccomp is None:
        raise OSError(errno.ENOSYS, MISSING)
    build(os.getpid()).load()
