"""The person's memory file over REST: ``GET /api/think/memory`` shows it with the notes the
agent added; ``POST /api/think/memory/undo`` takes one of them out (the sidebar's Undo on a
``remember`` card).

The file is the one kernels put in their prompts: ``MEMORY.md`` in the user-level Think folder,
or ``c.MemoryConfig.path`` of the server's configuration (set it there too when kernels are
configured to use another file).
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.memory import MemoryConfig, MemoryFile
from think_kernel.memory.undo import UndoError, remembered, undo_remember

from .base import ThinkHandler, field


class _MemoryHandler(ThinkHandler):
    def memory(self) -> MemoryFile:
        """The memory file, as the server's configuration names it."""
        return MemoryFile(MemoryConfig(config=self.server_config))


class MemoryHandler(_MemoryHandler):
    """``GET``: the file's path and text, and the notes ``remember`` added."""

    @authorized
    async def get(self) -> None:
        """The memory file and the agent's notes, newest first."""
        memory = self.memory()
        try:
            text = memory.read()
        except OSError as e:
            raise web.HTTPError(500, f"cannot read {memory.path}: {e.strerror}") from None
        notes = await remembered(self.svc.store, memory)
        self.send(
            {"path": str(memory.path), "text": text, "notes": [n.as_json() for n in notes[:50]]}
        )


class MemoryUndoHandler(_MemoryHandler):
    """``POST {"action_id"?, "line"?, "session_id"?}``: take out a note ``remember`` added."""

    @authorized
    async def post(self) -> None:
        """Take the note out of the file; 404 for no such call, 409 when it is gone already."""
        body = self.body()
        action_id = field(body, "action_id", str) or ""
        line = field(body, "line", str) or ""
        session_id = field(body, "session_id", str) or ""
        if not action_id and not line:
            raise web.HTTPError(400, "send the 'action_id' or the 'line' of a remember call")
        try:
            removed = await undo_remember(
                self.svc.store, self.memory(), session_id, action_id=action_id, line=line
            )
        except UndoError as e:
            raise web.HTTPError(404 if e.missing else 409, str(e)) from None
        self.send({"removed": removed})


def memory_routes(base: str = "/api/think") -> list[tuple[str, type[ThinkHandler]]]:
    """URL patterns of the memory handlers."""
    return [(f"{base}/memory", MemoryHandler), (f"{base}/memory/undo", MemoryUndoHandler)]
