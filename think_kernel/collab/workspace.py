"""A Workspace whose reads and writes go through the collaboration rooms (over the link).

    ws = CollabWorkspace(server_root, link)
    text = await ws.read_text("src/a.py")
    await ws.write_text("src/a.py", text.replace("1", "2"))   # a diff, merged with humans

Paths are relative to the server root (the workspace root is the server root). Listing and
path checks use the local disk (the kernel runs on the server's machine); every read, write and
delete goes through the server, so nothing is written behind an open room.

A write carries what the agent last read or wrote of the file (:meth:`seen`): the server merges
what others changed since on other lines and refuses a change to the same lines
(:class:`~.access.ConflictError`, with the current text); it waits, bounded and with a status
event, while a person types on those lines. :meth:`flush_rooms` and :meth:`sync_rooms` keep disk
and rooms one truth around sandboxed runs (:mod:`.filesync`).
"""

from __future__ import annotations

import os
from typing import Any

from ..tools.base import ToolError
from ..tools.workspace import LocalWorkspace, PathError
from .access import ConflictError, Link, call_when_quiet, conflict_error


class CollabWorkspace(LocalWorkspace):
    """Workspace protocol over the ``doc.*`` RPCs."""

    def __init__(self, root: str | os.PathLike[str], link: Link) -> None:
        super().__init__(root)
        self.link = link
        self.action_id = ""  # set by the runtime per tool call, for attribution
        self.context: Any = None  # the ToolContext of the call (for status events)
        # Text as last read or written: a write is merged with what others typed since.
        self._seen: dict[str, str] = {}

    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = await self.link.request(method, params)
        if isinstance(result, dict) and result.get("error"):
            msg = str(result["error"])
            if result.get("code") == "CONFLICT":
                raise conflict_error(result, f"{params.get('path')} (read_file)")
            raise PathError(msg) if "does not exist" in msg else ToolError(msg)
        return result

    def _rel(self, path: str) -> str:
        return self.relative(self.resolve(path))

    def seen(self, path: str) -> str | None:
        """The file's text as the agent last read or wrote it (None: not read yet)."""
        return self._seen.get(self._rel(path))

    async def read_text(self, path: str) -> str:
        rel = self._rel(path)
        content = str((await self._call("doc.read", {"path": rel}))["content"])
        self._seen[rel] = content
        return content

    async def _on_wait(self, detail: str | None) -> None:
        from ..agent.events import StatusEvent

        ctx = self.context
        if ctx is None:
            return
        if detail is None:
            await ctx.send(StatusEvent("executing", "writing"))
        else:
            await ctx.send(StatusEvent("waiting", detail))

    async def write_text(self, path: str, content: str) -> None:
        rel = self._rel(path)
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
        rel = self._rel(path)
        await self._call("doc.delete", {"path": rel, "action_id": self.action_id})
        self._seen.pop(rel, None)

    async def flush_rooms(self, hold: float) -> str | None:
        """Save the workspace's dirty rooms; hold autosaves for ``hold`` s; return the lease."""
        out = await self._call("doc.flush", {"path": ".", "hold": hold})
        lease = out.get("lease")
        return lease if isinstance(lease, str) else None

    async def sync_rooms(self, paths: list[str], lease: str | None) -> list[str]:
        """Merge these files' changes on disk into their open rooms; release the lease."""
        out = await self._call("doc.sync", {"paths": paths, "lease": lease})
        return [str(p) for p in out.get("merged") or []]
