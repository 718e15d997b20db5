"""Store methods for the task graph and the subagents that work on tasks.

Mixed into :class:`~think_kernel.store.Store`. A request's tasks share its root's id in
``root_id``; rows come back in creation order. The subagent of a task lives in the task's
``subagent_*`` columns; :meth:`TasksMixin.update_subagent` can be made conditional on the
current subagent status, so the kernel that runs a subagent and the server that watches it
never both finish it (the first writer wins).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from .part import StorePart

TASK_COLUMNS = (
    "id",
    "session_id",
    "root_id",
    "parent_id",
    "title",
    "description",
    "type",
    "status",
    "dependencies",
    "result",
    "error",
    "message_id",
    "created_at",
    "updated_at",
)
SUBAGENT_FIELDS = {
    "subagent_status",
    "subagent_model",
    "subagent_owner",
    "subagent_started_at",
    "subagent_ended_at",
    "subagent_heartbeat_at",
    "subagent_deadline",
}


class TasksMixin(StorePart):
    """Task rows: upsert a request's changed tasks, read trees, track subagents."""

    async def list_tasks(self, session_id: str) -> list[dict[str, Any]]:
        """Tasks of a session in creation order."""
        return await self._all(
            "SELECT * FROM tasks WHERE session_id = ? ORDER BY rowid", (session_id,)
        )

    async def tasks_of_root(self, root_id: str) -> list[dict[str, Any]]:
        """A request's tasks (its root first), in creation order."""
        return await self._all(
            "SELECT * FROM tasks WHERE id = ? OR root_id = ? ORDER BY rowid", (root_id, root_id)
        )

    async def get_task(self, task_id: str) -> dict[str, Any] | None:
        """One task row, or None."""
        return await self._one("SELECT * FROM tasks WHERE id = ?", (task_id,))

    async def root_of_message(self, message_id: str) -> dict[str, Any] | None:
        """The root task of the request a user message started, or None."""
        return await self._one(
            "SELECT * FROM tasks WHERE message_id = ? AND parent_id IS NULL ORDER BY rowid DESC"
            " LIMIT 1",
            (message_id,),
        )

    async def open_roots(self, session_id: str) -> list[dict[str, Any]]:
        """Root tasks of a session whose request has not ended (pending or in progress)."""
        return await self._all(
            "SELECT * FROM tasks WHERE session_id = ? AND parent_id IS NULL"
            " AND status IN ('pending', 'in_progress') ORDER BY rowid",
            (session_id,),
        )

    async def save_tasks(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Insert or update task rows (one statement: all of them or none); returns their
        columns as written (a caller need not read them back)."""
        if not rows:
            return []
        now = time.time()
        values: list[Any] = []
        written = []
        for row in rows:
            full = dict.fromkeys(TASK_COLUMNS)
            full.update({k: v for k, v in row.items() if k in full})
            full["created_at"] = full["created_at"] or now
            full["updated_at"] = now
            full["dependencies"] = list(full["dependencies"] or [])
            written.append(full)
            values.extend(
                json.dumps(full[c]) if c == "dependencies" else full[c] for c in TASK_COLUMNS
            )
        cols = ", ".join(TASK_COLUMNS)
        marks = ", ".join("(" + ", ".join("?" for _ in TASK_COLUMNS) + ")" for _ in rows)
        keep = ("id", "session_id", "root_id", "created_at")
        sets = ", ".join(f"{c} = excluded.{c}" for c in TASK_COLUMNS if c not in keep)
        await self._write(
            f"INSERT INTO tasks ({cols}) VALUES {marks} ON CONFLICT(id) DO UPDATE SET {sets}",
            values,
        )
        return written

    async def update_subagent(
        self, task_id: str, *, when_status: str | None = None, **fields: Any
    ) -> bool:
        """Change a task's subagent fields; with ``when_status``, only if the subagent's
        status is still that one. True if the row changed."""
        bad = set(fields) - SUBAGENT_FIELDS
        if bad:
            raise ValueError(f"unknown subagent fields: {sorted(bad)}")
        sets = ", ".join(f"{k} = ?" for k in fields)
        where = "id = ?" + (" AND subagent_status IS ?" if when_status is not None else "")
        params: list[Any] = [*fields.values(), task_id]
        if when_status is not None:
            params.append(when_status)
        return await self._write(f"UPDATE tasks SET {sets} WHERE {where}", params) > 0

    async def running_subagents(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Tasks whose subagent is marked running (of one session, or of all)."""
        if session_id is None:
            return await self._all(
                "SELECT * FROM tasks WHERE subagent_status = 'running' ORDER BY rowid"
            )
        return await self._all(
            "SELECT * FROM tasks WHERE subagent_status = 'running' AND session_id = ?"
            " ORDER BY rowid",
            (session_id,),
        )

    async def heartbeat_subagents(self, task_ids: Sequence[str]) -> None:
        """Refresh the heartbeat of running subagents (their process is alive)."""
        now = time.time()
        await self._write(
            "UPDATE tasks SET subagent_heartbeat_at = ? WHERE id = ?"
            " AND subagent_status = 'running'",
            [(now, t) for t in task_ids],
            many=True,
        )
