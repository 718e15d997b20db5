"""Writing beneath a root: atomic replacement through a fresh temp file, appends, folders,
removal and renames, none of which writes through a link (see :mod:`think_kernel.safefs`)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator
from typing import IO, Any

from .paths import UnsafePathError, kind, link_error, lstat_at
from .reads import SafeReader

_TMP_SUFFIX = ".think-tmp"


class SafeRoot(SafeReader):
    """A directory whose inside is reached without following planted links (see the package)."""

    @contextlib.contextmanager
    def open_atomic(
        self, path: str, *, text: bool = False, encoding: str = "utf-8", mkdirs: bool = True,
        **kwargs: Any,
    ) -> Iterator[IO[Any]]:  # fmt: skip
        """Write to a fresh temp file; on success it replaces ``path`` atomically.

        The target must not be a link, a folder or a special file. An existing target keeps
        its permission bits (and, when we are root, its owner).
        """
        parts = self.parts(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "the root is a folder")
        dfd = self.open_dir(parts[:-1], create=mkdirs)
        name = parts[-1]
        try:
            old = lstat_at(dfd, name)
            if old is not None and not stat.S_ISREG(old.st_mode):
                if stat.S_ISLNK(old.st_mode):
                    raise link_error(path)
                if stat.S_ISDIR(old.st_mode):
                    raise IsADirectoryError(errno.EISDIR, f"{path!r} is a folder")
                raise UnsafePathError(f"{path!r} is {kind(old.st_mode)}, not a regular file")
            tmp, fd = _create_temp(dfd, name)
            try:
                raw = os.fdopen(fd, "wb", closefd=True)
                f: IO[Any] = raw
                if text:
                    f = io.TextIOWrapper(raw, encoding=encoding, **kwargs)
                with f:
                    yield f
                    f.flush()
                    if old is not None:  # never setuid/setgid bits we did not choose
                        os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o1777)
                        if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
                            # A thread acting as a session (its fsuid not 0) may not give
                            # the file away: it stays the session's, as its own code's would.
                            with contextlib.suppress(PermissionError):
                                os.fchown(fd, old.st_uid, old.st_gid)
                    os.fsync(fd)
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
                raise
        finally:
            os.close(dfd)

    def write_bytes(self, path: str, data: bytes | Iterable[bytes], *, mkdirs: bool = True) -> None:
        """Create or atomically replace a file (see :meth:`open_atomic`)."""
        with self.open_atomic(path, mkdirs=mkdirs) as f:
            if isinstance(data, (bytes, bytearray, memoryview)):
                f.write(data)
            else:
                for chunk in data:
                    f.write(chunk)

    def append_bytes(self, path: str, data: bytes) -> None:
        """Append to an existing regular file with one link (uploads in chunks)."""
        parts = self.parts(path)
        dfd = self.open_dir(parts[:-1])
        try:
            flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            try:
                fd = os.open(parts[-1], flags, dir_fd=dfd)
            except OSError as e:
                if e.errno == errno.ELOOP:
                    raise link_error(path) from None
                raise
            with os.fdopen(fd, "wb") as f:
                st = os.fstat(fd)
                # A hard link would make us write into another file: refuse it.
                if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                    raise UnsafePathError(f"{path!r} is not a plain file (links: {st.st_nlink})")
                f.write(data)
        finally:
            os.close(dfd)

    def makedirs(self, path: str) -> None:
        """Create a folder and its missing parents (none of them may be a link)."""
        os.close(self.open_dir(self.parts(path), create=True))

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        """Create one folder (FileExistsError if something is there)."""
        parts = self.parts(path)
        dfd = self.open_dir(parts[:-1])
        try:
            os.mkdir(parts[-1], mode, dir_fd=dfd)
        finally:
            os.close(dfd)

    def unlink(self, path: str) -> None:
        """Remove a file (a link is removed itself, never followed)."""
        parts = self.parts(path)
        dfd = self.open_dir(parts[:-1])
        try:
            os.unlink(parts[-1], dir_fd=dfd)
        finally:
            os.close(dfd)

    def rmtree(self, path: str) -> None:
        """Remove a folder and everything in it (links inside are removed, not followed)."""
        parts = self.parts(path)
        if not parts:
            raise UnsafePathError("refusing to remove the root")
        dfd = self.open_dir(parts[:-1])
        try:
            st = lstat_at(dfd, parts[-1])
            if st is not None and not stat.S_ISDIR(st.st_mode):
                os.unlink(parts[-1], dir_fd=dfd)
            else:
                shutil.rmtree(parts[-1], dir_fd=dfd)  # the fd-based, symlink-safe variant
        finally:
            os.close(dfd)

    def rename(self, old: str, new: str, *, replace: bool = False) -> None:
        """Move ``old`` to ``new`` inside the root (a link is moved itself, never followed)."""
        op, np_ = self.parts(old), self.parts(new)
        if not op or not np_:
            raise UnsafePathError("refusing to move the root")
        ofd = self.open_dir(op[:-1])
        try:
            nfd = self.open_dir(np_[:-1])
            try:
                if not replace and lstat_at(nfd, np_[-1]) is not None:
                    raise FileExistsError(errno.EEXIST, f"{new!r} already exists")
                os.rename(op[-1], np_[-1], src_dir_fd=ofd, dst_dir_fd=nfd)
            finally:
                os.close(nfd)
        finally:
            os.close(ofd)

    def symlink(self, target: str, path: str) -> None:
        """Create a link (its target is not checked: creating a link writes nothing through it)."""
        parts = self.parts(path)
        dfd = self.open_dir(parts[:-1])
        try:
            os.symlink(target, parts[-1], dir_fd=dfd)
        finally:
            os.close(dfd)

    def copy_file(self, src: str, dst: str) -> None:
        """Copy a regular file's bytes (links inside the root followed to read)."""
        with self.open_read(src) as f, self.open_atomic(dst) as out:
            shutil.copyfileobj(f, out, 1 << 20)


def _create_temp(dfd: int, name: str) -> tuple[str, int]:
    """A new file next to ``name`` with a random name nobody could have created beforehand."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(16):
        tmp = f".{name[:180]}.{secrets.token_hex(8)}{_TMP_SUFFIX}"
        try:
            return tmp, os.open(tmp, flags, 0o666, dir_fd=dfd)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"could not create a temp file next to {name!r}")


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is one of our temp files (listings hide them)."""
    return name.startswith(".") and name.endswith(_TMP_SUFFIX)
