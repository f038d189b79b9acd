"""S13 kernel surfaces: fork by raw clone, clone3, namespaces, mounts, ptrace, seccomp, bpf, perf, io_uring...

Issue 16, class 3 and the design's seccomp allow-list: "gone entirely: exec, fork, ptrace, process_vm_*,
pidfd_*, sockets, namespaces, mounts, bpf, perf, io_uring, userfaultfd, keys, memfd_create". Each is called
raw, with arguments that are harmless when they reach the kernel (NULL pointers give EFAULT, queries change
nothing; a fork child exits at once). A call counts as blocked when it fails with EPERM or ENOSYS (what the
filter returns); the kernel reports ``ESCAPED`` for a call that succeeded and ``REACHED`` for one that got
past the filter to fail on its arguments. What must hold: neither.
"""

import os

SIGCHLD = 17
CALLS = {
    "clone_fork": (56, SIGCHLD, 0, 0, 0, 0), "clone3": (435, 0, 0), "vfork": (58,), "fork": (57,),
    "unshare_user": (272, 0x10000000), "unshare_mnt": (272, 0x00020000), "setns": (308, 0, 0),
    "mount": (165, 0, 0, 0, 0, 0), "umount2": (166, 0, 0), "chroot": (161, 0), "pivot_root": (155, 0, 0),
    "ptrace_traceme": (101, 0, 0, 0, 0), "process_vm_readv": (310, 1, 0, 0, 0, 0, 0),
    "seccomp_action_avail": (317, 2, 0, 0), "bpf": (321, 5, 0, 0), "perf_event_open": (298, 0, 0, -1, -1, 0),
    "io_uring_setup": (425, 1, 0), "userfaultfd": (323, 0), "keyctl": (250, 0, -3, 0), "add_key": (248, 0, 0, 0, 0, 0),
    "memfd_create": (319, 0, 0), "socket": (41, 1, 1, 0), "socketpair": (53, 1, 1, 0, 0),
    "open_by_handle_at": (304, -100, 0, 0), "name_to_handle_at": (303, -100, 0, 0, 0, 0), "kcmp": (312, 1, 1, 0, 0, 0),
    "move_pages": (279, 0, 0, 0, 0, 0, 0), "set_mempolicy": (238, 0, 0, 0), "mbind": (237, 0, 0, 0, 0, 0, 0),
    "setpriority": (141, 0, 0, 0), "sched_setattr": (314, 0, 0, 0), "ioprio_set": (251, 1, 0, 0),
    "personality_query": (135, 0xFFFFFFFF), "acct": (163, 0), "execve": (59, 0, 0, 0),
    "process_madvise": (440, 0, 0, 0, 0, 0), "pidfd_getfd": (438, 0, 0, 0), "mknodat": (259, -100, 0, 0, 0),
    "fanotify_init": (300, 0, 0), "inotify_init1": (294, 0), "landlock_create_ruleset": (444, 0, 0, 1),
    "vmsplice": (278, 0, 0, 0, 0), "splice": (275, 0, 0, 0, 0, 0, 0), "sched_setaffinity": (203, 0, 0, 0),
}


def forward(x, params, alloc):
    escaped, reached = [], []
    for name, call in CALLS.items():
        rc, err = _raw(*call)
        if rc == 0 and name in ("clone_fork", "vfork", "fork"):
            _raw(60, 0)  # the child of a fork that got through: gone at once
        if rc >= 0:
            escaped.append(name)
            if name in ("memfd_create", "socket", "userfaultfd", "inotify_init1", "io_uring_setup"):
                os.close(rc)
        elif err not in (1, 38):  # EPERM, ENOSYS: what the filter says
            reached.append(f"{name}={err}")
    if escaped or reached:
        raise RuntimeError("ESCAPED: " + ",".join(escaped) + " REACHED: " + ",".join(reached))
    return _gelu(x["x"])
