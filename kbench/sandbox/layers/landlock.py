"""Landlock: no file writes anywhere, reads only of the installation, no TCP, and (ABI >= 6) signals and
abstract unix sockets scoped to the worker. Unprivileged; three raw syscalls (the PyPI ``landlock``
binding only knows the ABI-1 ruleset layout, without ``handled_access_net`` or ``scoped``).

Inside the filesystem view this repeats what the view already ensures (read-only, the installation only);
without a mount namespace it is the layer that keeps files, the results store and other processes'
``/proc`` entries out of reach.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

from kbench.sandbox.layers import check, libc

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 1, 1 << 2, 1 << 3
_FS_V1 = (1 << 13) - 1
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_ALL = 1 | 2  # BIND_TCP | CONNECT_TCP
_SCOPE_ALL = 1 | 2  # ABSTRACT_UNIX_SOCKET | SIGNAL


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # the kernel's struct landlock_path_beneath_attr is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is absent or disabled."""
    v = libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(v), 0)


def prepare(read_roots: list[str], list_roots: list[str] | tuple[str, ...] = (),
            own_proc_files: tuple[str, ...] | None = None) -> int:
    """Build the ruleset while every path can still be opened; return its descriptor. ``read_roots``: read
    beneath; ``list_roots``: directories listed beneath, no file read; ``own_proc_files``: the files of
    ``/proc/self/`` that may be read (None: every one)."""
    version = abi()
    if version < 1:
        raise OSError(errno.EOPNOTSUPP, "Landlock is not available in this kernel")
    fs = _FS_V1 | (_FS_REFER if version >= 2 else 0) | (_FS_TRUNCATE if version >= 3 else 0) | \
        (_FS_IOCTL_DEV if version >= 5 else 0)
    attr = _RulesetAttr(fs, _NET_ALL if version >= 4 else 0, _SCOPE_ALL if version >= 6 else 0)
    size = 8 if version < 4 else (16 if version < 6 else 24)
    lib = libc()
    rfd = lib.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if rfd < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"landlock_create_ruleset: {os.strerror(e)}")
    read_dir = _FS_READ_FILE | _FS_READ_DIR
    rules = [(r, read_dir) for r in read_roots] + [(r, _FS_READ_DIR) for r in list_roots]
    if own_proc_files is None:
        rules.append(("/proc/self/", read_dir))
    else:
        rules += [("/proc/self/", _FS_READ_DIR)] + [(f"/proc/self/{name}", _FS_READ_FILE) for name in own_proc_files]
    rules += [("/dev/null", _FS_READ_FILE | _FS_WRITE_FILE), ("/dev/urandom", _FS_READ_FILE)]
    for path, access in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                access &= _FS_READ_FILE | _FS_WRITE_FILE  # a file takes only file rights (EINVAL otherwise)
            rule = _PathBeneath(access, fd)
            if lib.syscall(_SYS_ADD_RULE, ctypes.c_int(rfd), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                           ctypes.c_uint32(0)) != 0:
                e = ctypes.get_errno()
                os.close(rfd)
                raise OSError(e, f"landlock_add_rule({path}): {os.strerror(e)}")
        finally:
            os.close(fd)
    return rfd


def restrict(rfd: int) -> None:
    """Enforce the ruleset on this process (needs no_new_privs, set before)."""
    try:
        check(int(libc().syscall(_SYS_RESTRICT_SELF, ctypes.c_int(rfd), ctypes.c_uint32(0)) != 0),
              "landlock_restrict_self")
    finally:
        os.close(rfd)
