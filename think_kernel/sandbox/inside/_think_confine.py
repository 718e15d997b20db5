"""Confinement applied inside the sandbox: uid drop, rlimits, Landlock and seccomp.

Stdlib only (ctypes + prctl), because this file runs in the sandboxed interpreter before any
user code. No PyPI seccomp binding is used: the maintained ones wrap libseccomp, which is not a
Python dependency we can rely on, and the filter we need is ~40 BPF instructions.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int

PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
SECCOMP_MODE_FILTER = 2

# Landlock syscalls share their numbers on every architecture.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446

EPERM, ENOSYS, EAFNOSUPPORT = 1, 38, 97
AF_UNIX = 1
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_NS_FLAGS = 0x7E020000

_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "socketpair": 53,
            "clone": 56,
            "clone3": 435,
            "ptrace": 101,
            "setpgid": 109,
            "setsid": 112,
            "pivot_root": 155,
            "chroot": 161,
            "mount": 165,
            "umount2": 166,
            "swapon": 167,
            "swapoff": 168,
            "reboot": 169,
            "init_module": 175,
            "delete_module": 176,
            "kexec_load": 246,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "unshare": 272,
            "perf_event_open": 298,
            "open_by_handle_at": 304,
            "setns": 308,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "finit_module": 313,
            "kexec_file_load": 320,
            "bpf": 321,
            "userfaultfd": 323,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsmount": 432,
            "pidfd_getfd": 438,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "socketpair": 199,
            "clone": 220,
            "clone3": 435,
            "ptrace": 117,
            "setpgid": 154,
            "setsid": 157,
            "pivot_root": 41,
            "chroot": 51,
            "mount": 40,
            "umount2": 39,
            "swapon": 224,
            "swapoff": 225,
            "reboot": 142,
            "init_module": 105,
            "delete_module": 106,
            "kexec_load": 104,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "unshare": 97,
            "perf_event_open": 241,
            "open_by_handle_at": 265,
            "setns": 268,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "finit_module": 273,
            "kexec_file_load": 294,
            "bpf": 280,
            "userfaultfd": 282,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsmount": 432,
            "pidfd_getfd": 438,
        },
    ),
}

# Denied with EPERM: escaping the process group (so killpg reaches everything), tracing,
# namespaces and mounts, kernel keyrings/modules, io_uring (bypasses seccomp), bpf.
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "setsid", "setpgid",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsmount", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "swapon", "swapoff", "reboot", "add_key", "request_key",
    "keyctl", "open_by_handle_at",
)  # fmt: skip


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def seccomp_supported() -> bool:
    """True when we have a syscall table for this CPU."""
    return platform.machine() in _ARCHES


def build_seccomp_filter() -> bytes:
    """Assemble the classic-BPF program (struct sock_filter[]) for this architecture."""
    audit_arch, nr = _ARCHES[platform.machine()]
    ld, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    allow, kill = 0x7FFF0000, 0x80000000

    def errno(e: int) -> int:
        return 0x00050000 | e

    prog: list[tuple[int, int, int, int]] = [
        (ld, 0, 0, 4),  # arch
        (jeq, 1, 0, audit_arch),
        (ret, 0, 0, kill),
        (ld, 0, 0, 0),  # syscall number
    ]
    if audit_arch == 0xC000003E:  # x32 ABI numbers would bypass the table
        prog += [(jge, 0, 1, 0x40000000), (ret, 0, 0, kill)]
    for name in DENIED:
        prog += [(jeq, 0, 1, nr[name]), (ret, 0, 0, errno(EPERM))]
    prog += [
        (jeq, 0, 4, nr["socket"]),
        (ld, 0, 0, 16),  # args[0] (domain), low word
        (jeq, 1, 0, AF_UNIX),
        (ret, 0, 0, errno(EAFNOSUPPORT)),
        (ret, 0, 0, allow),
        (jeq, 0, 4, nr["clone"]),
        (ld, 0, 0, 16),  # clone flags
        (jset, 0, 1, CLONE_NS_FLAGS),
        (ret, 0, 0, errno(EPERM)),
        (ret, 0, 0, allow),
        # clone3 passes flags in a struct seccomp cannot read; ENOSYS makes libc fall back
        # to clone(), which we can inspect (same approach as Docker's default profile).
        (jeq, 0, 1, nr["clone3"]),
        (ret, 0, 0, errno(ENOSYS)),
        (ret, 0, 0, allow),
    ]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(program: bytes) -> None:
    """Load a filter built by :func:`build_seccomp_filter` into this process (inherited)."""
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buf))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


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
    """Become ``uid``/``gid`` for good (no supplementary groups); no-op when already them."""
    if os.getuid() == uid and os.geteuid() == uid:
        return
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


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
