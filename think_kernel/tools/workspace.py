"""Where file tools read and write: a small protocol and the local-disk implementation.

    ws = LocalWorkspace("/home/me/project")
    await ws.write_text("src/a.py", "print('hi')\\n")
    text = await ws.read_text("src/a.py")
    page = await ws.read_page("logs/big.log", offset=1, limit=2000)

Every path is relative to the workspace root. ``..``, absolute paths, links that lead out of
the root and paths deeper than :data:`~think_kernel.safefs.MAX_DEPTH` are refused with a
:class:`PathError` that says why. All disk access goes through :class:`~think_kernel.safefs.
SafeRoot`: writes never follow a link (sandboxed code may have planted one), Jupyter's and
Think's private folders are out of reach even when the workspace contains them, and anything
but a regular file (a FIFO, a device) is refused at once. Reads are paged
(:mod:`.textpage`); a file that is not UTF-8 is never rewritten by the text tools.

A tool call acts with the calling session's rights: where the runtime acts as a session
(a root kernel, whose sessions each have a uid; :mod:`think_kernel.sandbox.asuser`), the disk
access runs in that session's credentials thread, and :meth:`LocalWorkspace.check_access`
lets the tools refuse, before a room is asked, what the session could not read or write.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..safefs import SafeRoot, UnsafePathError, is_temp_name, split
from .base import ACTING, ToolError
from .textpage import NotUtf8, TextPage, check_utf8, read_page, utf8_help

if TYPE_CHECKING:
    from ..agent.events import Event

T = TypeVar("T")
#: Shows a tool call's status to whoever watches the run (``ToolContext.send``).
StatusSink = Callable[["Event"], Awaitable[None]]

#: Largest file read whole (for edit_file, and the merge base of writes), in bytes.
MAX_EDIT_BYTES = 16 * 1024 * 1024
HIDDEN_NAMES = (".ipynb_checkpoints", "__pycache__")


class PathError(ToolError):
    """A path that is not allowed (outside the workspace, missing, a directory, ...)."""

    def __init__(self, message: str, code: str = "PATH_NOT_ALLOWED") -> None:
        super().__init__(message, code)


@dataclass(frozen=True)
class Entry:
    """One item of a directory listing."""

    path: str
    is_dir: bool
    size: int


class Workspace(Protocol):
    """File access for tools. Paths are workspace-relative POSIX strings."""

    root: Path

    def resolve(self, path: str) -> Path:
        """Return the absolute path, or raise PathError if it leaves the workspace."""
        ...

    def relative(self, full: Path) -> str:
        """The workspace-relative POSIX form of an absolute path inside the root."""
        ...

    async def read_text(self, path: str) -> str:
        """Return a whole UTF-8 text file (ToolError if it is too big or not UTF-8)."""
        ...

    async def read_page(self, path: str, offset: int = 1, limit: int = 2000) -> TextPage:
        """Return lines ``offset`` .. ``offset + limit - 1`` in bounded memory."""
        ...

    async def write_text(self, path: str, content: str) -> None:
        """Create or replace a file (parents are created)."""
        ...

    async def delete(self, path: str) -> None:
        """Delete a file."""
        ...

    async def list(self, path: str = ".") -> list[Entry]:
        """List a directory (not recursive)."""
        ...

    def for_call(self, call_id: str, status: StatusSink | None = None) -> Workspace:
        """The workspace as one tool call uses it: its edits attributed to ``call_id``, its
        waits (for a person to stop typing) shown through ``status``."""
        ...


def check_relative(path: str) -> str:
    """Normalise a model-given path; refuse absolute paths, ``..`` segments and deep paths."""
    if not isinstance(path, str) or not path.strip():
        raise PathError("path is empty; give a path relative to the workspace root")
    if "\x00" in path:
        raise PathError("path contains a NUL byte")
    p = PurePosixPath(path.strip().replace("\\", "/"))
    if p.is_absolute() or path.startswith("~"):
        raise PathError(
            f"{path!r} is absolute; paths are relative to the workspace root (e.g. 'src/a.py')"
        )
    if ".." in p.parts:
        raise PathError(f"{path!r} goes outside the workspace ('..' is not allowed)")
    try:
        split(str(p))
    except UnsafePathError as e:
        raise PathError(str(e)) from None
    return str(p)


def os_error(path: str, e: OSError, verb: str = "") -> ToolError:
    """A filesystem error as a message the model can act on (``verb``: what the calling
    session was refused, when the access ran with its rights)."""
    if isinstance(e, UnsafePathError):
        code = {errno.EFBIG: "TOO_LARGE", errno.ELOOP: "SYMLINK_REFUSED"}.get(e.errno or 0)
        return PathError(str(e), code or "PATH_NOT_ALLOWED")
    if isinstance(e, FileNotFoundError):
        return PathError(f"{path!r} does not exist")
    if isinstance(e, IsADirectoryError):
        return PathError(f"{path!r} is a directory; use list_files")
    if isinstance(e, NotADirectoryError):
        return PathError(f"{path!r}: a part of the path is a file, not a folder")
    if isinstance(e, PermissionError) and verb:
        return PathError(
            f"permission denied: this session cannot {verb} {path!r} (its own code could not "
            "either; the file or a folder on the way belongs to someone else)",
            "PERMISSION_DENIED",
        )
    if isinstance(e, PermissionError):
        return PathError(f"{path!r}: permission denied", "PERMISSION_DENIED")
    return ToolError(f"{path}: {e.strerror or e}", "OS_ERROR")


async def check_access(workspace: Workspace, path: str, need: str) -> None:
    """Refuse what the calling session could not do to ``path`` itself (a no-op for a
    workspace without :meth:`LocalWorkspace.check_access`); see there for ``need``."""
    check = getattr(workspace, "check_access", None)
    if check is not None:
        await check(path, need)


class LocalWorkspace:
    """The workspace on local disk (the notebook's folder or the server root)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        private: Sequence[str | os.PathLike[str]] | None = None,
        max_edit_bytes: int = MAX_EDIT_BYTES,
    ) -> None:
        self.root = Path(root).resolve()
        if private is None:
            from ..store.location import private_paths

            private = private_paths()
        self.fs = SafeRoot(self.root, private=private)
        self.max_edit_bytes = max_edit_bytes

    def for_call(self, call_id: str, status: StatusSink | None = None) -> LocalWorkspace:
        """Itself: plain files record no author and never wait."""
        return self

    def resolve(self, path: str) -> Path:
        """Resolve symlinks too: a link that points out of the root is refused."""
        rel = check_relative(path)
        try:
            self.fs.parts(rel)
        except UnsafePathError as e:
            raise PathError(str(e)) from None
        full = (self.root / rel).resolve()
        if full != self.root and self.root not in full.parents:
            raise PathError(f"{path!r} resolves outside the workspace (through a symlink)")
        return full

    def relative(self, full: Path) -> str:
        """The workspace-relative form of an absolute path inside the root."""
        return full.relative_to(self.root).as_posix() or "."

    def rel(self, path: str) -> str:
        """The normalised workspace-relative form of ``path`` (links are not resolved)."""
        rel = check_relative(path)
        try:
            self.fs.parts(rel)
        except UnsafePathError as e:
            raise PathError(str(e)) from None
        return rel

    async def run_io(self, path: str, fn: Callable[[], T], need: str = "") -> T:
        """Run ``fn`` off the event loop, with the calling session's rights where the
        runtime acts as one (see :mod:`think_kernel.sandbox.asuser`); ``need`` (read,
        list, write, delete) names what a refusal refused."""
        acting = ACTING.get()
        files = None if acting is None else await acting.files()
        try:
            if files is None:
                return await asyncio.to_thread(fn)
            # The root is opened with the kernel's rights (see SafeRoot.anchored); the job
            # closes it, or, cancelled before it ran, the callback does.
            anchor = os.open(self.fs.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)

            def job() -> T:
                try:
                    with self.fs.anchored(anchor):
                        return fn()
                finally:
                    os.close(anchor)

            fut = files.submit(job)
            fut.add_done_callback(lambda f: os.close(anchor) if f.cancelled() else None)
            return await asyncio.wrap_future(fut)
        except OSError as e:
            raise os_error(path, e, need if files is not None else "") from None

    async def check_access(self, path: str, need: str) -> None:
        """Refuse what the calling session could not do to ``path`` itself.

        ``need`` is ``read`` (open the file), ``list`` (read and search the folder),
        ``write`` (open an existing file for writing, or create it: write and search on the
        folder that would hold it, or its nearest existing ancestor) or ``delete`` (write
        and search on the folder, and write on the file: deleting is writing it). A no-op
        where the runtime does not act as a session. Tools call it before anything that
        runs with the kernel's or the server's rights (a collaboration room, the document
        history), so it is checked before an edit is sent.
        """
        if ACTING.get() is None:
            return
        rel = "" if path in ("", ".", "./") else self.rel(path)
        asked = rel
        if need == "write":
            rel = self.relative(self.resolve(rel))  # writes go to a link's target
        check = {"read": self._may_read, "list": self._may_list, "write": self._may_write,
                 "delete": self._may_delete}[need]  # fmt: skip

        def may() -> None:
            if asked != rel:  # the link itself must be reachable too, not only its target
                self.fs.stat(asked)
            check(rel)

        await self.run_io(asked or ".", may, need)

    def _may_read(self, rel: str) -> None:
        with self.fs.open_read(rel):
            pass

    def _may_list(self, rel: str) -> None:
        fd = self.fs.open_dir(self.fs.parts(rel), follow=True)  # O_RDONLY: needs read
        try:
            _need(fd, ".", os.X_OK)
        finally:
            os.close(fd)

    def _may_write(self, rel: str) -> None:
        parts = self.fs.parts(rel)
        upto = len(parts) - 1
        while True:  # missing folders are created: the nearest existing one decides
            try:
                dfd = self.fs.open_dir(parts[:upto])
                break
            except FileNotFoundError:
                if upto == 0:
                    raise
                upto -= 1
        try:
            if upto == len(parts) - 1:
                st = _lstat_at(dfd, parts[-1])
                if st is not None and stat.S_ISREG(st.st_mode):
                    _open_for_write(dfd, parts[-1])
            _need(dfd, ".", os.W_OK | os.X_OK)
        finally:
            os.close(dfd)

    def _may_delete(self, rel: str) -> None:
        parts = self.fs.parts(rel)
        if not parts:
            raise PathError("the workspace root cannot be deleted")
        dfd = self.fs.open_dir(parts[:-1])
        try:
            st = _lstat_at(dfd, parts[-1])
            if st is None:
                raise FileNotFoundError(errno.ENOENT, rel)
            if stat.S_ISREG(st.st_mode):
                _open_for_write(dfd, parts[-1])
            _need(dfd, ".", os.W_OK | os.X_OK)
        finally:
            os.close(dfd)

    # -- reading -------------------------------------------------------------------------

    def read_bytes_sync(self, rel: str) -> bytes:
        """A whole regular file, at most ``max_edit_bytes`` (OSError otherwise)."""
        return self.fs.read_bytes(rel, self.max_edit_bytes)

    async def snapshot(self, path: str) -> bytes | None:
        """The file's bytes as they are now (None if it does not exist), remembering nothing:
        a checkpoint's copy. Links are not followed; anything but a regular file is refused."""
        rel = self.rel(path)

        def read() -> bytes | None:
            try:
                with self.fs.open_read(rel, follow=False) as f:
                    return f.read()
            except FileNotFoundError:
                return None

        return await asyncio.to_thread(read)

    def decode(self, rel: str, data: bytes) -> str:
        """Strict UTF-8, or a ToolError that says how to change such a file."""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            err = NotUtf8(e.start, data[max(e.start - 8, 0) : e.start + 8])
            raise ToolError(utf8_help(rel, err), "NOT_UTF8") from None

    async def read_text(self, path: str) -> str:
        """A whole UTF-8 file (too big or not UTF-8: a ToolError that says what to do)."""
        rel = self.rel(path)
        try:
            data = await self.run_io(rel, lambda: self.read_bytes_sync(rel), "read")
        except PathError as e:
            if e.code == "TOO_LARGE":
                raise ToolError(self.too_large(rel), "TOO_LARGE") from None
            raise
        return self.decode(rel, data)

    def too_large(self, rel: str) -> str:
        """What to tell the model about a file too big to edit as text."""
        return (
            f"{rel} is larger than {self.max_edit_bytes // (1024 * 1024)} MiB: edit_file and "
            "write_file do not load it. Page through it with read_file (offset/limit) and "
            "change it with execute_code or bash."
        )

    async def read_page(self, path: str, offset: int = 1, limit: int = 2000) -> TextPage:
        """Lines of a text file, paged, in bounded memory (any size, any encoding)."""
        rel = self.rel(path)

        def read() -> TextPage:
            with self.fs.open_read(rel) as f:
                return read_page(f, offset, limit, max_bytes=20_000)

        return await self.run_io(rel, read, "read")

    def check_replaceable(self, rel: str) -> bool:
        """Whether ``rel`` exists; refuses a file the text tools must not rewrite."""
        st = self.fs.lstat(rel)
        if st is None:
            return False
        try:
            with self.fs.open_read(rel, follow=False) as f:
                check_utf8(f)
        except NotUtf8 as e:
            raise ToolError(utf8_help(rel, e), "NOT_UTF8") from None
        return True

    # -- writing -------------------------------------------------------------------------

    async def write_text(self, path: str, content: str) -> None:
        """Write atomically (random temp file + rename), never through a link: a link that
        stays inside the workspace is resolved first, one that leaves it is refused."""
        rel = self.relative(self.resolve(path))
        data = _encode(rel, content)
        # As a session, the replace (a rename in the folder) would pass where the folder is
        # shared: the file itself must be writable to be overwritten.
        acting = ACTING.get() is not None

        def write() -> None:
            if acting:
                self._may_write(rel)
            self.check_replaceable(rel)
            self.fs.write_bytes(rel, data)

        await self.run_io(rel, write, "write")

    async def delete(self, path: str) -> None:
        """Delete one file (directories are refused; a link is removed, not followed)."""
        rel = self.rel(path)
        acting = ACTING.get() is not None

        def delete() -> None:
            if acting:
                self._may_delete(rel)
            st = self.fs.lstat(rel)
            if st is None:
                raise FileNotFoundError(errno.ENOENT, rel)
            if stat.S_ISDIR(st.st_mode):
                raise PathError(f"{path!r} is a directory; only files can be deleted")
            self.fs.unlink(rel)

        await self.run_io(rel, delete, "delete")

    async def list(self, path: str = ".") -> list[Entry]:
        """List one directory, sorted, hiding caches and our temp files."""
        rel = "" if path in ("", ".", "./") else self.rel(path)

        def _list() -> list[Entry]:
            st = self.fs.stat(rel)
            if st is None:
                raise FileNotFoundError(errno.ENOENT, rel)
            if not stat.S_ISDIR(st.st_mode):
                raise PathError(f"{path!r} is a file; use read_file")
            out = []
            with self.fs.scandir(rel) as entries:
                for child in sorted(entries, key=lambda e: e.name):
                    if child.name in HIDDEN_NAMES or is_temp_name(child.name):
                        continue
                    child_rel = f"{rel}/{child.name}" if rel else child.name
                    if self._is_private(child_rel):
                        continue
                    try:
                        is_dir = child.is_dir()
                        size = 0 if is_dir else child.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
                    out.append(Entry(child_rel, is_dir, size))
            return out

        return await self.run_io(rel or ".", _list, "list")

    def _is_private(self, rel: str) -> bool:
        try:
            self.fs.parts(rel)
        except UnsafePathError:
            return True
        return False


def _lstat_at(dfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _need(dfd: int, name: str, mode: int) -> None:
    """EACCES unless this thread's credentials grant ``mode`` (``faccessat`` with
    ``AT_EACCESS`` checks the filesystem ids, ACLs included)."""
    if not os.access(name, mode, dir_fd=dfd, effective_ids=True, follow_symlinks=False):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)


def _open_for_write(dfd: int, name: str) -> None:
    """Open an existing file for writing (nothing is written, nothing truncated)."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    os.close(os.open(name, flags, dir_fd=dfd))


def _encode(rel: str, content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"content for {rel} is not valid unicode (a lone surrogate)") from None
