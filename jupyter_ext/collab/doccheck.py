"""What a document request must pass before it reaches a room: a path inside the server
root, and a file a room may load; the error the agent can correct."""

from __future__ import annotations

import asyncio
import posixpath
import stat
from typing import Any

from pycrdt import Text

from think_kernel.collab.merge import MergeConflict
from think_kernel.safefs import SafeRoot
from think_kernel.tools.textpage import NotUtf8, check_utf8


class DocumentError(Exception):
    """A request the agent can correct (missing file, unknown cell, a conflict, ...)."""

    def __init__(self, message: str, code: str = "DOCUMENT_ERROR", **data: Any) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def conflict(what: str, e: MergeConflict, current: str) -> DocumentError:
    """The error for an edit that touches lines someone else changed (the agent reads again)."""
    return DocumentError(
        f"{what} {e}; someone else edited the same lines, so nothing was written",
        "CONFLICT",
        current=current,
        lines=e.lines,
    )


def kind_of(path: str) -> str:
    """``notebook`` or ``file``, by the path's extension."""
    return "notebook" if path.endswith(".ipynb") else "file"


def source_of(doc: Any) -> Text:
    """The text of a file's document ("source" is the documented root type of a YUnicode)."""
    return doc.ydoc.get("source", type=Text)


def check_path(path: str) -> str:
    """A normalised server-relative path; DocumentError if it is empty or leaves the root."""
    if not isinstance(path, str) or not path.strip():
        raise DocumentError("path is empty")
    norm = posixpath.normpath(path.strip().replace("\\", "/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise DocumentError(f"{path!r} is outside the server root")
    return norm


#: Codes of files that are never loaded into a room (see :func:`check_loadable`).
UNLOADABLE = ("NOT_UTF8", "TOO_LARGE", "NOT_REGULAR")


async def check_loadable(
    root_dir: str, path: str, max_bytes: int, checked: dict[str, tuple[int, int, int]]
) -> None:
    """Refuse to load into a room (and the server's memory) what does not belong there:
    anything but a regular file, a file over ``max_bytes``, or one that is not UTF-8
    (jupyter-collaboration would fail to load it, and keep a broken empty room that a later
    save would write over the file). ``checked`` remembers files already found fine, by
    inode, size and mtime, so a file is read once per change."""

    def check() -> None:
        fs = SafeRoot(root_dir)
        try:
            st = fs.stat(path)
            if st is None:
                return
            if not stat.S_ISREG(st.st_mode):
                raise DocumentError(f"{path!r} is not a regular file", "NOT_REGULAR")
            if st.st_size > max_bytes:
                raise DocumentError(
                    f"{path} is {st.st_size} bytes; files over {max_bytes} bytes are not "
                    "loaded into a collaboration room",
                    "TOO_LARGE",
                )
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
            if checked.get(path) == key:
                return
            with fs.open_read(path) as f:
                check_utf8(f)
            checked[path] = key
        except NotUtf8 as e:
            raise DocumentError(
                f"{path} is not UTF-8 text (byte {e.offset}); it is not loaded into a "
                "collaboration room",
                "NOT_UTF8",
            ) from None
        except OSError as e:
            raise DocumentError(str(e), "PATH_NOT_ALLOWED") from None

    await asyncio.to_thread(check)
