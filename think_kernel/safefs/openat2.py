"""``openat2(2)`` through ``syscall(2)`` (glibc has no wrapper), and whether this kernel has it
(Linux 5.6+, and no seccomp filter refusing it): one call resolves a whole path beneath a
held folder without following links."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from typing import Any

from .paths import O_DIR

# openat2(2): Linux 5.6+. The syscall number is 437 on both x86_64 and aarch64 (the unified
# table); glibc has no wrapper, so it is called through syscall(2).
_SYS_OPENAT2: int | None = {"x86_64": 437, "amd64": 437, "aarch64": 437, "arm64": 437}.get(
    platform.machine().lower()
)
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc: Any = None


def openat2(dirfd: int, path: str, flags: int, mode: int, resolve: int) -> int:
    how = _OpenHow(flags, mode, resolve)
    for _ in range(8):
        fd = _libc.syscall(
            ctypes.c_long(_SYS_OPENAT2 or -1),
            ctypes.c_int(dirfd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err not in (errno.EAGAIN, errno.EINTR):  # EAGAIN: a rename raced RESOLVE_BENEATH
            raise OSError(err, os.strerror(err), path)
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), path)


def _probe_openat2() -> bool:
    global _libc
    if _SYS_OPENAT2 is None or not hasattr(os, "O_DIRECTORY"):
        return False
    try:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        os.close(openat2(-100, "/", O_DIR, 0, RESOLVE_NO_SYMLINKS))  # AT_FDCWD
        return True
    except (OSError, AttributeError):  # ENOSYS (old kernel), EPERM (a seccomp filter)
        return False


HAVE_OPENAT2 = _probe_openat2()
