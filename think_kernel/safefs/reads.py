"""Reading beneath a root without following planted links: opening folders and regular
files, ``stat`` and ``scandir``, with ``openat2`` or a no-follow walk (see the package)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from .openat2 import (
    HAVE_OPENAT2,
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    RESOLVE_NO_SYMLINKS,
    openat2,
)
from .paths import O_DIR, O_READ, UnsafePathError, kind, link_error, lstat_at, split


class SafeReader:
    """A directory whose inside is read without following planted links (writes: ``SafeRoot``)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        private: Sequence[str | os.PathLike[str]] = (),
        use_openat2: bool | None = None,
    ) -> None:
        # The root itself may be reached through a link: the person who started us chose it.
        self.root = Path(os.path.realpath(root))
        self.use_openat2 = HAVE_OPENAT2 if use_openat2 is None else use_openat2 and HAVE_OPENAT2
        self._anchor = threading.local()
        self.private: list[Path] = []
        for p in private:
            real = Path(os.path.realpath(p))
            if real != self.root and self.root in real.parents:
                self.private.append(real)

    # ------------------------------------------------------------------ checks

    def parts(self, path: str) -> list[str]:
        """Components of a relative path, refusing private folders by name."""
        parts = split(path)
        for p in self.private:
            prefix = p.relative_to(self.root).parts
            if tuple(parts[: len(prefix)]) == prefix:
                raise UnsafePathError(f"{path!r} is private to Jupyter and Think", errno.EACCES)
        return parts

    def _check_private_fd(self, fd: int, shown: str) -> None:
        # A link inside the root may lead into a private folder: check where the fd really is.
        if not self.private:
            return
        try:
            real = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return
        if any(real == p or p in real.parents for p in self.private):
            raise UnsafePathError(f"{shown!r} is private to Jupyter and Think", errno.EACCES)

    # ------------------------------------------------------------------ directories

    def _root_fd(self) -> int:
        anchor = getattr(self._anchor, "fd", None)
        if anchor is not None:
            return os.open(".", O_DIR, dir_fd=anchor)
        return os.open(self.root, O_DIR)

    def _root_stat(self) -> os.stat_result:
        anchor = getattr(self._anchor, "fd", None)
        return os.stat(self.root) if anchor is None else os.stat(".", dir_fd=anchor)

    @contextlib.contextmanager
    def anchored(self, fd: int) -> Iterator[None]:
        """In this thread, reach the root through ``fd`` (an ``O_PATH`` fd of it) instead of
        its path: a thread with a sandboxed session's rights then needs them on the root and
        below only, not on the folders above it (a home folder made 0700), which the person
        who started us chose and which need not let that uid through."""
        self._anchor.fd = fd
        try:
            yield
        finally:
            self._anchor.fd = None

    def open_dir(self, parts: Sequence[str], *, create: bool = False, follow: bool = False) -> int:
        """An fd of the folder ``parts`` (the caller closes it).

        ``follow=False``: no component may be a link (for writes); ``create`` makes missing
        folders. ``follow=True``: links that stay inside the root are followed (for reads).
        """
        if not parts:
            return self._root_fd()
        try:
            fd = self._beneath(parts, O_DIR, follow)
        except FileNotFoundError:
            if not create:
                raise
            fd = None
        if fd is not None:
            return fd
        rfd = self._root_fd()
        try:
            walk = self._resolved_inside(parts) if follow else parts
            return self._walk(rfd, walk, create and not follow, "/".join(parts))
        finally:
            os.close(rfd)

    def _beneath(self, parts: Sequence[str], flags: int, follow: bool) -> int | None:
        """One ``openat2`` from the root, or None where the walk must decide: no openat2 here,
        or (following links) EXDEV from an absolute link that may point back inside."""
        if not self.use_openat2:
            return None
        shown = "/".join(parts)
        resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (0 if follow else RESOLVE_NO_SYMLINKS)
        rfd = self._root_fd()
        try:
            fd = openat2(rfd, shown, flags, 0, resolve)
        except OSError as e:
            if follow and e.errno == errno.EXDEV:
                return None
            raise self._explain(e, parts, follow) from None
        finally:
            os.close(rfd)
        if follow:
            try:
                self._check_private_fd(fd, shown)
            except BaseException:
                os.close(fd)
                raise
        return fd

    def _walk(self, rfd: int, parts: Sequence[str], create: bool, shown: str) -> int:
        """``openat(O_NOFOLLOW)`` one component at a time from ``rfd`` (not closed here)."""
        fd = os.dup(rfd)
        try:
            for i, name in enumerate(parts):
                try:
                    nfd = os.open(name, O_DIR | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise FileNotFoundError(
                            errno.ENOENT, f"{'/'.join(parts[: i + 1])!r} does not exist"
                        ) from None
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                    nfd = self._open_sub(fd, name, parts[: i + 1])
                except OSError:
                    nfd = self._open_sub(fd, name, parts[: i + 1])
                os.close(fd)
                fd = nfd
            self._check_private_fd(fd, shown)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _open_sub(self, fd: int, name: str, upto: Sequence[str]) -> int:
        try:
            return os.open(name, O_DIR | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as e:
            st = lstat_at(fd, name)
            shown = "/".join(upto)
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise link_error(shown) from None
            if st is not None and not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, f"{shown!r} is not a folder") from None
            raise e

    def _resolved_inside(self, parts: Sequence[str]) -> list[str]:
        """Without openat2: resolve links textually, check the result stays inside the root;
        the no-follow walk that follows refuses any link swapped in meanwhile."""
        real = Path(os.path.realpath(self.root.joinpath(*parts)))
        if real != self.root and self.root not in real.parents:
            raise UnsafePathError(
                f"{'/'.join(parts)!r} resolves outside the root (through a symlink)", errno.EXDEV
            )
        return list(real.relative_to(self.root).parts)

    def _explain(self, e: OSError, parts: Sequence[str], follow: bool) -> OSError:
        shown = "/".join(parts)
        if e.errno == errno.ELOOP and not follow:
            return link_error(shown)
        if e.errno == errno.ELOOP:
            return UnsafePathError(f"{shown!r}: too many levels of symbolic links", errno.ELOOP)
        if e.errno == errno.EXDEV:
            return UnsafePathError(
                f"{shown!r} resolves outside the root (through a symlink)", errno.EXDEV
            )
        if e.errno == errno.ENOENT:
            return FileNotFoundError(errno.ENOENT, f"{shown!r} does not exist")
        if e.errno == errno.ENOTDIR:
            return NotADirectoryError(errno.ENOTDIR, f"{shown!r}: a part of it is not a folder")
        if e.errno == errno.ENXIO:
            return UnsafePathError(f"{shown!r} is a socket, not a regular file", errno.ENXIO)
        if e.errno == errno.ENAMETOOLONG:
            return UnsafePathError(f"{shown[:80]!r}...: the path is too long", e.errno)
        return e

    # ------------------------------------------------------------------ reading

    def open_read(self, path: str, *, follow: bool = True) -> IO[bytes]:
        """A regular file opened for reading; anything else is refused at once."""
        parts = self.parts(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, f"{path!r} is a folder")
        fd = self._open_file(parts, follow)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                what = kind(st.st_mode)
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(errno.EISDIR, f"{path!r} is a folder")
                raise UnsafePathError(f"{path!r} is {what}, not a regular file", errno.EINVAL)
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb", closefd=True)
        except BaseException:
            os.close(fd)
            raise

    def _open_file(self, parts: list[str], follow: bool) -> int:
        shown = "/".join(parts)
        fd = self._beneath(parts, O_READ, follow)
        if fd is not None:
            return fd
        if follow:
            parts = self._resolved_inside(parts)
            if not parts:
                raise IsADirectoryError(errno.EISDIR, f"{shown!r} is a folder")
        dfd = self.open_dir(parts[:-1])
        try:
            return os.open(parts[-1], O_READ | os.O_NOFOLLOW, dir_fd=dfd)
        except OSError as e:
            st = lstat_at(dfd, parts[-1])
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise link_error(shown) from None
            if st is None:
                raise FileNotFoundError(errno.ENOENT, f"{shown!r} does not exist") from None
            if stat.S_ISSOCK(st.st_mode):
                raise UnsafePathError(f"{shown!r} is a socket, not a regular file") from None
            raise e
        finally:
            os.close(dfd)

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        """The whole file (``UnsafePathError`` past ``limit`` bytes)."""
        with self.open_read(path) as f:
            size = os.fstat(f.fileno()).st_size
            if limit is not None and size > limit:
                raise UnsafePathError(
                    f"{path!r} is {size} bytes; the limit is {limit}", errno.EFBIG
                )
            data = f.read() if limit is None else f.read(limit + 1)
        if limit is not None and len(data) > limit:  # grew while we read
            raise UnsafePathError(f"{path!r} is over {limit} bytes", errno.EFBIG)
        return data

    def lstat(self, path: str) -> os.stat_result | None:
        """The entry itself (a link is not followed); None if it does not exist."""
        parts = self.parts(path)
        if not parts:
            return self._root_stat()
        try:
            dfd = self.open_dir(parts[:-1])
        except FileNotFoundError:
            return None
        try:
            return lstat_at(dfd, parts[-1])
        finally:
            os.close(dfd)

    def stat(self, path: str) -> os.stat_result | None:
        """Like :meth:`lstat`, but links that stay inside the root are followed."""
        parts = self.parts(path)
        if not parts:
            return self._root_stat()
        try:
            fd = self._beneath(parts, os.O_PATH | os.O_CLOEXEC, True)
            if fd is None:
                real = self._resolved_inside(parts)
                return self.lstat("/".join(real)) if real else self._root_stat()
            try:
                return os.fstat(fd)
            finally:
                os.close(fd)
        except FileNotFoundError:
            return None

    @contextlib.contextmanager
    def scandir(self, path: str = "") -> Iterator[list[os.DirEntry[str]]]:
        """The entries of a folder (links inside the root followed to reach it)."""
        fd = self.open_dir(self.parts(path), follow=True)
        try:
            with os.scandir(fd) as it:
                yield list(it)
        finally:
            os.close(fd)
