"""Store methods the server extension leans on: batches, cursors, runs, approvals, retention.

Mixed into :class:`~think_kernel.store.Store`; every method commits before it returns.
Batches are single statements (multi-row ``INSERT ... RETURNING``) or one transaction, so a
burst of events or action-log rows costs one round trip to the SQLite thread, not one each.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .ids import new_id
from .part import StorePart

RUN_FIELDS = {
    "status",
    "attempt",
    "kernel_id",
    "owner",
    "heartbeat_at",
    "checkpoint",
    "error",
    "epoch",
    "ended_at",
}
ACTIVE_RUN = ("queued", "running", "retrying")
ACTION_COLUMNS = (
    "id",
    "session_id",
    "ts",
    "tool",
    "action",
    "input_summary",
    "output_summary",
    "duration_ms",
    "success",
    "error",
    "message_id",
    "task_id",
    "call_id",
)
# SQLite allows 32,766 bound parameters per statement; 5 per event row.
_EVENT_CHUNK = 5_000


class RecordsMixin(StorePart):
    """Batched appends, cursor pages, runs, approvals and retention (schedules: schedules.py)."""

    if TYPE_CHECKING:  # provided by Store

        async def _update(self, table: str, key: str, allowed: set[str], **fields: Any) -> None: ...
        async def get_messages(
            self,
            session_id: str,
            before: int | None = None,
            limit: int | None = None,
            statuses: Iterable[str] | None = None,
            facet: str | None = None,
        ) -> list[dict[str, Any]]: ...

    # -- batches -----------------------------------------------------------------------------

    async def log_actions(self, rows: Sequence[dict[str, Any]]) -> list[str]:
        """Append many action-log rows in one transaction; return their ids."""

        now = time.time()
        values = []
        for row in rows:
            full: dict[str, Any] = dict.fromkeys(ACTION_COLUMNS)
            full.update(action="", input_summary="", output_summary="", duration_ms=0, ts=now)
            full.update(row)
            full["id"] = full["id"] or new_id("a_")
            full["success"] = int(bool(row.get("success", True)))
            values.append(tuple(full[c] for c in ACTION_COLUMNS))
        cols = ", ".join(ACTION_COLUMNS)
        marks = ", ".join("?" for _ in ACTION_COLUMNS)
        await self.db.execute("BEGIN")
        try:
            await self.db.executemany(f"INSERT INTO action_log ({cols}) VALUES ({marks})", values)
            await self.db.execute("COMMIT")
        except BaseException:
            await self.db.execute("ROLLBACK")
            raise
        return [str(v[0]) for v in values]

    async def append_events(
        self, rows: Sequence[tuple[str | None, str, str, dict[str, Any]]]
    ) -> dict[int, int]:
        """Append ``(event_id, session_id, type, data)`` rows; duplicates (same event_id) are
        skipped. Returns ``{row index: seq}`` for the rows actually inserted."""
        out: dict[int, int] = {}
        now = time.time()
        for start in range(0, len(rows), _EVENT_CHUNK):
            chunk = rows[start : start + _EVENT_CHUNK]
            params: list[Any] = []
            # A per-row marker in event_id lets RETURNING be matched back to the input rows
            # even when duplicates are skipped.
            for i, (event_id, session_id, type_, data) in enumerate(chunk):
                params += [
                    event_id or f"~{start + i}:{now}",
                    session_id,
                    type_,
                    json.dumps(data),
                    now,
                ]
            values = ", ".join("(?, ?, ?, ?, ?)" for _ in chunk)
            sql = (
                "INSERT OR IGNORE INTO events (event_id, session_id, type, data, ts)"
                f" VALUES {values} RETURNING seq, event_id"
            )
            returned = await self._returning(sql, params)
            index = {params[5 * i]: start + i for i in range(len(chunk))}
            for r in returned:
                rec = dict(r) if isinstance(r, dict) else {"seq": r[0], "event_id": r[1]}
                out[index[rec["event_id"]]] = int(rec["seq"])
        return out

    async def _returning(self, sql: str, params: list[Any]) -> list[Any]:
        """Rows of an ``INSERT ... RETURNING``, run again if SQLite refused it as "locked"
        (see ``Store._write``: it had no effect)."""
        delay = 0.001
        while True:
            try:
                cur = await self.db.execute(sql, params)
                return list(cur.fetchall())
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or delay > 2.0 or self.db.in_transaction:
                    raise
                await asyncio.sleep(delay)
                delay *= 2

    async def last_event_seq(self, session_id: str) -> int:
        """The newest event seq of a session (0 if none)."""
        row = await self._one(
            "SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE session_id = ?", (session_id,)
        )
        return int(row["seq"]) if row else 0

    # -- pages -------------------------------------------------------------------------------

    async def page_messages(
        self,
        session_id: str,
        before: int | None = None,
        limit: int = 50,
        facet: str | None = None,
    ) -> tuple[list[dict[str, Any]], int | None]:
        """The newest ``limit`` messages before the ``before`` seq, oldest first, and the
        cursor for the page before them (None when this page reaches the start); the main
        conversation, or one ``facet`` (a subagent's)."""
        rows = await self.get_messages(session_id, before=before, limit=limit + 1, facet=facet)
        if len(rows) > limit:
            rows = rows[1:]
            return rows, int(rows[0]["seq"])
        return rows, None

    # -- runs --------------------------------------------------------------------------------

    async def create_run(
        self, run_id: str, session_id: str, message_id: str, owner: str
    ) -> dict[str, Any]:
        """Record a queued run of a user message."""
        now = time.time()
        await self.db.execute(
            "INSERT INTO runs (id, session_id, message_id, status, owner, heartbeat_at,"
            " created_at, updated_at) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)",
            (run_id, session_id, message_id, owner, now, now, now),
        )
        run = await self.get_run(run_id)
        assert run is not None
        return run

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        """One run, or None."""
        return await self._one("SELECT * FROM runs WHERE id = ?", (run_id,))

    async def update_run(self, run_id: str, **fields: Any) -> None:
        """Change status, attempt, kernel, owner, heartbeat, checkpoint or error."""
        await self._update("runs", run_id, RUN_FIELDS, **fields)

    async def active_run(self, session_id: str) -> dict[str, Any] | None:
        """The run a session is busy with: running or retrying, else the next queued one."""
        return await self._one(
            "SELECT * FROM runs WHERE session_id = ? AND status IN ('queued', 'running',"
            " 'retrying') ORDER BY status = 'queued', created_at, rowid LIMIT 1",
            (session_id,),
        )

    async def queued_runs(self, session_id: str) -> list[dict[str, Any]]:
        """Runs waiting behind the active one, in the order they will start."""
        return await self._all(
            "SELECT * FROM runs WHERE session_id = ? AND status = 'queued'"
            " ORDER BY created_at, rowid",
            (session_id,),
        )

    async def start_queued_message(self, message_id: str) -> dict[str, Any] | None:
        """Move a queued user message to the end of its session and mark it complete.

        A message sent while another run was busy waits with status ``queued``; when its run
        starts it must come after that run's replies, so the model (and a reload) see the
        conversation in the order it happened.
        """
        await self.db.execute(
            "UPDATE messages SET status = 'complete', updated_at = ?,"
            " seq = (SELECT MAX(seq) + 1 FROM messages m WHERE m.session_id = messages.session_id)"
            " WHERE id = ? AND status = 'queued'",
            (time.time(), message_id),
        )
        return await self._one("SELECT * FROM messages WHERE id = ?", (message_id,))

    async def find_stale_runs(self, older_than: float, not_owner: str) -> list[dict[str, Any]]:
        """Active runs not owned by ``not_owner`` whose heartbeat is older than the time."""
        return await self._all(
            "SELECT * FROM runs WHERE status IN ('queued', 'running', 'retrying')"
            " AND COALESCE(owner, '') != ? AND COALESCE(heartbeat_at, 0) < ? ORDER BY created_at",
            (not_owner, older_than),
        )

    async def heartbeat_runs(self, run_ids: Sequence[str], checkpoints: dict[str, str]) -> None:
        """Refresh the heartbeat (and checkpoint, when given) of many runs at once."""
        now = time.time()
        await self._write(
            "UPDATE runs SET heartbeat_at = ?, checkpoint = COALESCE(?, checkpoint),"
            " updated_at = ? WHERE id = ?",
            [(now, checkpoints.get(r), now, r) for r in run_ids],
            many=True,
        )

    async def interrupt_messages(self, session_id: str, after_seq: int, reason: str) -> int:
        """Mark streaming / pending messages after a seq as errored (the run died)."""
        cur = await self.db.execute(
            "UPDATE messages SET status = 'error', error = ?, updated_at = ?"
            " WHERE session_id = ? AND seq > ? AND status IN ('pending', 'streaming')",
            (reason, time.time(), session_id, after_seq),
        )
        return cur.rowcount

    # -- approvals ---------------------------------------------------------------------------

    async def get_approval(self, approval_id: str) -> dict[str, Any] | None:
        """One approval, or None."""
        return await self._one("SELECT * FROM approvals WHERE id = ?", (approval_id,))

    async def list_approvals(
        self, session_id: str, status: str | None = None, kind: str | None = "approval"
    ) -> list[dict[str, Any]]:
        """Approvals of a session, oldest first; ``kind="question"``: the agent's questions,
        ``kind=None``: both."""
        where, args = "session_id = ?", [session_id]
        if status is not None:
            where, args = f"{where} AND status = ?", [*args, status]
        if kind is not None:
            where, args = f"{where} AND kind = ?", [*args, kind]
        return await self._all(
            f"SELECT * FROM approvals WHERE {where} ORDER BY created_at", tuple(args)
        )

    async def create_approval(
        self,
        session_id: str,
        message_id: str,
        call_id: str,
        tool: str,
        input: Any,
        *,
        summary: str = "",
        diff: str = "",
        expires_at: float | None = None,
        task_id: str | None = None,
        kind: str = "approval",
    ) -> dict[str, Any]:
        """Record a pending approval (or, ``kind="question"``, a question) for one tool call;
        the existing row if that call already has one (a resumed run asks once)."""

        await self._write(
            "INSERT OR IGNORE INTO approvals (id, session_id, message_id, call_id, tool, input,"
            " status, created_at, summary, diff, expires_at, task_id, kind)"
            " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?)",
            (
                new_id("q_" if kind == "question" else "ap_"),
                session_id,
                message_id,
                call_id,
                tool,
                json.dumps(input, default=str),
                time.time(),
                summary,
                diff or None,
                expires_at,
                task_id,
                kind,
            ),
        )
        row = await self.approval_for_call(session_id, call_id)
        assert row is not None
        return row

    async def approval_for_call(self, session_id: str, call_id: str) -> dict[str, Any] | None:
        """The approval of one tool call, or None."""
        return await self._one(
            "SELECT * FROM approvals WHERE session_id = ? AND call_id = ?", (session_id, call_id)
        )

    async def decided_approval(self, call_id: str) -> dict[str, Any] | None:
        """The latest decided approval with this call id in any session (a key that is not
        one session's, such as a tool file's content hash), or None."""
        return await self._one(
            "SELECT * FROM approvals WHERE call_id = ? AND status != 'pending'"
            " ORDER BY resolved_at DESC LIMIT 1",
            (call_id,),
        )

    async def claim_approval(self, approval_id: str) -> bool:
        """Mark an approved call as being run; False if some process already ran it."""
        changed = await self._write(
            "UPDATE approvals SET executed_at = ? WHERE id = ? AND executed_at IS NULL",
            (time.time(), approval_id),
        )
        return changed > 0

    async def resolve_approval(self, approval_id: str, status: str, decision: Any) -> bool:
        """Resolve a pending approval; False if it was not pending."""
        changed = await self._write(
            "UPDATE approvals SET status = ?, decision = ?, resolved_at = ?"
            " WHERE id = ? AND status = 'pending'",
            (status, json.dumps(decision), time.time(), approval_id),
        )
        return changed > 0

    # -- retention ---------------------------------------------------------------------------

    async def prune(self, older_than: float) -> dict[str, int]:
        """Delete events and action-log rows older than a time (messages are kept)."""
        counts = {}
        for table in ("events", "action_log"):
            cur = await self.db.execute(f"DELETE FROM {table} WHERE ts < ?", (older_than,))
            counts[table] = cur.rowcount
        return counts
