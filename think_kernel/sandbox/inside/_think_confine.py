"""Confinement applied inside the sandbox: identity, capabilities, rlimits and Landlock
(the seccomp filter lives in ``_think_seccomp``).

Stdlib only (ctypes + prctl), because this file runs in the sandboxed interpreter before any
user code.
"""

from __future__ import annotations

import ctypes
import os
import resource
import struct

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36

# Landlock syscalls share their numbers on every architecture.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446

ENOSYS = 38
PR_SET_DUMPABLE = 4
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAP_KILL, CAP_SETGID, CAP_SETUID = 5, 6, 7
#: What a root launcher keeps: switching its children to the session uid, and killing them.
LAUNCHER_CAPS = (CAP_KILL, CAP_SETGID, CAP_SETUID)
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
_CAP_V3 = 0x20080522


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    ret = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return int(ret) if ret > 0 else 0


_FS_ABI = {1: 0x1FFF, 2: 0x3FFF, 3: 0x7FFF, 4: 0x7FFF, 5: 0xFFFF}
_FILE_BITS = 0x1 | 0x2 | 0x4 | 0x4000 | 0x8000  # execute, write, read, truncate, ioctl_dev
_READ_BITS = 0x1 | 0x4 | 0x8  # execute, read_file, read_dir


def apply_landlock(read_paths: list[str], write_paths: list[str]) -> int:
    """Restrict this process to reading ``read_paths`` and writing ``write_paths``.

    Also denies all TCP bind/connect (ABI >= 4) and signals to processes outside the sandbox
    and abstract unix sockets (ABI >= 6). Returns the ABI used.
    """
    abi = landlock_abi()
    if abi <= 0:
        raise OSError(ENOSYS, "landlock unavailable")
    fs_all = _FS_ABI.get(abi, 0xFFFF)
    net_all = 0x3 if abi >= 4 else 0
    scoped = 0x3 if abi >= 6 else 0
    attr = struct.pack("<QQQ", fs_all, net_all, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    abuf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(
        _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, abuf, ctypes.c_size_t(size), ctypes.c_uint32(0)),
        "landlock_create_ruleset",
    )
    try:
        for paths, access in ((read_paths, _READ_BITS), (write_paths, fs_all)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    bits = access if os.path.isdir(path) else access & _FILE_BITS
                    rule = ctypes.create_string_buffer(struct.pack("<Qi", bits, fd), 12)
                    _check(
                        _libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, 1, rule, ctypes.c_uint32(0)),
                        f"landlock_add_rule {path}",
                    )
                finally:
                    os.close(fd)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)), "restrict")
    finally:
        os.close(ruleset)
    return abi


def drop_privileges(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` for good (no supplementary groups); no-op when already them.
    Leaving uid 0 this way clears every capability (capabilities(7))."""
    if os.getuid() == uid and os.geteuid() == uid:
        return
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def keep_only_capabilities(keep: tuple[int, ...]) -> None:
    """Drop every capability but ``keep`` from the bounding, ambient, inheritable, permitted
    and effective sets (a root launcher needs no more than :data:`LAUNCHER_CAPS`)."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        if cap not in keep and _libc.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1:
            if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0:
                # No CAP_SETPCAP (bwrap already dropped it): the bounding set stays, but the
                # permitted set below is what counts, and children run with no_new_privs.
                break
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    mask = sum(1 << c for c in keep)
    header = struct.pack("<Ii", _CAP_V3, 0)
    data = struct.pack("<6I", mask, mask, 0, 0, 0, 0)  # effective, permitted, inheritable x2
    _check(_libc.syscall(_SYS_CAPSET[os.uname().machine], header, data), "capset")


def set_no_new_privs() -> None:
    """execve can never grant privileges again (setuid binaries, file capabilities)."""
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def set_dumpable(on: bool) -> None:
    """Non-dumpable: /proc/PID files that expose memory or environment become root's, so
    same-uid processes (a non-root kernel's sandbox) cannot open the launcher's memory."""
    _libc.prctl(PR_SET_DUMPABLE, 1 if on else 0, 0, 0, 0)


class files_as:  # noqa: N801 (used like a function: ``with files_as(uid, gid):``)
    """Act on files as ``uid``/``gid`` in this thread only: files the block creates (scratch
    dirs, caches written while preloading) belong to the session.

    Only the filesystem ids change (setfsuid(2) is per thread, unlike glibc's setresuid,
    which every thread follows): the real, effective and saved uids stay the launcher's, so
    the session's processes can neither signal nor trace it meanwhile, and the other thread
    that serves the kernel keeps its own identity."""

    def __init__(self, uid: int | None, gid: int | None) -> None:
        self.ids = (uid, gid)

    def __enter__(self) -> None:
        uid, gid = self.ids
        if uid is not None and gid is not None:
            _libc.setfsgid(gid)
            _libc.setfsuid(uid)
            # setfsuid reports no error: an invalid id (-1) only reads the one in force.
            if _libc.setfsuid(-1) != uid or _libc.setfsgid(-1) != gid:
                raise OSError("cannot act on files as the session's uid")

    def __exit__(self, *exc: object) -> None:
        if self.ids[0] is not None:
            _libc.setfsuid(0)
            _libc.setfsgid(0)


def set_parent_death_signal(sig: int) -> None:
    """Have the kernel send ``sig`` to us when our parent dies."""
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


def set_child_subreaper() -> None:
    """Adopt orphaned descendants so none escapes to init."""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def set_limits(limits: dict[str, int], warm: bool = False) -> None:
    """Apply rlimits; 0 means unlimited. A warm worker keeps an unlimited hard CPU limit so
    each cell can get a fresh soft budget (see :func:`renew_cpu_budget`)."""
    inf = resource.RLIM_INFINITY

    def lim(key: str) -> int:
        v = int(limits.get(key, 0))
        return v if v > 0 else inf

    cpu = lim("cpu_seconds")
    if warm:
        renew_cpu_budget(int(limits.get("cpu_seconds", 0)))
    else:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu if cpu == inf else cpu + 1))
    for rl, key in (
        (resource.RLIMIT_AS, "memory_bytes"),
        (resource.RLIMIT_NPROC, "max_processes"),
        (resource.RLIMIT_FSIZE, "file_size_bytes"),
    ):
        v = lim(key)
        resource.setrlimit(rl, (v, v))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def renew_cpu_budget(seconds: int) -> None:
    """Give the current process ``seconds`` more CPU time from now (soft limit only)."""
    if seconds <= 0:
        resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        return
    ru = resource.getrusage(resource.RUSAGE_SELF)
    used = int(ru.ru_utime + ru.ru_stime)
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    resource.setrlimit(resource.RLIMIT_CPU, (used + seconds, hard))
