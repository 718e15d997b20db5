"""Sessions as trees: branches of a conversation, kept, never deleted.

    started = await store.start_branch(sid, message_id)   # edit / rewind: leave before it
    await store.add_message(sid, "user", "again")          # joins the new branch
    await store.list_branches(sid)                         # [{id, fork_id, last_id, ...}]
    await store.switch_branch(sid, started["left"])       # back to the branch left
    rows = await store.branch_messages(sid, branch_id)     # one branch, oldest first
    fork = await store.fork_session(sid, message_id)       # a new session with that line

Each message records the branch it was written on (``messages.branch_id``); a branch leaves
its parent branch after one message (``fork_id``, none: from the start) and its line is that
parent's line up to the fork message, then its own messages. Seqs only grow, so a line in seq
order is the conversation in order. The rows of the session's current branch have
``off_branch = 0`` and every reader of "the conversation" (the model's history, the sidebar's
pages, a think notebook) filters on it, so they keep reading one straight line; switching
rewrites that flag for the rows that change side, in one transaction.

A session that never branched has no branch rows: its root branch is made on first use and
its messages joined to it.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from .ids import new_id
from .part import StorePart

if TYPE_CHECKING:
    from .history import HistoryCache

_MAIN = "session_id = ? AND facet IS NULL"


class BranchNotFound(KeyError):
    """A branch id that is not one of this session's."""


class BranchesMixin(StorePart):
    """Branches of a session's conversation: start, switch, list, read, fork."""

    if TYPE_CHECKING:  # provided by Store
        history: HistoryCache

        async def get_message(self, message_id: str) -> dict[str, Any] | None: ...
        async def create_session(
            self,
            title: str = "",
            path: str = "",
            options: dict[str, Any] | None = None,
            id: str | None = None,
            kind: str = "chat",
        ) -> dict[str, Any]: ...
        async def get_session(self, session_id: str) -> dict[str, Any] | None: ...

    async def current_branch(self, session_id: str) -> str:
        """The id of the session's current branch (its root is made on first use)."""
        row = await self._one("SELECT branch_id FROM sessions WHERE id = ?", (session_id,))
        if row is None:
            raise KeyError(session_id)
        if row["branch_id"]:
            return str(row["branch_id"])
        root = new_id("b_")
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            again = await self._one("SELECT branch_id FROM sessions WHERE id = ?", (session_id,))
            if again and again["branch_id"]:  # another process made it first
                await self.db.execute("COMMIT")
                return str(again["branch_id"])
            await self.db.execute(
                "INSERT INTO branches (id, session_id, created_at) VALUES (?, ?, ?)",
                (root, session_id, time.time()),
            )
            await self.db.execute(
                "UPDATE sessions SET branch_id = ? WHERE id = ?", (root, session_id)
            )
            await self.db.execute(
                "UPDATE messages SET branch_id = ? WHERE session_id = ? AND branch_id IS NULL",
                (root, session_id),
            )
            await self.db.execute("COMMIT")
        except BaseException:
            await self.db.execute("ROLLBACK")
            raise
        return root

    async def get_branch(self, session_id: str, branch_id: str) -> dict[str, Any]:
        """One branch row of this session; :class:`BranchNotFound` otherwise."""
        await self.current_branch(session_id)
        row = await self._one(
            "SELECT * FROM branches WHERE id = ? AND session_id = ?", (branch_id, session_id)
        )
        if row is None:
            raise BranchNotFound(branch_id)
        return row

    async def _line(self, session_id: str, branch_id: str) -> tuple[str, list[Any]]:
        """A SQL condition (and its parameters) that holds for the main-conversation rows of
        the line of ``branch_id``: its own rows, then each ancestor's up to the fork."""
        conds, params = ["branch_id = ?"], [branch_id]
        branch = await self.get_branch(session_id, branch_id)
        bound = branch["fork_seq"]
        while branch["parent_id"] is not None:
            parent = await self.get_branch(session_id, branch["parent_id"])
            conds.append("(branch_id = ? AND seq <= ?)")
            params += [parent["id"], bound]
            bound = min(bound, parent["fork_seq"])
            branch = parent
        return "(" + " OR ".join(conds) + ")", params

    async def branch_messages(
        self, session_id: str, branch_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The messages of one branch's line (default: the current one), oldest first."""
        branch_id = branch_id or await self.current_branch(session_id)
        cond, params = await self._line(session_id, branch_id)
        return await self._all(
            f"SELECT * FROM messages WHERE {_MAIN} AND {cond} ORDER BY seq",
            (session_id, *params),
        )

    async def _show(self, session_id: str, branch_id: str) -> int:
        """Make ``branch_id`` current: flip ``off_branch`` of the rows that change side;
        return how many rows left the conversation. Call inside a transaction."""
        cond, params = await self._line(session_id, branch_id)
        cur = await self.db.execute(
            f"UPDATE messages SET off_branch = 1 WHERE {_MAIN} AND off_branch = 0 AND NOT {cond}",
            (session_id, *params),
        )
        hidden = cur.rowcount
        await self.db.execute(
            f"UPDATE messages SET off_branch = 0 WHERE {_MAIN} AND off_branch = 1 AND {cond}",
            (session_id, *params),
        )
        await self.db.execute(
            "UPDATE sessions SET branch_id = ? WHERE id = ?", (branch_id, session_id)
        )
        return int(hidden)

    async def start_branch(self, session_id: str, message_id: str) -> dict[str, Any]:
        """Start a branch that leaves just before ``message_id`` (a message of the current
        line) and make it current; ``{"branch", "left", "hidden", "message"}``. KeyError
        for a message that is not on this session's current line."""
        left = await self.current_branch(session_id)
        msg = await self.get_message(message_id)
        if (
            msg is None
            or msg["session_id"] != session_id
            or msg["facet"] is not None
            or msg["off_branch"]
        ):
            raise KeyError(message_id)
        fork = await self._one(
            f"SELECT * FROM messages WHERE {_MAIN} AND off_branch = 0 AND seq < ?"
            " ORDER BY seq DESC LIMIT 1",
            (session_id, msg["seq"]),
        )
        branch = new_id("b_")
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            await self.db.execute(
                "INSERT INTO branches (id, session_id, parent_id, fork_id, fork_seq, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    branch,
                    session_id,
                    fork["branch_id"] if fork else None,
                    fork["id"] if fork else None,
                    fork["seq"] if fork else 0,
                    time.time(),
                ),
            )
            hidden = await self._show(session_id, branch)
            await self._drop_if_empty(session_id, left)
            await self.db.execute("COMMIT")
        except BaseException:
            await self.db.execute("ROLLBACK")
            raise
        return {"branch": branch, "left": left, "hidden": hidden, "message": msg}

    async def _drop_if_empty(self, session_id: str, branch_id: str) -> None:
        """Forget a branch nothing was written on and nothing leaves from (an edit that was
        never sent), so editing twice does not leave an empty branch behind."""
        await self.db.execute(
            "DELETE FROM branches WHERE id = ? AND session_id = ? AND parent_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM messages WHERE session_id = ? AND branch_id = ?)"
            " AND NOT EXISTS (SELECT 1 FROM branches b WHERE b.parent_id = ?)"
            " AND id != (SELECT branch_id FROM sessions WHERE id = ?)",
            (branch_id, session_id, session_id, branch_id, branch_id, session_id),
        )

    async def switch_branch(self, session_id: str, branch_id: str) -> dict[str, Any]:
        """Make another branch current; ``{"branch", "left", "hidden"}``.
        :class:`BranchNotFound` for an id that is not one of this session's branches."""
        left = await self.current_branch(session_id)
        await self.get_branch(session_id, branch_id)
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            hidden = await self._show(session_id, branch_id)
            await self.db.execute("COMMIT")
        except BaseException:
            await self.db.execute("ROLLBACK")
            raise
        return {"branch": branch_id, "left": left, "hidden": hidden}

    async def list_branches(self, session_id: str) -> list[dict[str, Any]]:
        """Every branch of the session, oldest first: ``id``, ``parent_id``, ``fork_id``
        (the message it leaves from; None: the start), ``first_id`` and ``last_id`` (its
        first own message and the last message of its line), ``count`` (messages of its
        line) and ``current``."""
        current = await self.current_branch(session_id)
        rows = await self._all(
            "SELECT b.*,"
            " (SELECT id FROM messages m WHERE m.session_id = b.session_id"
            "  AND m.branch_id = b.id AND m.facet IS NULL ORDER BY seq LIMIT 1) AS first_id,"
            " (SELECT id FROM messages m WHERE m.session_id = b.session_id"
            "  AND m.branch_id = b.id AND m.facet IS NULL ORDER BY seq DESC LIMIT 1) AS own_last"
            " FROM branches b WHERE b.session_id = ? ORDER BY b.created_at, b.rowid",
            (session_id,),
        )
        out = []
        for row in rows:
            line = await self.branch_messages(session_id, row["id"])
            out.append(
                {
                    "id": row["id"],
                    "parent_id": row["parent_id"],
                    "fork_id": row["fork_id"],
                    "first_id": row["first_id"],
                    "last_id": line[-1]["id"] if line else None,
                    "count": len(line),
                    "current": row["id"] == current,
                    "created_at": row["created_at"],
                }
            )
        return out

    async def fork_session(
        self, session_id: str, message_id: str, title: str | None = None
    ) -> dict[str, Any]:
        """A new session holding the line of ``message_id``'s branch up to and including
        that message (copies with new ids); KeyError for a message not of this session."""
        msg = await self.get_message(message_id)
        if msg is None or msg["session_id"] != session_id or msg["facet"] is not None:
            raise KeyError(message_id)
        source = await self.get_session(session_id)
        assert source is not None
        if msg["branch_id"] is None:  # written before the root branch was made
            await self.current_branch(session_id)
            msg = await self.get_message(message_id)
            assert msg is not None
        line = [
            r
            for r in await self.branch_messages(session_id, msg["branch_id"])
            if r["seq"] <= msg["seq"]
        ]
        fork = await self.create_session(
            title=title if title is not None else f"{source['title'] or 'Chat'} (fork)",
            path=source["path"],
            options=source["options"],
            kind=source["kind"],
        )
        ids = {r["id"]: new_id("m_") for r in line}
        skip = {"id", "session_id", "seq", "branch_id", "off_branch"}
        for seq, row in enumerate(line, start=1):
            fields = {k: v for k, v in row.items() if k not in skip}
            if fields.get("parent_id") in ids:
                fields["parent_id"] = ids[fields["parent_id"]]
            if fields.get("status") in ("pending", "streaming", "queued"):
                fields["status"] = "error"
                fields["error"] = "not finished when the session was forked"
            fields = {k: _json(v) for k, v in fields.items()}
            cols = ["id", "session_id", "seq", *fields]
            marks = ", ".join("?" for _ in cols)
            await self.db.execute(
                f"INSERT INTO messages ({', '.join(cols)}) VALUES ({marks})",
                (ids[row["id"]], fork["id"], seq, *fields.values()),
            )
        return fork


def _json(value: Any) -> Any:
    """A decoded JSON column back to its text (rows come back decoded)."""
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value
