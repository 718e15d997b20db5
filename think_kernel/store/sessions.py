"""Sessions: one row each, with a kind (chat, notebook, magic, mcp), a title and options."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from .ids import new_id
from .part import StorePart

if TYPE_CHECKING:
    from .history import HistoryCache

SESSION_FIELDS = {"title", "path", "status", "options", "kind"}


class SessionsMixin(StorePart):
    """Create, read, list, change and delete sessions (and what is recorded for them)."""

    if TYPE_CHECKING:  # provided by Store
        history: HistoryCache

        async def _update(self, table: str, key: str, allowed: set[str], **fields: Any) -> None: ...

    async def create_session(
        self,
        title: str = "",
        path: str = "",
        options: dict[str, Any] | None = None,
        id: str | None = None,
        kind: str = "chat",
    ) -> dict[str, Any]:
        """Create a session and return it. ``kind``: chat (the sidebar), notebook (a think
        notebook's kernel), magic (``%%think`` in another kernel) or mcp (an agent calling
        Think's tools over MCP)."""
        now = time.time()
        sid = id or new_id("s_")
        await self.db.execute(
            "INSERT INTO sessions (id, title, path, status, options, created_at, updated_at,"
            " kind) VALUES (?, ?, ?, 'idle', ?, ?, ?, ?)",
            (sid, title, path, json.dumps(options or {}), now, now, kind),
        )
        session = await self.get_session(sid)
        assert session is not None
        return session

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        """Return a session, or None."""
        return await self._one("SELECT * FROM sessions WHERE id = ?", (session_id,))

    async def ensure_session(self, session_id: str, **kwargs: Any) -> dict[str, Any]:
        """Return the session, creating it with this id if it does not exist."""
        return await self.get_session(session_id) or await self.create_session(
            id=session_id, **kwargs
        )

    async def list_sessions(
        self, limit: int = 100, offset: int = 0, kind: str | None = None
    ) -> list[dict[str, Any]]:
        """Sessions (of one kind, if given), most recently updated first, with their
        message counts."""
        where, params = ("WHERE s.kind = ?", [kind]) if kind else ("", [])
        return await self._all(
            "SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id"
            " AND m.facet IS NULL AND m.off_branch = 0)"
            f" AS message_count FROM sessions s {where} ORDER BY updated_at DESC"
            " LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )

    async def update_session(self, session_id: str, **fields: Any) -> None:
        """Change title, path, status or options."""
        await self._update("sessions", session_id, SESSION_FIELDS, **fields)

    async def session_options(self, session_id: str) -> dict[str, Any]:
        """A session's options (its "props": model, instructions, approval...)."""
        session = await self.get_session(session_id)
        return dict((session or {}).get("options") or {})

    async def change_session_options(
        self, session_id: str, changes: dict[str, Any]
    ) -> dict[str, Any]:
        """Change some options (a value of None removes one); return them all."""
        options = await self.session_options(session_id)
        for key, value in changes.items():
            if value is None:
                options.pop(key, None)
            else:
                options[key] = value
        await self.update_session(session_id, options=options)
        return options

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session and everything recorded for it; True if it existed."""
        cur = await self.db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        existed = cur.rowcount > 0
        for table in (
            "messages",
            "action_log",
            "events",
            "tasks",
            "schedules",
            "firings",
            "approvals",
            "runs",
            "usage",
            "branches",
        ):
            await self.db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
        self.history.forget(session_id)
        return existed
