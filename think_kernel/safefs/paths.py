"""Workspace-relative paths as components, and the errors for paths Think will not use."""

from __future__ import annotations

import errno
import os
import stat

#: Deeper paths are refused with a clear error (no recursion, no PATH_MAX surprises).
MAX_DEPTH = 128
MAX_PATH = 4096

# Flags of every folder and file opened for reading (never blocking on a FIFO, never a tty).
O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
O_READ = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


class UnsafePathError(OSError):
    """A path Think will not use: a link on the way, outside the root, not a regular file..."""

    def __init__(self, message: str, err: int = errno.EPERM) -> None:
        super().__init__(err, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def split(path: str) -> list[str]:
    """Workspace-relative ``path`` as components; refuses absolute, ``..``, NUL, too deep."""
    if not isinstance(path, str) or "\x00" in path:
        raise UnsafePathError(f"{path!r} is not a valid path", errno.EINVAL)
    if path.startswith("/"):
        raise UnsafePathError(f"{path!r} is absolute; paths are relative to the root")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafePathError(f"{path!r} goes outside the root ('..' is not allowed)")
    if len(parts) > MAX_DEPTH or len(path) > MAX_PATH:
        raise UnsafePathError(
            f"path is too deep ({len(parts)} folders, {len(path)} characters); the limit is "
            f"{MAX_DEPTH} folders and {MAX_PATH} characters",
            errno.ENAMETOOLONG,
        )
    return parts


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def lstat_at(dfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def link_error(shown: str) -> UnsafePathError:
    return UnsafePathError(
        f"{shown!r} is or goes through a symbolic link; Think does not write through links "
        "(a link planted in the workspace could send the write outside it)",
        errno.ELOOP,
    )
