"""The append-only records of what happened: the action log and the event stream."""

from __future__ import annotations

import json
import time
from typing import Any

from .ids import new_id
from .part import StorePart


class ActionsMixin(StorePart):
    """``action_log`` rows (one per tool call) and ``events`` (a session's frames, in order)."""

    async def log_action(self, **row: Any) -> str:
        """Append one action-log row (summaries only, never whole contents); returns its id."""
        row.setdefault("id", new_id("a_"))
        row.setdefault("ts", time.time())
        row["success"] = int(bool(row.get("success", True)))
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        await self._write(f"INSERT INTO action_log ({cols}) VALUES ({marks})", row.values())
        return str(row["id"])

    async def list_actions(
        self,
        session_id: str,
        tool: str | None = None,
        success: bool | None = None,
        since: float | None = None,
        until: float | None = None,
        message_id: str | None = None,
        limit: int = 500,
        task_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Action-log rows for a session, oldest first, filtered (``task_id``: the calls of
        one subagent)."""
        where = ["session_id = ?"]
        params: list[Any] = [session_id]
        for col, op, value in (
            ("tool", "=", tool),
            ("success", "=", None if success is None else int(success)),
            ("ts", ">=", since),
            ("ts", "<=", until),
            ("message_id", "=", message_id),
            ("task_id", "=", task_id),
        ):
            if value is not None:
                where.append(f"{col} {op} ?")
                params.append(value)
        params.append(limit)
        rows = await self._all(
            f"SELECT * FROM action_log WHERE {' AND '.join(where)} ORDER BY ts, id LIMIT ?",
            params,
        )
        for r in rows:
            r["success"] = bool(r["success"])
        return rows

    async def recent_actions(self, tool: str, limit: int = 200) -> list[dict[str, Any]]:
        """The successful calls of one tool in every session of the store, newest first."""
        return await self._all(
            "SELECT * FROM action_log WHERE tool = ? AND success = 1 ORDER BY ts DESC LIMIT ?",
            (tool, limit),
        )

    async def append_event(
        self, session_id: str, type: str, data: dict[str, Any], event_id: str | None = None
    ) -> int:
        """Append an event; return its sequence number (0 if ``event_id`` was seen before)."""
        cur = await self.db.execute(
            "INSERT OR IGNORE INTO events (session_id, type, data, ts, event_id)"
            " VALUES (?, ?, ?, ?, ?)",
            (session_id, type, json.dumps(data), time.time(), event_id),
        )
        return int(cur.lastrowid or 0) if cur.rowcount > 0 else 0

    async def list_events(
        self, session_id: str, after: int = 0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Events after a sequence number, oldest first."""
        return await self._all(
            "SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, after, limit),
        )
