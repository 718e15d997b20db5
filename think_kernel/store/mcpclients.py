"""Which session an MCP client's calls are logged in (the table of migration m011).

sid = await store.mcp_client_session("claude-code")    # None: never seen, or deleted
await store.bind_mcp_client("claude-code", session_id)
"""

from __future__ import annotations

import time

from .part import StorePart


class McpClientsMixin(StorePart):
    """``mcp_client_session`` / ``bind_mcp_client`` on the ``mcp_clients`` table."""

    async def mcp_client_session(self, name: str) -> str | None:
        """The session of a client, if it still exists (its last use is noted)."""
        row = await self._one(
            "SELECT c.session_id FROM mcp_clients c JOIN sessions s ON s.id = c.session_id"
            " WHERE c.name = ?",
            (name,),
        )
        if row is None:
            return None
        await self._write(
            "UPDATE mcp_clients SET last_seen = ? WHERE name = ?", (time.time(), name)
        )
        return str(row["session_id"])

    async def bind_mcp_client(self, name: str, session_id: str) -> None:
        """Log the client's calls in ``session_id`` from now on."""
        now = time.time()
        await self._write(
            "INSERT INTO mcp_clients (name, session_id, first_seen, last_seen) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(name) DO UPDATE SET session_id = excluded.session_id,"
            " last_seen = excluded.last_seen",
            (name, session_id, now, now),
        )
