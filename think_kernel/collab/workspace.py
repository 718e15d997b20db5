"""A Workspace whose reads and writes go through the collaboration rooms (over the link).

    ws = CollabWorkspace(server_root, link)
    text = await ws.read_text("src/a.py")
    await ws.write_text("src/a.py", text.replace("1", "2"))   # a diff, merged with humans

Paths are relative to the server root (the workspace root is the server root). Listing and
path checks use the local disk (the kernel runs on the server's machine); every read, write and
delete goes through the server, so nothing is written behind an open room.
"""

from __future__ import annotations

import os
from typing import Any

from ..tools.base import ToolError
from ..tools.workspace import LocalWorkspace, PathError
from .access import Link


class CollabWorkspace(LocalWorkspace):
    """Workspace protocol over the ``doc.*`` RPCs."""

    def __init__(self, root: str | os.PathLike[str], link: Link) -> None:
        super().__init__(root)
        self.link = link
        self.action_id = ""  # set by the runtime per tool call, for attribution
        # Text as last read or written: a write is merged with what others typed since.
        self._seen: dict[str, str] = {}

    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = await self.link.request(method, params)
        if isinstance(result, dict) and result.get("error"):
            msg = str(result["error"])
            raise PathError(msg) if "does not exist" in msg else ToolError(msg)
        return result

    def _rel(self, path: str) -> str:
        return self.relative(self.resolve(path))

    async def read_text(self, path: str) -> str:
        rel = self._rel(path)
        content = str((await self._call("doc.read", {"path": rel}))["content"])
        self._seen[rel] = content
        return content

    async def write_text(self, path: str, content: str) -> None:
        rel = self._rel(path)
        params: dict[str, Any] = {"path": rel, "content": content, "action_id": self.action_id}
        if rel in self._seen:
            params["base"] = self._seen[rel]
        await self._call("doc.write", params)
        self._seen[rel] = content

    async def delete(self, path: str) -> None:
        rel = self._rel(path)
        await self._call("doc.delete", {"path": rel, "action_id": self.action_id})
        self._seen.pop(rel, None)
