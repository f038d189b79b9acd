"""Namespaces: the worker's own network, IPC, mount and pid namespaces, and (when kbench does not run as
root) a user namespace that gives it the right to make them.

The order matters and is the one ``confine`` applies: the *warden* (the process the fork server starts,
which never runs candidate code) unshares the user namespace first (non-root only), then network, IPC and
mount namespaces, builds the filesystem view (``fsview``) in its new mount namespace, and unshares the pid
namespace last; its next child — the worker — is pid 1 there, and sees no other process. The worker then
mounts a ``/proc`` of its own pid namespace.

Root needs no user namespace for any of this. A non-root user gets one that maps only its own uid (to 0
inside, with capabilities only over the namespaces it owns; the worker drops them before candidate code).
"""

from __future__ import annotations

import ctypes
import os

from kbench.sandbox.layers import check, libc

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2


def unshare(flags: int, what: str) -> None:
    check(libc().unshare(ctypes.c_int(flags)), f"unshare({what})")


def enter_user_namespace() -> None:
    """A user namespace mapping only this process's uid and gid (to 0 inside). Unprivileged users may make
    one where the kernel allows it (``user.max_user_namespaces`` > 0, no distribution policy against it)."""
    uid, gid = os.geteuid(), os.getegid()
    unshare(CLONE_NEWUSER, "CLONE_NEWUSER")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = (lambda s: s.encode() if s is not None else None)
    check(libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
          f"mount {source or fstype or ''} on {target}")


def mount_own_proc() -> None:
    """A /proc of this pid namespace (the worker's own processes only; ``subset=pid`` hides /proc/sys and
    the other system files), read-only."""
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "subset=pid")
    except OSError:  # kernels before 5.8 have no subset=pid
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY)


def in_own_user_namespace() -> bool:
    """This process runs in a user namespace mapping a single id (the one ``enter_user_namespace`` makes)."""
    try:
        with open("/proc/self/uid_map") as f:
            lines = f.read().split("\n")
    except OSError:
        return False
    rows = [line.split() for line in lines if line.strip()]
    return len(rows) == 1 and rows[0][2] == "1"
