"""File access inside a workspace that never follows a link someone planted there.

    fs = SafeRoot("/home/me/project")
    fs.write_bytes("src/a.py", b"print(1)\\n")     # atomic; refuses links on the way
    with fs.open_read("src/a.py") as f:            # regular files only
        head = f.read(100)
    fs.unlink("src/a.py")

Sandboxed code can write the workspace, and the kernel and the server (often root) write
there too. If they followed a symbolic link that sandboxed code planted (a temp name, a backup
name, a parent folder) they would write outside the workspace with their privileges (issue 9:
a ``.pth`` file in the venv ran as uid 0). So every path is opened relative to a held
directory fd: one ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` where the kernel has it,
else one ``openat(O_NOFOLLOW | O_DIRECTORY)`` per component. A write goes to a temp file with a
random name created with ``O_EXCL`` inside the held directory, then ``renameat`` over the
target: nothing sandboxed code could have prepared is ever opened for writing.

Reads follow links that stay inside the root (``RESOLVE_BENEATH``, or ``realpath`` then a
no-follow walk) and refuse anything that is not a regular file (a FIFO would block forever).
``private`` folders inside the root (the store, Jupyter's runtime files) are refused for every
operation. Errors are :class:`UnsafePathError` (an ``OSError``) with a message a person or the
model can act on.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import io
import os
import platform
import secrets
import shutil
import stat
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

#: Deeper paths are refused with a clear error (no recursion, no PATH_MAX surprises).
MAX_DEPTH = 128
MAX_PATH = 4096

_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_O_READ = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_TMP_SUFFIX = ".think-tmp"

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


def _openat2(dirfd: int, path: str, flags: int, mode: int, resolve: int) -> int:
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
        os.close(_openat2(-100, "/", _O_DIR, 0, RESOLVE_NO_SYMLINKS))  # AT_FDCWD
        return True
    except (OSError, AttributeError):  # ENOSYS (old kernel), EPERM (a seccomp filter)
        return False


HAVE_OPENAT2 = _probe_openat2()


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


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _lstat_at(dfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _link_error(shown: str) -> UnsafePathError:
    return UnsafePathError(
        f"{shown!r} is or goes through a symbolic link; Think does not write through links "
        "(a link planted in the workspace could send the write outside it)",
        errno.ELOOP,
    )


class SafeRoot:
    """A directory whose inside is reached without following planted links (see module doc)."""

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
            return os.open(".", _O_DIR, dir_fd=anchor)
        return os.open(self.root, _O_DIR)

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
            fd = self._beneath(parts, _O_DIR, follow)
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
            fd = _openat2(rfd, shown, flags, 0, resolve)
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
                    nfd = os.open(name, _O_DIR | os.O_NOFOLLOW, dir_fd=fd)
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
            return os.open(name, _O_DIR | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as e:
            st = _lstat_at(fd, name)
            shown = "/".join(upto)
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise _link_error(shown) from None
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
            return _link_error(shown)
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
                what = _kind(st.st_mode)
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
        fd = self._beneath(parts, _O_READ, follow)
        if fd is not None:
            return fd
        if follow:
            parts = self._resolved_inside(parts)
            if not parts:
                raise IsADirectoryError(errno.EISDIR, f"{shown!r} is a folder")
        dfd = self.open_dir(parts[:-1])
        try:
            return os.open(parts[-1], _O_READ | os.O_NOFOLLOW, dir_fd=dfd)
        except OSError as e:
            st = _lstat_at(dfd, parts[-1])
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise _link_error(shown) from None
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
            return _lstat_at(dfd, parts[-1])
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

    # ------------------------------------------------------------------ writing

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
            old = _lstat_at(dfd, name)
            if old is not None and not stat.S_ISREG(old.st_mode):
                if stat.S_ISLNK(old.st_mode):
                    raise _link_error(path)
                if stat.S_ISDIR(old.st_mode):
                    raise IsADirectoryError(errno.EISDIR, f"{path!r} is a folder")
                raise UnsafePathError(f"{path!r} is {_kind(old.st_mode)}, not a regular file")
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
                    raise _link_error(path) from None
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
            st = _lstat_at(dfd, parts[-1])
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
                if not replace and _lstat_at(nfd, np_[-1]) is not None:
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
