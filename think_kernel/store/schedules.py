"""Store methods of the durable scheduler: schedule rows, claims with leases, firings.

Mixed into :class:`~think_kernel.store.Store`; every method commits before it returns.

A row is ``pending`` until a scheduler claims it (``running``, with an owner, its pid and a
lease it renews while the handler runs), then ``done``, ``failed`` or back to ``pending``
(a retry after a backoff, or the next occurrence of a cron row); ``cancelled`` by the user.
A claim whose lease ran out, or whose owner process is gone, can be claimed again: delivery
is at least once, and each firing carries an idempotency key (``firing_key``, recorded in
``firings``) that handlers use to do their work once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from .ids import new_id
from .part import StorePart

OPEN = ("pending", "running")


class TooManySchedules(Exception):
    """The session already has ``max_open`` open schedules of that kind."""


def _in(values: Sequence[str]) -> str:
    return ", ".join("?" for _ in values)


class SchedulesMixin(StorePart):
    """Schedules, their claims and their firings."""

    # -- rows --------------------------------------------------------------------------------

    async def add_schedule(
        self,
        kind: str,
        due_at: float,
        payload: dict[str, Any],
        session_id: str | None = None,
        *,
        cron: str | None = None,
        tz: str | None = None,
        max_open: int | None = None,
    ) -> str:
        """Record timed work (survives restarts); returns its id. ``cron`` (with the zone
        ``tz`` it is read in) makes it recurring: ``due_at`` is its first occurrence.
        ``max_open``: refuse (TooManySchedules) when the session has that many open rows of
        the kind; counted and inserted in one statement, so concurrent calls cannot pass it."""

        sid = new_id("sch_")
        now = time.time()
        values = (sid, session_id, kind, due_at, due_at, json.dumps(payload), cron, tz, now, now)
        cap = ""
        params: list[Any] = list(values)
        if max_open is not None:
            cap = (
                " WHERE (SELECT COUNT(*) FROM schedules WHERE session_id = ? AND kind = ?"
                f" AND status IN ({_in(OPEN)})) < ?"
            )
            params += [session_id, kind, *OPEN, max_open]
        inserted = await self._write(
            "INSERT INTO schedules (id, session_id, kind, due_at, occurrence_at, payload, cron,"
            f" tz, created_at, updated_at) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?{cap}",
            params,
        )
        if inserted == 0:
            raise TooManySchedules(f"{max_open} open {kind} schedules")
        return sid

    async def get_schedule(self, schedule_id: str) -> dict[str, Any] | None:
        """One schedule row, or None."""
        return await self._one("SELECT * FROM schedules WHERE id = ?", (schedule_id,))

    async def list_schedules(
        self,
        session_id: str | None = None,
        kind: str | None = None,
        statuses: Sequence[str] | None = None,
        limit: int = 500,
    ) -> list[dict[str, Any]]:
        """Schedules (of a session, a kind, in some statuses), soonest first."""
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        if statuses:
            where.append(f"status IN ({_in(statuses)})")
            params.extend(statuses)
        params.append(limit)
        return await self._all(
            f"SELECT * FROM schedules WHERE {' AND '.join(where)}"
            " ORDER BY status NOT IN ('pending', 'running'), due_at, id LIMIT ?",
            params,
        )

    async def count_schedules(
        self, session_id: str, kind: str, statuses: Sequence[str] = OPEN
    ) -> int:
        """How many schedules of a kind a session has in these statuses."""
        row = await self._one(
            "SELECT COUNT(*) AS n FROM schedules WHERE session_id = ? AND kind = ?"
            f" AND status IN ({_in(statuses)})",
            (session_id, kind, *statuses),
        )
        return int(row["n"]) if row else 0

    async def cancel_schedule(self, schedule_id: str, session_id: str | None = None) -> bool:
        """Cancel a pending (or firing: no further occurrence) schedule; False if there is
        no such open schedule (of that session, when given)."""
        sql = (
            "UPDATE schedules SET status = 'cancelled', updated_at = ?"
            " WHERE id = ? AND status IN ('pending', 'running')"
        )
        params: list[Any] = [time.time(), schedule_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        return await self._write(sql, params) > 0

    # -- the scheduler's side ----------------------------------------------------------------

    async def due_schedules(
        self,
        now: float,
        limit: int = 100,
        *,
        kinds: Sequence[str] | None = None,
        session_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Pending schedules due by ``now``, oldest first, and claims that may be stale
        (``running``: the caller checks their lease and owner)."""
        where = ["(status = 'pending' AND due_at <= ? OR status = 'running')"]
        params: list[Any] = [now]
        if kinds is not None:
            where.append(f"kind IN ({_in(kinds)})")
            params.extend(kinds)
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        params.append(limit)
        return await self._all(
            f"SELECT * FROM schedules WHERE {' AND '.join(where)} ORDER BY due_at LIMIT ?",
            params,
        )

    async def next_schedule_due(
        self, *, kinds: Sequence[str] | None = None, session_id: str | None = None
    ) -> float | None:
        """When the next pending schedule is due or the next claim's lease ends, or None."""
        where = ""
        params: list[Any] = []
        if kinds is not None:
            where += f" AND kind IN ({_in(kinds)})"
            params.extend(kinds)
        if session_id is not None:
            where += " AND session_id = ?"
            params.append(session_id)
        row = await self._one(
            "SELECT MIN(CASE status WHEN 'pending' THEN due_at ELSE COALESCE(lease_until, 0)"
            f" END) AS due FROM schedules WHERE status IN ('pending', 'running'){where}",
            params,
        )
        return None if row is None or row["due"] is None else float(row["due"])

    async def claim_schedule(
        self,
        schedule_id: str,
        owner: str = "",
        pid: int = 0,
        lease: float = 30.0,
        *,
        steal_from: str | None = None,
    ) -> dict[str, Any] | None:
        """Claim a due row: pending and due, or running with its lease over (or, with
        ``steal_from``, held by that owner, whose process is gone). Returns the claimed row
        (with its firing key) or None when another scheduler got it first."""
        now = time.time()
        cond = "status = 'pending' AND due_at <= ? OR status = 'running' AND"
        cond += " (lease_until IS NULL OR lease_until < ?"
        params: list[Any] = [now, now]
        if steal_from is not None:
            cond += " OR owner = ?"
            params.append(steal_from)
        cond += ")"
        # One statement: two schedulers on one file cannot both win (SQLite serialises it).
        return await self._one(
            "UPDATE schedules SET status = 'running', owner = ?, owner_pid = ?,"
            " lease_until = ?, attempts = attempts + 1, updated_at = ?,"
            " occurrence_at = COALESCE(occurrence_at, due_at),"
            " firing_key = COALESCE(firing_key,"
            "   id || ':' || CAST(COALESCE(occurrence_at, due_at) AS INTEGER))"
            f" WHERE id = ? AND ({cond}) RETURNING *",
            (owner, pid, now + lease, now, schedule_id, *params),
        )

    async def renew_leases(self, schedule_ids: Sequence[str], owner: str, lease: float) -> None:
        """Extend the leases of claims this owner still holds (its handlers are running)."""
        if not schedule_ids:
            return
        now = time.time()
        await self._write(
            "UPDATE schedules SET lease_until = ?, updated_at = ?"
            f" WHERE owner = ? AND status = 'running' AND id IN ({_in(schedule_ids)})",
            (now + lease, now, owner, *schedule_ids),
        )

    async def settle_schedule(
        self,
        schedule_id: str,
        owner: str,
        status: str,
        *,
        due_at: float | None = None,
        error: str | None = None,
        fired: bool = False,
        next_occurrence: bool = False,
        uncount: bool = False,
    ) -> bool:
        """End a claim this owner holds: ``done`` / ``failed``, or ``pending`` again at
        ``due_at`` (a retry of the same firing, or with ``next_occurrence`` the next firing
        of a cron row; with ``uncount`` a deferral, whose claim was not an attempt). False
        when the claim is no longer ours (cancelled, or taken over)."""
        now = time.time()
        sets = ["status = ?", "owner = NULL", "owner_pid = NULL", "lease_until = NULL"]
        params: list[Any] = [status]
        if due_at is not None:
            sets.append("due_at = ?")
            params.append(due_at)
        if next_occurrence:
            sets += ["occurrence_at = ?", "firing_key = NULL", "attempts = 0"]
            params.append(due_at)
        if uncount:
            sets.append("attempts = MAX(attempts - 1, 0)")
        if fired:
            sets += ["fired_count = fired_count + 1", "last_fired_at = ?"]
            params.append(now)
        sets += ["last_error = ?", "updated_at = ?"]
        params += [error, now]
        changed = await self._write(
            f"UPDATE schedules SET {', '.join(sets)}"
            " WHERE id = ? AND status = 'running' AND owner = ?",
            (*params, schedule_id, owner),
        )
        return changed > 0

    async def finish_schedule(self, schedule_id: str, status: str, error: str = "") -> None:
        """Mark a schedule done or failed whoever holds it (the scheduler settles its own
        claims with :meth:`settle_schedule`; this is for work ended elsewhere)."""
        await self._write(
            "UPDATE schedules SET status = ?, last_error = ?, owner = NULL, owner_pid = NULL,"
            " lease_until = NULL, updated_at = ? WHERE id = ?",
            (status, error or None, time.time(), schedule_id),
        )

    async def release_claims(self, owner: str) -> int:
        """Put this owner's claims back to pending (a clean stop: another may run them)."""
        return await self._write(
            "UPDATE schedules SET status = 'pending', owner = NULL, owner_pid = NULL,"
            " lease_until = NULL, updated_at = ? WHERE status = 'running' AND owner = ?",
            (time.time(), owner),
        )

    # -- firings -----------------------------------------------------------------------------

    async def begin_firing(self, row: dict[str, Any], late: bool) -> dict[str, Any]:
        """Record an attempt at a firing (by its key) and return its record; a record that
        is already ``done`` means a previous attempt finished the work."""
        now = time.time()
        key = row["firing_key"]
        await self._write(
            "INSERT OR IGNORE INTO firings (key, schedule_id, session_id, kind, occurrence_at,"
            " started_at, late) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, row["id"], row["session_id"], row["kind"], row["occurrence_at"], now, int(late)),
        )
        rec = await self._one(
            "UPDATE firings SET attempts = attempts + 1, late = MAX(late, ?),"
            " status = CASE status WHEN 'done' THEN 'done' ELSE 'running' END"
            " WHERE key = ? RETURNING *",
            (int(late), key),
        )
        assert rec is not None
        rec["late"] = bool(rec["late"])
        return rec

    async def finish_firing(
        self, key: str, status: str, outcome: Any = None, error: str | None = None
    ) -> None:
        """A firing ended: ``done`` (with what the handler returned), ``retrying`` or
        ``failed`` (with the error)."""
        await self._write(
            "UPDATE firings SET status = ?, outcome = COALESCE(?, outcome), error = ?,"
            " fired_at = CASE ? WHEN 'done' THEN ? ELSE fired_at END WHERE key = ?",
            (
                status,
                None if outcome is None else json.dumps(outcome, default=str),
                error,
                status,
                time.time(),
                key,
            ),
        )

    async def admit_firing(
        self,
        key: str,
        session_id: str,
        kind: str,
        *,
        min_interval: float,
        max_chain: int,
        since: float,
        person_ids: str = "",
        schedule_id: str = "",
        occurrence_at: float = 0.0,
    ) -> dict[str, Any]:
        """Let a firing start its work (its ``fired_at`` set now) unless another firing of
        the session's kind was let through less than ``min_interval`` seconds ago, or
        ``max_chain`` (0 = any number) were let through since ``since`` and the session's
        last user message whose id does not start with ``person_ids`` (a person's, not one
        a firing posted). One statement, so two schedulers cannot both pass; a firing with
        no record yet (``schedule_id``, ``occurrence_at``) gets one. Returns
        ``{"admitted", "last_at"`` (the latest other admission), ``"chain"`` (admissions
        since then), ``"person_at"`` (the person's last message, or None)``}``."""
        now = time.time()
        if schedule_id:  # a firing handed over without the scheduler's record of it
            await self._write(
                "INSERT OR IGNORE INTO firings (key, schedule_id, session_id, kind,"
                " occurrence_at, started_at) VALUES (?, ?, ?, ?, ?, ?)",
                (key, schedule_id, session_id, kind, occurrence_at, now),
            )
        others = (
            "FROM firings f WHERE f.session_id = ? AND f.kind = ? AND f.key != ?"
            " AND f.fired_at IS NOT NULL AND f.status != 'skipped'"
        )
        mine = (session_id, kind, key)
        said = (
            "(SELECT MAX(created_at) FROM messages WHERE session_id = ?"
            " AND role = 'user' AND (? = '' OR substr(id, 1, ?) != ?))"
        )
        said_args = (session_id, person_ids, len(person_ids), person_ids)
        person = f"MAX(?, COALESCE({said}, 0))"
        chain_since = (since, *said_args)
        row = await self._one(
            f"UPDATE firings SET fired_at = ? WHERE key = ?"
            f" AND NOT EXISTS (SELECT 1 {others} AND f.fired_at > ?)"
            f" AND (? <= 0 OR (SELECT COUNT(*) {others} AND f.fired_at > {person}) < ?)"
            " RETURNING key",
            (now, key, *mine, now - min_interval, max_chain, *mine, *chain_since, max_chain),
        )
        facts = await self._one(
            f"SELECT MAX(f.fired_at) AS last_at, SUM(f.fired_at > {person}) AS chain,"
            f" {said} AS person_at {others}",
            (*chain_since, *said_args, *mine),
        )
        facts = facts or {}
        last, said_at = facts.get("last_at"), facts.get("person_at")
        return {
            "admitted": row is not None,
            "last_at": None if last is None else float(last),
            "chain": int(facts.get("chain") or 0),
            "person_at": None if said_at is None else float(said_at),
        }

    async def get_firing(self, key: str) -> dict[str, Any] | None:
        """One firing by its key, or None."""
        return await self._one("SELECT * FROM firings WHERE key = ?", (key,))

    async def list_firings(
        self,
        session_id: str | None = None,
        kind: str | None = None,
        since: float | None = None,
        limit: int = 100,
        status: str | None = "done",
    ) -> list[dict[str, Any]]:
        """Firings (of a session, a kind, fired after ``since``), oldest first."""
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        for col, op, value in (
            ("session_id", "=", session_id),
            ("kind", "=", kind),
            ("fired_at", ">", since),
            ("status", "=", status),
        ):
            if value is not None:
                where.append(f"{col} {op} ?")
                params.append(value)
        params.append(limit)
        rows = await self._all(
            f"SELECT * FROM (SELECT * FROM firings WHERE {' AND '.join(where)}"
            " ORDER BY COALESCE(fired_at, started_at) DESC LIMIT ?)"
            " ORDER BY COALESCE(fired_at, started_at)",
            params,
        )
        for r in rows:
            r["late"] = bool(r["late"])
        return rows

    async def take_unshown_firings(self, session_id: str, kind: str) -> list[dict[str, Any]]:
        """Done firings of a session not yet shown in a notebook; marks them shown (each is
        taken by one caller)."""
        rows = await self._all(
            "UPDATE firings SET shown_at = ? WHERE session_id = ? AND kind = ?"
            " AND status = 'done' AND shown_at IS NULL RETURNING *",
            (time.time(), session_id, kind),
        )
        for r in rows:
            r["late"] = bool(r["late"])
        rows.sort(key=lambda r: r["fired_at"] or 0)
        return rows

    async def run_of_message(self, message_id: str) -> dict[str, Any] | None:
        """The (first) run started for a user message, or None."""
        return await self._one(
            "SELECT * FROM runs WHERE message_id = ? ORDER BY created_at, rowid LIMIT 1",
            (message_id,),
        )

    async def reply_text(self, message_id: str) -> str:
        """The last complete assistant text in reply to a user message, or ""."""
        row = await self._one(
            "SELECT content FROM messages WHERE parent_id = ? AND role = 'assistant'"
            " AND status = 'complete' AND content != '' ORDER BY seq DESC LIMIT 1",
            (message_id,),
        )
        return str(row["content"]) if row else ""
