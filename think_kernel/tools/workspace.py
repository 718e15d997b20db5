"""Where file tools read and write: a small protocol and the local-disk implementation.

    ws = LocalWorkspace("/home/me/project")
    await ws.write_text("src/a.py", "print('hi')\\n")
    text = await ws.read_text("src/a.py")

Every path is relative to the workspace root. ``..``, absolute paths and symlinks that lead out
of the root are refused with a :class:`PathError` that says why. The collaboration issue adds a
workspace that goes through the Yjs rooms of jupyter-collaboration; tools do not change.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from .base import ToolError


class PathError(ToolError):
    """A path that is not allowed (outside the workspace, missing, a directory, ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "PATH_NOT_ALLOWED")


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
        """Return a file's text."""
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
    """Normalise a model-given path; refuse absolute paths and ``..`` segments."""
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
    return str(p)


class LocalWorkspace:
    """The workspace on local disk (the notebook's folder or the server root)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def resolve(self, path: str) -> Path:
        """Resolve symlinks too: a link that points out of the root is refused."""
        rel = check_relative(path)
        full = (self.root / rel).resolve()
        if full != self.root and self.root not in full.parents:
            raise PathError(f"{path!r} resolves outside the workspace (through a symlink)")
        return full

    def relative(self, full: Path) -> str:
        """The workspace-relative form of an absolute path inside the root."""
        return full.relative_to(self.root).as_posix() or "."

    async def read_text(self, path: str) -> str:
        """Read a UTF-8 file (undecodable bytes are replaced, not fatal)."""
        full = self.resolve(path)
        if full.is_dir():
            raise PathError(f"{path!r} is a directory; use list_files")
        if not full.exists():
            raise PathError(f"{path!r} does not exist")
        return await asyncio.to_thread(full.read_text, "utf-8", "replace")

    async def write_text(self, path: str, content: str) -> None:
        """Write atomically (temp file + rename) so a crash never leaves half a file."""
        full = self.resolve(path)
        if full.is_dir():
            raise PathError(f"{path!r} is a directory")

        def _write() -> None:
            full.parent.mkdir(parents=True, exist_ok=True)
            tmp = full.with_name(f".{full.name}.think-tmp")
            tmp.write_text(content, "utf-8")
            os.replace(tmp, full)

        await asyncio.to_thread(_write)

    async def delete(self, path: str) -> None:
        """Delete one file (directories are refused)."""
        full = self.resolve(path)
        if full == self.root or full.is_dir():
            raise PathError(f"{path!r} is a directory; only files can be deleted")
        if not full.exists():
            raise PathError(f"{path!r} does not exist")
        await asyncio.to_thread(full.unlink)

    async def list(self, path: str = ".") -> list[Entry]:
        """List one directory, sorted, hiding our own ``.think`` folder."""
        full = self.root if path in ("", ".", "./") else self.resolve(path)
        if not full.exists():
            raise PathError(f"{path!r} does not exist")
        if not full.is_dir():
            raise PathError(f"{path!r} is a file; use read_file")

        def _list() -> list[Entry]:
            out = []
            for child in sorted(full.iterdir()):
                if child.name in (".think", ".ipynb_checkpoints", "__pycache__"):
                    continue
                is_dir = child.is_dir()
                size = 0 if is_dir else child.lstat().st_size
                out.append(Entry(self.relative(child.absolute()), is_dir, size))
            return out

        return await asyncio.to_thread(_list)
