"""A rewind is all or nothing across a crash: its plan is stored before anything changes, and
whoever finds a plan left half applied (the server at its start, the next rewind of the
session) finishes it.

    rid = await journal.begin(store, blobs, sid, message_id, "both", plans)
    ...                                           # the files, then the conversation
    await journal.finish(store, rid)
    for row in await journal.pending(store):      # after a crash
        await journal.complete(store, files, row)

A plan names each file's end state (a blob of its content, or "deleted"), so applying it again
is harmless: a file already in that state is left alone. The conversation's branch starts only
if the message is still on the current line, and the action-log row (its id is the rewind's)
is written once.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

from ..store.ids import new_id
from .blobs import Blobs
from .restore import FilePlan

log = logging.getLogger(__name__)


async def begin(
    store: Any,
    blobs: Blobs,
    session_id: str,
    message_id: str,
    restore: str,
    plans: list[FilePlan],
    root: str | None = None,
) -> str:
    """Store the plan (one statement: it is there whole or not at all); return its id.
    ``root``: the folder its paths are relative to (a notebook's kernel in a subfolder
    names files from there, the server from its root)."""
    entries: list[dict[str, Any]] = []
    for p in plans:
        if p.action == "write" and p.content is not None:
            key = await blobs.save(p.content.encode())
            entries.append({"path": p.path, "action": "write", "blob": key})
        elif p.action == "delete":
            entries.append({"path": p.path, "action": "delete"})
    if root is not None:
        for e in entries:
            e["root"] = root
    rid = new_id("rw_")
    await store._write(
        "INSERT INTO rewinds (id, session_id, message_id, restore, plan, status, created_at)"
        " VALUES (?, ?, ?, ?, ?, 'applying', ?)",
        (rid, session_id, message_id, restore, json.dumps(entries), time.time()),
    )
    return rid


async def finish(store: Any, rid: str) -> None:
    """The rewind is whole."""
    await store._write(
        "UPDATE rewinds SET status = 'done', ended_at = ? WHERE id = ?", (time.time(), rid)
    )


async def pending(store: Any, session_id: str | None = None) -> list[dict[str, Any]]:
    """Rewinds begun and not finished (of one session, or all), oldest first."""
    where, args = ("AND session_id = ?", [session_id]) if session_id else ("", [])
    return list(
        await store._all(
            f"SELECT * FROM rewinds WHERE status = 'applying' {where} ORDER BY created_at",
            tuple(args),
        )
    )


async def kept_blobs(store: Any) -> set[str]:
    """Blobs that plans not yet finished still need (pruning keeps them)."""
    keys: set[str] = set()
    for row in await pending(store):
        plan = row["plan"] if isinstance(row["plan"], list) else json.loads(row["plan"])
        keys.update(e["blob"] for e in plan if e.get("blob"))
    return keys


def files_root(files: Any) -> str | None:
    """The folder a ``FileAccess`` names files from (None: not known)."""
    root = getattr(files, "root", None)
    return os.path.realpath(os.path.expanduser(str(root))) if root else None


def _here(entry: dict[str, Any], here: str | None) -> str | None:
    """The entry's path as ``here`` names it; None when it lies outside ``here``."""
    root = entry.get("root")
    if root is None or here is None or root == here:
        return str(entry["path"])
    rel = os.path.relpath(os.path.join(root, entry["path"]), here)
    return None if rel == ".." or rel.startswith("../") or os.path.isabs(rel) else rel


def reachable(row: dict[str, Any], files: Any) -> bool:
    """Whether every file of the plan lies under the folder ``files`` writes."""
    plan = row["plan"] if isinstance(row["plan"], list) else json.loads(row["plan"])
    here = files_root(files)
    return all(_here(e, here) is not None for e in plan)


async def complete(store: Any, files: Any, row: dict[str, Any]) -> None:
    """Finish a rewind a crash interrupted (see the module doc). ValueError, nothing done,
    when a file of the plan lies outside the folder ``files`` writes (see :func:`reachable`)."""
    blobs = Blobs.beside(store)
    plan = row["plan"] if isinstance(row["plan"], list) else json.loads(row["plan"])
    if not reachable(row, files):
        raise ValueError(f"rewind {row['id']}: its files lie outside {files_root(files)}")
    here = files_root(files)
    done: list[str] = []
    for entry in plan:
        path = _here(entry, here)
        assert path is not None  # reachable() checked every entry
        current, text = await files.current(path)
        if entry["action"] == "delete":
            if current is not None:
                await files.delete(path)
        else:
            want = await blobs.load(entry["blob"])
            if current != want:
                await files.write(path, want.decode(), None)
        done.append(path)
    if row["restore"] in ("conversation", "both"):
        msg = await store.get_message(row["message_id"])
        if msg is not None and not msg["off_branch"]:
            await store.start_branch(row["session_id"], row["message_id"])
    elif row["restore"] == "switch":  # a branch switch with its files: message_id is the branch
        await store.switch_branch(row["session_id"], row["message_id"])
    if await store._one("SELECT 1 AS x FROM action_log WHERE id = ?", (row["id"],)) is None:
        await store.log_actions(
            [
                {
                    "id": row["id"],
                    "session_id": row["session_id"],
                    "tool": "rewind",
                    "action": row["restore"],
                    "message_id": row["message_id"],
                    "input_summary": (
                        f"switch to branch {row['message_id']} with its files"
                        if row["restore"] == "switch"
                        else f"undo {row['message_id']}"
                        if row["restore"] == "undo"
                        else f"rewind {row['restore']} to before {row['message_id']}"
                    ),
                    "output_summary": "finished after a restart: " + (", ".join(done) or "-"),
                    "success": True,
                }
            ]
        )
    await finish(store, row["id"])
    log.info("finished rewind %s after a restart", row["id"])
