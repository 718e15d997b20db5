"""Undo one action: revert the file changes of a single tool call, leaving later ones.

    out = await undo_action(store, files, session_id, "a_1b2c")
    out["restored"], out["deleted"], out["conflicts"], out["undo_id"]

Each checkpoint step names the tool call that made it (``call_message``, ``call_id``), as
does the call's action-log row, so the row leads to exactly the steps of its call: the
file and notebook tools' own, and those of a sandboxed run made inside the call. They are
undone the way a rewind undoes steps (:mod:`.restore`): each change merged three-way into
what is there now, so a person's typing since and the agent's later changes elsewhere in the
file stay; where someone changed the same place since, their text stands and the conflict is
reported by file (and cell). The undo is journaled like a rewind, is itself an action-log
row, and its own changes are steps of that row, so it can be undone in turn.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from . import journal
from .blobs import Blobs
from .records import steps_by_path
from .rewind import FileAccess, _apply, plan_files, summary

#: One undo at a time per session in this process: an undo first finishes a journaled plan
#: left unfinished, which must never be one another undo is applying right now.
_LOCKS: dict[str, asyncio.Lock] = {}


class NotUndoable(Exception):
    """The action cannot be undone; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def undo_action(
    store: Any, files: FileAccess, session_id: str, action_id: str
) -> dict[str, Any]:
    """Undo the files one action-log row's call changed (see the module doc).
    :class:`NotUndoable` (404) for a row not of this session, (409) for one that changed no
    file or is undone already."""
    lock = _LOCKS.setdefault(session_id, asyncio.Lock())
    async with lock:
        return await _undo(store, files, session_id, action_id)


async def _undo(store: Any, files: FileAccess, session_id: str, action_id: str) -> dict[str, Any]:
    row = await store._one("SELECT * FROM action_log WHERE id = ?", (action_id,))
    if row is None or row["session_id"] != session_id:
        raise NotUndoable(404, f"no action {action_id!r} in this session")
    if row["undone_by"]:
        raise NotUndoable(409, f"action {action_id!r} was undone already by {row['undone_by']}")
    rows = await call_steps(store, session_id, row)
    if not rows:
        raise NotUndoable(409, f"action {action_id!r} ({row['tool']}) changed no file")
    for pending in await journal.pending(store, session_id):  # one a crash cut short
        await journal.complete(store, files, pending)
    plans, bases, currents = await plan_files(store, files, steps_by_path(rows))
    rid = await journal.begin(
        store, Blobs.beside(store), session_id, action_id, "undo", plans, journal.files_root(files)
    )
    # Claimed before anything changes: a second undo of the same row is refused, not doubled.
    claimed = await store._write(
        "UPDATE action_log SET undone_by = ? WHERE id = ? AND undone_by IS NULL",
        (rid, action_id),
    )
    if claimed == 0:
        await journal.finish(store, rid)  # nothing of it was applied
        raise NotUndoable(409, f"action {action_id!r} was undone already")
    if hasattr(files, "action_id"):
        files.action_id = rid  # the rooms attribute the edits to the undo
    out: dict[str, Any] = {"restored": [], "deleted": [], "conflicts": [], "undo_id": rid}
    try:
        await _apply(store, files, session_id, rid, plans, bases, currents, out)
    except BaseException:
        await store._write("UPDATE action_log SET undone_by = NULL WHERE id = ?", (action_id,))
        raise
    if not out["restored"] and not out["deleted"]:
        # Nothing changed (every file conflicted): the action stays to be undone later.
        await store._write("UPDATE action_log SET undone_by = NULL WHERE id = ?", (action_id,))
    # The undo's own changes are steps of its row: undoing the undo puts the action back.
    await store._write(
        "UPDATE checkpoint_steps SET call_id = ? WHERE checkpoint_id IN"
        " (SELECT id FROM checkpoints WHERE session_id = ? AND message_id = ?)",
        (rid, session_id, rid),
    )
    if row["tool"] == "undo":  # the action it had undone counts as done again
        await store._write(
            "UPDATE action_log SET undone_by = NULL WHERE session_id = ? AND undone_by = ?",
            (session_id, action_id),
        )
    await store.log_actions(
        [
            {
                "id": rid,
                "session_id": session_id,
                "tool": "undo",
                "action": "undo",
                "call_id": rid,
                "input_summary": f"undo {action_id} ({row['tool']}: {row['input_summary']})",
                "output_summary": summary(out),
                "success": True,
                "ts": time.time(),
            }
        ]
    )
    await journal.finish(store, rid)
    return out


async def call_steps(store: Any, session_id: str, row: dict[str, Any]) -> list[dict[str, Any]]:
    """The checkpoint steps the call of action-log ``row`` made, oldest first (a rewind's
    row: the steps of the rewind's own checkpoint, which bears its id)."""
    if row["tool"] == "rewind":
        return list(
            await store._all(
                "SELECT s.* FROM checkpoint_steps s JOIN checkpoints c ON c.id = s.checkpoint_id"
                " WHERE c.session_id = ? AND c.message_id = ? ORDER BY s.id",
                (session_id, row["id"]),
            )
        )
    if not row.get("call_id"):
        return []
    return list(
        await store._all(
            "SELECT s.* FROM checkpoint_steps s JOIN checkpoints c ON c.id = s.checkpoint_id"
            " WHERE c.session_id = ? AND s.call_id = ? AND s.call_message IS ? ORDER BY s.id",
            (session_id, row["call_id"], row.get("message_id")),
        )
    )


async def changed_files(store: Any, session_id: str) -> dict[tuple[str | None, str], list[str]]:
    """Per tool call of the session, ``(message id, call id)``, the files its steps changed."""
    rows = await store._all(
        "SELECT DISTINCT s.call_message, s.call_id, s.path FROM checkpoint_steps s"
        " JOIN checkpoints c ON c.id = s.checkpoint_id"
        " WHERE c.session_id = ? AND s.call_id IS NOT NULL ORDER BY s.path",
        (session_id,),
    )
    out: dict[tuple[str | None, str], list[str]] = {}
    for r in rows:
        out.setdefault((r["call_message"], r["call_id"]), []).append(r["path"])
    rewinds = await store._all(
        "SELECT DISTINCT c.message_id, s.path FROM checkpoint_steps s"
        " JOIN checkpoints c ON c.id = s.checkpoint_id JOIN action_log a ON a.id = c.message_id"
        " WHERE c.session_id = ? AND a.tool = 'rewind' ORDER BY s.path",
        (session_id,),
    )
    for r in rewinds:
        out.setdefault((None, r["message_id"]), []).append(r["path"])
    return out


async def with_files(
    store: Any, session_id: str, actions: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The action-log rows, each with ``files``: the files its call changed (only a row with
    files can be undone)."""
    by_call = await changed_files(store, session_id)
    for a in actions:
        if a.get("tool") == "rewind":
            a["files"] = by_call.get((None, str(a["id"])), [])
        elif a.get("call_id"):
            a["files"] = by_call.get((a.get("message_id"), a["call_id"]), [])
        else:
            a["files"] = []
    return actions


__all__ = ["NotUndoable", "call_steps", "undo_action", "with_files"]
