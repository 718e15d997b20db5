"""Reading checkpoints back from the store: the list of a session's, and what a rewind undoes.

rows = await list_checkpoints(store, sid)             # newest last, with their files
undo = await files_since(store, sid, message_id)      # {path: Undo}, the earliest before
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


class NotACheckpoint(KeyError):
    """The message is not a user message on this session's current branch."""


@dataclass(frozen=True)
class StepRow:
    """One recorded change of a file (blobs: content-addressed keys; None: absent)."""

    path: str
    known: bool
    pre_exists: bool
    pre_blob: str | None
    post_exists: bool
    post_blob: str | None


async def list_checkpoints(store: Any, session_id: str) -> list[dict[str, Any]]:
    """The checkpoints of the session's current branch, oldest first: ``id``,
    ``message_id``, ``seq``, ``content`` (the message's first 200 characters),
    ``created_at`` and ``files`` (``path``, ``existed``, ``known``)."""
    rows = await store._all(
        "SELECT c.id, c.message_id, c.created_at, c.ended_at, m.seq,"
        " substr(m.content, 1, 200) AS content FROM checkpoints c"
        " JOIN messages m ON m.id = c.message_id"
        " WHERE c.session_id = ? AND m.facet IS NULL AND m.off_branch = 0 ORDER BY m.seq",
        (session_id,),
    )
    steps = await store._all(
        "SELECT s.checkpoint_id, s.path, s.known, s.pre_exists FROM checkpoint_steps s"
        " JOIN checkpoints c ON c.id = s.checkpoint_id WHERE c.session_id = ? ORDER BY s.id",
        (session_id,),
    )
    by_cp: dict[str, dict[str, dict[str, Any]]] = {}
    for st in steps:
        files = by_cp.setdefault(st["checkpoint_id"], {})
        first = files.setdefault(
            st["path"], {"path": st["path"], "existed": bool(st["pre_exists"]), "known": True}
        )
        first["known"] = first["known"] and bool(st["known"])
    return [
        {**r, "files": sorted(by_cp.get(r["id"], {}).values(), key=lambda f: f["path"])}
        for r in rows
    ]


async def target_message(store: Any, session_id: str, message_id: str) -> dict[str, Any]:
    """The user message a rewind goes back to; :class:`NotACheckpoint` otherwise."""
    msg = await store.get_message(message_id)
    if (
        msg is None
        or msg["session_id"] != session_id
        or msg["facet"] is not None
        or msg["off_branch"]
        or msg["role"] != "user"
    ):
        raise NotACheckpoint(message_id)
    return dict(msg)


async def has_checkpoint(store: Any, message_id: str) -> bool:
    """Whether a checkpoint of this message is kept."""
    row = await store._one("SELECT 1 AS x FROM checkpoints WHERE message_id = ?", (message_id,))
    return row is not None


async def files_since(store: Any, session_id: str, message_id: str) -> dict[str, list[StepRow]]:
    """Every file the turns from ``message_id`` on (current branch) changed, with its
    steps, oldest first."""
    msg = await target_message(store, session_id, message_id)
    rows = await store._all(
        "SELECT s.* FROM checkpoint_steps s"
        " JOIN checkpoints c ON c.id = s.checkpoint_id JOIN messages m ON m.id = c.message_id"
        " WHERE c.session_id = ? AND m.facet IS NULL AND m.off_branch = 0 AND m.seq >= ?"
        " ORDER BY m.seq, s.id",
        (session_id, msg["seq"]),
    )
    return steps_by_path(rows)


def steps_by_path(
    rows: list[dict[str, Any]], into: dict[str, list[StepRow]] | None = None
) -> dict[str, list[StepRow]]:
    """``checkpoint_steps`` rows as each path's steps, in the rows' order (added to ``into``)."""
    out: dict[str, list[StepRow]] = {} if into is None else into
    for r in rows:
        out.setdefault(r["path"], []).append(
            StepRow(
                path=r["path"],
                known=bool(r["known"]),
                pre_exists=bool(r["pre_exists"]),
                pre_blob=r["pre_blob"],
                post_exists=bool(r["post_exists"]),
                post_blob=r["post_blob"],
            )
        )
    return out


async def prune(store: Any, blobs: Any, session_id: str, keep_turns: int, keep_days: float) -> int:
    """Forget the session's checkpoints past the newest ``keep_turns`` or older than
    ``keep_days``, and the blobs no kept step uses; return how many checkpoints went.
    Messages and branches are not touched: an old branch stays readable and can be switched
    to; only its files can no longer be rewound."""
    cutoff = time.time() - keep_days * 86400
    old = await store._all(
        "SELECT id FROM checkpoints WHERE session_id = ? AND (created_at < ? OR id NOT IN"
        " (SELECT id FROM checkpoints WHERE session_id = ? ORDER BY created_at DESC LIMIT ?))",
        (session_id, cutoff, session_id, max(keep_turns, 0)),
    )
    if not old:
        return 0
    ids = [r["id"] for r in old]
    marks = ", ".join("?" for _ in ids)
    await store._write(f"DELETE FROM checkpoint_steps WHERE checkpoint_id IN ({marks})", ids)
    await store._write(f"DELETE FROM checkpoints WHERE id IN ({marks})", ids)
    used = await store._all(
        "SELECT pre_blob AS k FROM checkpoint_steps WHERE pre_blob IS NOT NULL"
        " UNION SELECT post_blob FROM checkpoint_steps WHERE post_blob IS NOT NULL"
    )
    from .journal import kept_blobs  # a rewind cut short still needs its plan's contents

    await blobs.collect({r["k"] for r in used} | await kept_blobs(store))
    return len(ids)
