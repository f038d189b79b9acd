"""The worker's filesystem: a new root that holds only the installation, read-only.

Built by the warden in its own mount namespace (``namespaces``), bubblewrap-style: a small tmpfs becomes
the new root; the interpreter's prefix, the standard library, site-packages, numpy, kbench's own package
and the system libraries are bind-mounted into it at their usual paths, each read-only; ``/dev/null`` and
``/dev/urandom`` are bound in; ``/proc`` is an empty mount point (the worker mounts a /proc of its own pid
namespace there). ``pivot_root`` then makes it the root and the old root is detached. ``stat``, ``access``,
``readlink`` and directory listings see nothing else: no home directory, no other user's files, no
kbench data directory, no other worker's sandbox.

Because every directory on the way to the installation is the view's own (mode 755), a worker with an
unprivileged uid imports numpy from its usual path even where Python sits under a 0700 ``/root``.

What goes into the view is computed once, in the fork server (``plan``). Running as root, the fork server also
stages the view itself once, in a mount namespace of its own (``prepare``): each warden's new mount
namespace is a copy of that one, and entering the view is one ``pivot_root`` and one unmount instead of
~30 mount and file system calls. Elsewhere (a user namespace per warden) each warden builds it (``build``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass

from kbench.sandbox.layers import check, libc
from kbench.sandbox.layers.namespaces import (CLONE_NEWNS, MNT_DETACH, MS_BIND, MS_NODEV, MS_NOSUID, MS_PRIVATE,
                                              MS_RDONLY, MS_REC, MS_REMOUNT, mount, unshare)

#: Device files a worker may open (reads from urandom, writes to null).
DEVICES = ("/dev/null", "/dev/urandom")
_SYS_PIVOT_ROOT = 155  # x86_64
_ST_TO_MS = {1: MS_RDONLY, 2: MS_NOSUID, 4: MS_NODEV, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}
_MS_NOATIME, _ATIME_FLAGS = 1024, 1024 | 2048 | (1 << 21)  # noatime; noatime, nodiratime, relatime


@dataclass(frozen=True)
class Plan:
    """What the view holds: bind mounts (path, is a directory) and symlinks (path, target)."""

    binds: tuple[tuple[str, bool], ...]
    links: tuple[tuple[str, str], ...]


def _installation() -> list[str]:
    """The installation only: the standard library and site-packages, numpy, kbench's package and the system
    libraries. Not the other sys.path entries: those are the user's (the grading script's
    folder, PYTHONPATH, a checkout with its .env files), and a worker imports nothing from them."""
    import numpy

    kbench_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # Not the prefixes themselves: a virtualenv's prefix holds pip.conf (private index tokens), bin/ and more.
    paths = {kbench_dir, os.path.dirname(numpy.__file__), "/usr/lib", "/lib", "/lib64", "/usr/lib64",
             "/usr/local/lib", "/etc/ld.so.cache"}
    got = sysconfig.get_paths()
    paths.update(got[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in got)
    return sorted(p for p in paths if os.path.exists(p))


def read_roots() -> list[str]:
    """The installation's trees, resolved (what Landlock lets a worker read, and what the view binds)."""
    return sorted({os.path.realpath(p) for p in _installation()})


def _symlinks_on_the_way(path: str) -> list[tuple[str, str]]:
    """Every symlink among ``path``'s ancestors (and itself), as (link, target), outermost first."""
    out, cur = [], "/"
    for part in os.path.abspath(path).strip("/").split("/"):
        cur = os.path.join(cur, part)
        if os.path.islink(cur):
            out.append((cur, os.readlink(cur)))
            cur = os.path.realpath(cur)
    return out


def plan() -> Plan:
    roots = read_roots()
    top = [r for r in roots if not any(o != r and r.startswith(o.rstrip("/") + "/") for o in roots)]
    links: dict[str, str] = {}
    for p in _installation() + [os.path.dirname(m.__file__ or "") for m in (sys.modules.get("numpy"),) if m]:
        for link, target in _symlinks_on_the_way(p):
            links.setdefault(link, target)
    binds = tuple((r, os.path.isdir(r)) for r in top) + tuple((d, False) for d in DEVICES if os.path.exists(d))
    return Plan(binds, tuple(sorted(links.items())))


def _flags_of(path: str) -> int:
    """The mount flags of the mount holding ``path``: a remount inside a user namespace must keep them."""
    f = os.statvfs(path).f_flag
    return sum(ms for st, ms in _ST_TO_MS.items() if f & st)


def _make(path: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(path, mode=0o755, exist_ok=True)
        return
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if not os.path.exists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


def _stage(base: str, view: Plan) -> None:
    """Mount the view's tmpfs on ``base`` (an existing, empty directory) and fill it; leave it read-only."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount propagates back to the host
    mount("kbench-view", base, "tmpfs", MS_NOSUID | MS_NODEV, "size=256k,mode=755")
    os.umask(0o022)
    for path, is_dir in view.binds:
        dst = base + path
        _make(dst, is_dir)
        try:
            mount(path, dst, None, MS_BIND)
        except OSError:  # a tree holding mounts of its own that a user namespace locks: bind it whole
            mount(path, dst, None, MS_BIND | MS_REC)
        keep = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        try:
            # No access time written through the view: a worker's reads (the preimport a candidate's source
            # chooses) leave no mark in an inode's atime for the next worker's stat to see.
            mount(None, dst, None, keep | (_flags_of(path) & ~_ATIME_FLAGS) | _MS_NOATIME)
        except OSError:  # inside a user namespace the host's atime flags are locked: kept
            mount(None, dst, None, keep | _flags_of(path))
    for link, target in view.links:
        dst = base + link
        if not os.path.lexists(dst):
            os.makedirs(os.path.dirname(dst), mode=0o755, exist_ok=True)
            os.symlink(target, dst)
    os.makedirs(base + "/proc", mode=0o755, exist_ok=True)
    # Read-only twice: the file system itself (no mount of it anywhere can write it, so a view the fork server
    # shares with every worker carries nothing from one to the next), and this mount of it.
    mount(None, base, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    mount(None, base, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def enter(base: str) -> None:
    """Make the view mounted on ``base`` this mount namespace's root and detach everything else (the old
    root is stacked on the new one by ``pivot_root(".", ".")`` and unmounted from there: no directory for
    it needed in the read-only view)."""
    os.chdir(base)
    check(libc().syscall(_SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    check(libc().umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")


def build(base: str, view: Plan) -> None:
    """Make ``base`` (an existing, empty directory) the root of this mount namespace, holding ``view``."""
    _stage(base, view)
    enter(base)


#: The view the fork server staged once, in a mount namespace of its own (``prepare``): the directory it is
#: mounted on there. Every warden's new mount namespace is a copy holding it, so a warden only pivots into it.
PREPARED: str | None = None


def prepare(base: str, view: Plan) -> None:
    """In the fork server (root only): a mount namespace of its own holding the view on ``base``, staged once
    for every worker it forks (the tmpfs is read-only as a file system: sharing it gives workers no channel to
    one another). Raises OSError when it cannot."""
    global PREPARED
    unshare(CLONE_NEWNS, "CLONE_NEWNS")
    _stage(base, view)
    PREPARED = base
