"""The seccomp filter every sandboxed process runs under (tiers 1 and 2).

Stdlib only (ctypes + prctl): the maintained PyPI bindings wrap libseccomp, which is not a
Python dependency we can rely on, and the program we need is ~150 classic-BPF instructions.

What it refuses, and why:

- tracing, namespaces, mounts, keyrings, modules, io_uring (it bypasses seccomp), bpf;
  ``setsid``/``setpgid`` (so one ``killpg`` reaches everything a run starts);
- every way to signal, re-prioritise or limit the *protected* processes, given as pids
  known when the filter is built (the zygote, its process group and its parent): ``kill``
  (and ``kill(-1)``, which reaches every process of the uid), ``tkill``, ``tgkill``,
  ``rt_[tg]sigqueueinfo``, ``pidfd_open``, ``prlimit64``, ``setpriority``/``ioprio_set``
  (also for a whole user), ``sched_set*``, ``migrate_pages``/``move_pages``; and
  ``pidfd_send_signal``/``process_madvise`` outright (a ``/proc/PID`` fd is a pidfd too).
  ``kill -STOP $PPID`` from sandboxed code used to wedge the session's launcher;
- sockets: every family but ``AF_UNIX``; with ``no_sockets`` (tier 2, which has no network
  namespace) ``socket()``, ``connect()`` and ``bind()`` entirely, and ``socketpair()`` except
  ``AF_UNIX`` stream/seqpacket pairs (multiprocessing keeps working; a datagram pair could
  ``sendto()`` any host socket by path);
- with ``inet`` (a live app that binds its own port, tier 1 only): ``socket()`` of
  ``AF_INET``/``AF_INET6`` only, with ``connect()`` and ``bind()``; never ``AF_UNIX``, so the
  host's unix sockets stay out of reach, and the network namespace has no interface but
  ``lo``, so an inet socket reaches only the sandbox's own loopback.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Sequence

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.restype = ctypes.c_int

PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2

EPERM, ENOSYS, EAFNOSUPPORT = 1, 38, 97
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
SOCK_STREAM, SOCK_SEQPACKET = 1, 5
PRIO_USER, IOPRIO_WHO_USER = 2, 3
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_NS_FLAGS = 0x7E020000

_X86_64 = {
    "socket": 41, "connect": 42, "bind": 49, "socketpair": 53, "clone": 56, "kill": 62,
    "ptrace": 101, "setpgid": 109, "setsid": 112, "rt_sigqueueinfo": 129, "setpriority": 141,
    "sched_setparam": 142, "sched_setscheduler": 144, "pivot_root": 155, "chroot": 161,
    "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
    "init_module": 175, "delete_module": 176, "tkill": 200, "sched_setaffinity": 203,
    "tgkill": 234, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250,
    "ioprio_set": 251, "migrate_pages": 256, "unshare": 272, "move_pages": 279,
    "rt_tgsigqueueinfo": 297, "perf_event_open": 298, "prlimit64": 302,
    "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311,
    "finit_module": 313, "sched_setattr": 314, "kexec_file_load": 320, "bpf": 321,
    "userfaultfd": 323, "pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsmount": 432, "pidfd_open": 434, "clone3": 435, "pidfd_getfd": 438,
    "process_madvise": 440,
}  # fmt: skip
_AARCH64 = {
    "socket": 198, "connect": 203, "bind": 200, "socketpair": 199, "clone": 220, "kill": 129,
    "ptrace": 117, "setpgid": 154, "setsid": 157, "rt_sigqueueinfo": 138, "setpriority": 140,
    "sched_setparam": 118, "sched_setscheduler": 119, "pivot_root": 41, "chroot": 51,
    "mount": 40, "umount2": 39, "swapon": 224, "swapoff": 225, "reboot": 142,
    "init_module": 105, "delete_module": 106, "tkill": 130, "sched_setaffinity": 122,
    "tgkill": 131, "kexec_load": 104, "add_key": 217, "request_key": 218, "keyctl": 219,
    "ioprio_set": 30, "migrate_pages": 238, "unshare": 97, "move_pages": 239,
    "rt_tgsigqueueinfo": 240, "perf_event_open": 241, "prlimit64": 261,
    "open_by_handle_at": 265, "setns": 268, "process_vm_readv": 270, "process_vm_writev": 271,
    "finit_module": 273, "sched_setattr": 274, "kexec_file_load": 294, "bpf": 280,
    "userfaultfd": 282, "pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsmount": 432, "pidfd_open": 434, "clone3": 435, "pidfd_getfd": 438,
    "process_madvise": 440,
}  # fmt: skip
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, _X86_64),
    "aarch64": (0xC00000B7, _AARCH64),
}

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "setsid", "setpgid",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsmount", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "swapon", "swapoff", "reboot", "add_key", "request_key",
    "keyctl", "open_by_handle_at", "pidfd_send_signal", "process_madvise",
)  # fmt: skip

#: Syscalls whose first argument is a pid (or tgid) that must not be a protected process.
PID_FIRST = ("tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open",
             "prlimit64", "sched_setparam", "sched_setscheduler", "sched_setaffinity",
             "sched_setattr", "migrate_pages", "move_pages")  # fmt: skip

# Classic BPF opcodes.
_LD, _JEQ, _JSET, _JGE, _AND, _RET = 0x20, 0x15, 0x45, 0x35, 0x54, 0x06
_ALLOW, _KILL = 0x7FFF0000, 0x80000000


def _errno(e: int) -> int:
    return 0x00050000 | e


def _arg(i: int) -> tuple[int, ...]:
    """Load the low 32 bits of syscall argument ``i`` (seccomp_data.args[i], little endian).
    The kernel reads pid_t and int arguments as 32-bit values, so the high half is noise."""
    return (_LD, 0, 0, 16 + 8 * i)


def _block(nr: int, body: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """``if syscall == nr: body`` (body must end in a return; it runs with A = nr)."""
    assert len(body) < 256
    return [(_JEQ, 0, len(body), nr), *body]


def _deny_values(arg: int, values: list[int], err: int = EPERM) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [_arg(arg)]
    for v in values:
        out += [(_JEQ, 0, 1, v & 0xFFFFFFFF), (_RET, 0, 0, _errno(err))]
    return out


def seccomp_supported() -> bool:
    """True when we have a syscall table for this CPU."""
    return os.uname().machine in _ARCHES


def build_seccomp_filter(
    protected: Sequence[int] = (), no_sockets: bool = False, inet: bool = False
) -> bytes:
    """Assemble the program (struct sock_filter[]) for this architecture; ``protected``
    are pids (and process group ids) sandboxed code may not signal or re-prioritise;
    ``inet`` lets it make inet sockets (only where its network namespace holds only ``lo``)."""
    audit_arch, nr = _ARCHES[os.uname().machine]
    pids = sorted({p for p in protected if p > 0})
    prog: list[tuple[int, ...]] = [
        (_LD, 0, 0, 4),  # arch
        (_JEQ, 1, 0, audit_arch),
        (_RET, 0, 0, _KILL),
        (_LD, 0, 0, 0),  # syscall number
    ]
    if audit_arch == 0xC000003E:  # x32 ABI numbers would bypass the table
        prog += [(_JGE, 0, 1, 0x40000000), (_RET, 0, 0, _KILL)]
    for name in DENIED:
        prog += [(_JEQ, 0, 1, nr[name]), (_RET, 0, 0, _errno(EPERM))]
    if pids:
        allow = [(_RET, 0, 0, _ALLOW)]
        prog += _block(nr["kill"], [*_deny_values(0, [-1, *pids, *(-p for p in pids)]), *allow])
        for name in PID_FIRST:
            prog += _block(nr[name], [*_deny_values(0, pids), *allow])
        prog += _block(nr["setpriority"], [*_deny_values(0, [PRIO_USER]),
                                           *_deny_values(1, pids), *allow])  # fmt: skip
        prog += _block(nr["ioprio_set"], [*_deny_values(0, [IOPRIO_WHO_USER]),
                                          *_deny_values(1, pids), *allow])  # fmt: skip
    # socket(): AF_UNIX only, inet only, or nothing at all.
    if inet:
        # connect()/bind() stay open: the only unix sockets such a process holds are the
        # inherited, connected or listening ones and its stream socketpairs.
        prog += _block(nr["socket"], [_arg(0), (_JEQ, 2, 0, AF_INET), (_JEQ, 1, 0, AF_INET6),
                                      (_RET, 0, 0, _errno(EAFNOSUPPORT)),
                                      (_RET, 0, 0, _ALLOW)])  # fmt: skip
    if no_sockets or inet:
        if not inet:
            prog += _block(nr["socket"], [*_deny_values(0, [AF_UNIX]),
                                          (_RET, 0, 0, _errno(EAFNOSUPPORT))])  # fmt: skip
            for name in ("connect", "bind"):
                prog += [(_JEQ, 0, 1, nr[name]), (_RET, 0, 0, _errno(EPERM))]
        prog += _block(nr["socketpair"], [
            _arg(0), (_JEQ, 1, 0, AF_UNIX), (_RET, 0, 0, _errno(EAFNOSUPPORT)),
            _arg(1), (_AND, 0, 0, 0xF),  # type without SOCK_NONBLOCK / SOCK_CLOEXEC
            (_JEQ, 2, 0, SOCK_STREAM), (_JEQ, 1, 0, SOCK_SEQPACKET),
            (_RET, 0, 0, _errno(EPERM)), (_RET, 0, 0, _ALLOW),
        ])  # fmt: skip
    else:
        prog += _block(nr["socket"], [_arg(0), (_JEQ, 1, 0, AF_UNIX),
                                      (_RET, 0, 0, _errno(EAFNOSUPPORT)),
                                      (_RET, 0, 0, _ALLOW)])  # fmt: skip
    prog += _block(nr["clone"], [_arg(0), (_JSET, 0, 1, CLONE_NS_FLAGS),
                                 (_RET, 0, 0, _errno(EPERM)), (_RET, 0, 0, _ALLOW)])  # fmt: skip
    # clone3 passes flags in a struct seccomp cannot read; ENOSYS makes libc fall back to
    # clone(), which we can inspect (same approach as Docker's default profile).
    prog += [(_JEQ, 0, 1, nr["clone3"]), (_RET, 0, 0, _errno(ENOSYS)), (_RET, 0, 0, _ALLOW)]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(program: bytes) -> None:
    """Load a filter built by :func:`build_seccomp_filter` into this process (inherited)."""
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buf))
    for what, args in (("no_new_privs", (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)),
                       ("seccomp", (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog),
                                    0, 0))):  # fmt: skip
        if _libc.prctl(*args) < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")
