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
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol, TypeVar

from ..dataclasses_light import dataclass
from ..safefs import SafeRoot, UnsafePathError, is_temp_name, split
from .base import ToolError
from .textpage import NotUtf8, TextPage, check_utf8, read_page, utf8_help

T = TypeVar("T")

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


def os_error(path: str, e: OSError) -> ToolError:
    """A filesystem error as a message the model can act on."""
    if isinstance(e, UnsafePathError):
        code = {errno.EFBIG: "TOO_LARGE", errno.ELOOP: "SYMLINK_REFUSED"}.get(e.errno or 0)
        return PathError(str(e), code or "PATH_NOT_ALLOWED")
    if isinstance(e, FileNotFoundError):
        return PathError(f"{path!r} does not exist")
    if isinstance(e, IsADirectoryError):
        return PathError(f"{path!r} is a directory; use list_files")
    if isinstance(e, NotADirectoryError):
        return PathError(f"{path!r}: a part of the path is a file, not a folder")
    if isinstance(e, PermissionError):
        return PathError(f"{path!r}: permission denied")
    return ToolError(f"{path}: {e.strerror or e}", "OS_ERROR")


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

    async def _io(self, path: str, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except OSError as e:
            raise os_error(path, e) from None

    # -- reading -------------------------------------------------------------------------

    def read_bytes_sync(self, rel: str) -> bytes:
        """A whole regular file, at most ``max_edit_bytes`` (OSError otherwise)."""
        return self.fs.read_bytes(rel, self.max_edit_bytes)

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
            data = await self._io(rel, lambda: self.read_bytes_sync(rel))
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

        return await self._io(rel, read)

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

        def write() -> None:
            self.check_replaceable(rel)
            self.fs.write_bytes(rel, data)

        await self._io(rel, write)

    async def delete(self, path: str) -> None:
        """Delete one file (directories are refused; a link is removed, not followed)."""
        rel = self.rel(path)

        def delete() -> None:
            st = self.fs.lstat(rel)
            if st is None:
                raise FileNotFoundError(errno.ENOENT, rel)
            if stat.S_ISDIR(st.st_mode):
                raise PathError(f"{path!r} is a directory; only files can be deleted")
            self.fs.unlink(rel)

        await self._io(rel, delete)

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

        return await self._io(rel or ".", _list)

    def _is_private(self, rel: str) -> bool:
        try:
            self.fs.parts(rel)
        except UnsafePathError:
            return True
        return False


def _encode(rel: str, content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"content for {rel} is not valid unicode (a lone surrogate)") from None
