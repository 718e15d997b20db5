"""A Workspace whose reads and writes go through the collaboration rooms (over the link).

    ws = CollabWorkspace(server_root, link)
    text = await ws.read_text("src/a.py")
    await ws.write_text("src/a.py", text.replace("1", "2"))   # a diff, merged with humans

Paths are relative to the server root (the workspace root is the server root). Listing and
path checks use the local disk (the kernel runs on the server's machine); every read, write and
delete of a text file goes through the server, so nothing is written behind an open room.
A file that must not be loaded into a room (larger than ``max_edit_bytes``, or not UTF-8) is
paged straight from disk by ``read_page`` and refused by the writing tools; anything but a
regular file is refused before the server is asked.

A write carries what the agent last read or wrote of the file (:meth:`seen`): the server merges
what others changed since on other lines and refuses a change to the same lines
(:class:`~.access.ConflictError`, with the current text); it waits, bounded and with a status
event, while a person types on those lines. :meth:`flush_rooms` and :meth:`sync_rooms` keep disk
and rooms one truth around sandboxed runs (:mod:`.filesync`).
"""

from __future__ import annotations

import asyncio
import copy
import os
import stat
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from ..tools.base import ToolError
from ..tools.textpage import TextPage, page_of_text
from ..tools.workspace import LocalWorkspace, PathError, StatusSink, os_error
from .access import ConflictError, Link, call_when_quiet, conflict_error

#: Think's own workspace folder (skills, self-written tools): hidden, so Jupyter's contents
#: manager (``allow_hidden`` False by default) opens no room on it; its files go to disk.
ON_DISK = ".think"


def on_disk(rel: str) -> bool:
    """Whether a workspace-relative path is read and written on disk, never in a room."""
    return rel == ON_DISK or rel.startswith(ON_DISK + "/")


PageReader = Callable[[str, int, int], Awaitable[TextPage]]


async def read_page_remembered(
    ws: Any, path: str, offset: int, limit: int, from_disk: PageReader
) -> TextPage:
    """A page of ``path`` for a room-backed or versioned workspace.

    A regular UTF-8 file up to ``ws.max_edit_bytes`` is read whole with ``ws.read_text`` (the
    document's current text, remembered as the base of the next write) and paged in memory;
    a bigger one, or one that is not UTF-8, is paged from disk in bounded memory.
    """
    rel = ws.rel(path)
    st = await asyncio.to_thread(_stat, ws, rel)
    if st is not None and st.st_size <= ws.max_edit_bytes:
        try:
            text = await ws.read_text(rel)
        except ToolError as e:
            if e.code not in ("NOT_UTF8", "TOO_LARGE"):
                raise
        else:
            return page_of_text(text, offset, limit, max_bytes=20_000)
    return await from_disk(rel, offset, limit)


def _stat_or_none(ws: Any, rel: str) -> os.stat_result | None:
    """The entry itself (no link followed), or None when it does not exist."""
    try:
        return ws.fs.lstat(rel)
    except OSError:
        return None


def _stat(ws: Any, rel: str) -> os.stat_result | None:
    """The file's stat (links inside the root followed); only regular files pass."""
    try:
        st = ws.fs.stat(rel)
        if st is not None and not stat.S_ISREG(st.st_mode):
            with ws.fs.open_read(rel):  # raises the precise error (a FIFO, a folder...)
                pass
        return st
    except OSError as e:
        raise os_error(rel, e) from None


class CollabWorkspace(LocalWorkspace):
    """Workspace protocol over the ``doc.*`` RPCs."""

    def __init__(self, root: str | os.PathLike[str], link: Link) -> None:
        super().__init__(root)
        self.link = link
        self.action_id = ""  # the tool call whose edits these are (see for_call)
        self.status: StatusSink | None = None  # where a wait for a person is shown
        # Text as last read or written: a write is merged with what others typed since.
        self._seen: dict[str, str] = {}

    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = await self.link.request(method, params)
        if isinstance(result, dict) and result.get("error"):
            msg = str(result["error"])
            if result.get("code") == "CONFLICT":
                raise conflict_error(result, f"{params.get('path')} (read_file)")
            code = str(result.get("code") or "DOCUMENT_ERROR")
            raise PathError(msg) if "does not exist" in msg else ToolError(msg, code)
        return result

    def _rel(self, path: str) -> str:
        return self.relative(self.resolve(path))

    async def _check_file(self, rel: str) -> None:
        """Refuse, before the server loads a room, what must not be loaded into one."""
        st = await asyncio.to_thread(_stat, self, rel)
        if st is not None and st.st_size > self.max_edit_bytes:
            raise ToolError(self.too_large(rel), "TOO_LARGE")

    def seen(self, path: str) -> str | None:
        """The file's text as the agent last read or wrote it (None: not read yet)."""
        return self._seen.get(self._rel(path))

    async def read_text(self, path: str) -> str:
        """The document's current text (from its room; unsaved edits included)."""
        rel = self._rel(path)
        if on_disk(rel):
            content = await super().read_text(path)
            self._seen[rel] = content
            return content
        await self._check_file(rel)
        content = str((await self._call("doc.read", {"path": rel}))["content"])
        self._seen[rel] = content
        return content

    async def snapshot(self, path: str) -> bytes | None:
        """The file as its room shows it now (unsaved edits included; a file no room can hold:
        from disk), None if it does not exist; the agent's last-read text is not changed."""
        rel = self._rel(path)
        st = await asyncio.to_thread(_stat_or_none, self, rel)
        if st is None or not stat.S_ISREG(st.st_mode) or on_disk(rel):
            return await super().snapshot(rel)  # absent, or refused: a link is not followed
        if st.st_size > self.max_edit_bytes:
            return await super().snapshot(rel)
        try:
            return str((await self._call("doc.read", {"path": rel}))["content"]).encode()
        except ToolError as e:
            if e.code not in ("NOT_UTF8", "TOO_LARGE", "DOCUMENT_ERROR"):
                raise
            return await super().snapshot(rel)

    async def read_page(self, path: str, offset: int = 1, limit: int = 2000) -> TextPage:
        """A page: from the room for files it can hold, else straight from disk."""
        return await read_page_remembered(self, path, offset, limit, super().read_page)

    def for_call(self, call_id: str, status: StatusSink | None = None) -> CollabWorkspace:
        """A view for one tool call: its edits carry the call's id, its waits are shown.

        A shallow copy: concurrent calls keep their own id; what was read stays shared."""
        view = copy.copy(self)
        view.action_id, view.status = call_id, status
        return view

    async def _on_wait(self, detail: str | None) -> None:
        from ..agent.events import StatusEvent

        if self.status is None:
            return
        if detail is None:
            await self.status(StatusEvent("executing", "writing"))
        else:
            await self.status(StatusEvent("waiting", detail))

    async def write_text(self, path: str, content: str) -> None:
        """Write by a minimal diff in the file's room, merged with others' edits."""
        rel = self._rel(path)
        if on_disk(rel):
            await super().write_text(path, content)
            self._seen[rel] = content
            return
        await self._check_file(rel)
        params: dict[str, Any] = {"path": rel, "content": content, "action_id": self.action_id}
        if rel in self._seen:
            params["base"] = self._seen[rel]
        try:
            await call_when_quiet(self._call, "doc.write", params, self._on_wait)
        except ConflictError as e:
            self._seen[rel] = e.current  # the refusal showed the model this text
            raise
        self._seen[rel] = content

    async def delete(self, path: str) -> None:
        """Delete through the server's contents manager."""
        rel = self._rel(path)
        if on_disk(rel):
            await super().delete(path)
        else:
            await self._call("doc.delete", {"path": rel, "action_id": self.action_id})
        self._seen.pop(rel, None)

    async def flush_rooms(self, hold: float) -> str | None:
        """Save the workspace's dirty rooms; hold autosaves for ``hold`` s; return the lease.

        While the server says no room is open there is nothing to save: the hold then starts
        with an unanswered item and a lease made here (no round trip before each
        command of a chat with no document open). It reaches the server before anything
        that ends it; a room opened meanwhile loads the file from disk, and its autosaves
        wait for the hold as after a flush."""
        push = getattr(self.link, "push", None)
        if hold > 0 and callable(push) and getattr(self.link, "rooms_open", None) is False:
            mine = "k" + uuid.uuid4().hex
            push({"kind": "doc.hold", "lease": mine, "path": ".", "hold": hold})
            return mine
        out = await self._call("doc.flush", {"path": ".", "hold": hold})
        lease = out.get("lease")
        return lease if isinstance(lease, str) else None

    async def sync_rooms(self, paths: list[str], lease: str | None) -> list[str]:
        """Merge these files' changes on disk into their open rooms; release the lease.

        A run that changed no file has nothing to merge: its lease goes back in an item that
        travels with the run's next events, unanswered (no round trip, and one
        frame less each way, for each read-only command). Items reach the server in order,
        and before any later request of this kernel."""
        push = getattr(self.link, "push", None)
        if not paths and lease is not None and callable(push):
            push({"kind": "doc.release", "lease": lease})
            return []
        out = await self._call("doc.sync", {"paths": paths, "lease": lease})
        return [str(p) for p in out.get("merged") or []]
