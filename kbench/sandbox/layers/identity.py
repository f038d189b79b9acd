"""Who the worker is: an unprivileged uid outside, no capabilities anywhere, nothing to regain them with.

- Root, with the filesystem view (``fsview``): the worker takes a uid and gid of its own,
  ``WORKER_ID_BASE + its pid`` (unique among live workers, owned by no file, in no group), so it is
  unprivileged on the machine, other workers' signals and files are not its own, and ``RLIMIT_NPROC``
  counts its tasks alone. The view makes the installation readable to that uid even under a 0700 /root.
- Root without the view (no mount namespace here) where the interpreter is not readable by others: uid 0
  stays, every capability is dropped and root's securebits are locked; reported as ``nocaps``, a weaker layer.
- Not root: the worker is already unprivileged outside; in its own user namespace it drops the
  capabilities it holds over the namespaces it made.
"""

from __future__ import annotations

import os
import stat
from typing import Any

try:
    import pyprctl as _prctl
except Exception:  # noqa: BLE001 - reported as a missing layer
    _prctl: Any = None

#: Worker uids (and gids) are this plus the worker's pid (pids stay below 2**22 on Linux).
WORKER_ID_BASE = 2_000_000_000


def _drop_capabilities() -> None:
    p = _prctl
    for cap in p.Cap:
        try:
            p.capbset_drop(cap)
        except OSError:
            pass
    p.cap_ambient_clear_all()
    bits = p.Secbits
    p.set_securebits(bits.NOROOT | bits.NOROOT_LOCKED | bits.NO_SETUID_FIXUP | bits.NO_SETUID_FIXUP_LOCKED
                     | bits.KEEP_CAPS_LOCKED | bits.NO_CAP_AMBIENT_RAISE | bits.NO_CAP_AMBIENT_RAISE_LOCKED)
    p.CapState(effective=set(), permitted=set(), inheritable=set()).set_current()


def readable_by_others(path: str) -> bool:
    """Every directory on the way to ``path`` searchable by 'other', and ``path`` itself readable."""
    parts = os.path.realpath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        try:
            st = os.stat(os.sep.join(parts[:i]) or os.sep)
        except OSError:
            return False
        if not st.st_mode & (stat.S_IXOTH if stat.S_ISDIR(st.st_mode) else stat.S_IROTH):
            return False
    return True


def become_unprivileged(outer_pid: int, has_view: bool, roots: list[str], in_user_ns: bool) -> str:
    """Apply the identity layer; return its name as reported: ``nonroot`` or ``nocaps``."""
    if _prctl is None:
        raise OSError("pyprctl is not installed")
    if os.geteuid() != 0:
        return "nonroot"  # already unprivileged, and no user namespace of its own to hold capabilities in
    if in_user_ns:
        _drop_capabilities()  # uid 0 here is the invoking user outside; its namespace capabilities go
        return "nonroot"
    if has_view or all(readable_by_others(r) for r in roots if os.path.exists(r)):
        for cap in _prctl.Cap:
            try:
                _prctl.capbset_drop(cap)
            except OSError:
                pass
        _prctl.cap_ambient_clear_all()
        uid = WORKER_ID_BASE + int(outer_pid)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # clears permitted and effective capabilities
        return "nonroot"
    _drop_capabilities()
    return "nocaps"
