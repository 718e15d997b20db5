"""A rewind: back to before a user message, for files, the conversation or both.

    out = await rewind(store, files, sid, message_id, "both")
    out["restored"], out["deleted"], out["conflicts"], out["content"]

The same core serves the REST route (files through the server's rooms) and the
``%think_rewind`` magic (files through the kernel's workspace, itself room-backed when a
server runs). Files: every step the rewound turns made is undone, three-way
(:mod:`.restore`); conversation: a branch starts before the message (nothing is deleted) and
the message's text comes back to be edited or sent again. One action-log row lists it all.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from ..store.ids import new_id
from . import journal
from .blobs import Blobs
from .records import (
    NotACheckpoint,
    files_since,
    has_checkpoint,
    steps_by_path,
    target_message,
)
from .restore import FilePlan, Step, plan_file

RESTORE = ("files", "conversation", "both")


class NoCheckpoint(LookupError):
    """The message's files cannot be restored: no checkpoint of it is kept."""


class FileAccess(Protocol):
    """Where a rewind reads and writes files: the rooms (server) or the workspace (kernel).

    ``data, text = await files.current("a.py")``; ``await files.write("a.py", new, text)``
    """

    async def current(self, path: str) -> tuple[bytes | None, str | None]:
        """The file now (None: absent), and its text when it can be merged into."""
        ...

    async def write(self, path: str, content: str, base: str | None) -> None:
        """Make the file ``content`` as an edit merged with others' changes since ``base``."""
        ...

    async def delete(self, path: str) -> None:
        """Delete the file."""
        ...


async def rewind(
    store: Any, files: FileAccess | None, session_id: str, message_id: str, restore: str
) -> dict[str, Any]:
    """Rewind (see the module doc). ValueError for a bad ``restore``;
    :class:`~.records.NotACheckpoint` for a message that is not a user message of the current
    branch; :class:`NoCheckpoint` when files are asked for and none was kept."""
    if restore not in RESTORE:
        raise ValueError(f"'restore' must be one of {', '.join(RESTORE)}")
    await target_message(store, session_id, message_id)
    if files is not None:  # a rewind of this session a crash cut short ends first
        for row in await journal.pending(store, session_id):
            await journal.complete(store, files, row)
    out: dict[str, Any] = {"restored": [], "deleted": [], "conflicts": []}
    plans: list[FilePlan] = []
    bases: dict[str, str | None] = {}
    currents: dict[str, bytes | None] = {}
    if restore in ("files", "both"):
        if not await has_checkpoint(store, message_id):
            raise NoCheckpoint(message_id)
        steps = await files_since(store, session_id, message_id)
        if steps and files is None:
            raise NoCheckpoint("files cannot be written here")
        if files is not None:
            plans, bases, currents = await plan_files(store, files, steps)
    # The plan is stored before anything changes: a crash from here on is finished later.
    rid = await journal.begin(
        store,
        Blobs.beside(store),
        session_id,
        message_id,
        restore,
        plans,
        journal.files_root(files),
    )
    out["rewind_id"] = rid
    if files is not None:
        await _apply(store, files, session_id, rid, plans, bases, currents, out)
    if restore in ("conversation", "both"):
        started = await store.start_branch(session_id, message_id)
        out["branch_id"] = started["branch"]
        out["left_branch_id"] = started["left"]
        out["content"] = await store.message_content(started["message"])
    await store.log_actions(
        [
            {
                "id": rid,
                "session_id": session_id,
                "tool": "rewind",
                "action": restore,
                "message_id": message_id,
                "input_summary": f"rewind {restore} to before {message_id}",
                "output_summary": summary(out),
                "success": True,
                "ts": time.time(),
            }
        ]
    )
    await journal.finish(store, rid)
    return out


async def undo_rewind(
    store: Any, files: FileAccess, session_id: str, rewind_id: str
) -> dict[str, Any]:
    """Undo the files of an earlier rewind, three-way as a rewind is (a change made since
    on the same lines stands); KeyError for a rewind of files not of this session."""
    rows = await store._all(
        "SELECT s.* FROM checkpoint_steps s JOIN checkpoints c ON c.id = s.checkpoint_id"
        " WHERE c.session_id = ? AND c.message_id = ? ORDER BY s.id",
        (session_id, rewind_id),
    )
    if not rows:
        raise KeyError(rewind_id)
    steps = steps_by_path(rows)
    plans, bases, currents = await plan_files(store, files, steps)
    rid = await journal.begin(
        store, Blobs.beside(store), session_id, rewind_id, "files", plans, journal.files_root(files)
    )
    out: dict[str, Any] = {"restored": [], "deleted": [], "conflicts": [], "rewind_id": rid}
    await _apply(store, files, session_id, rid, plans, bases, currents, out)
    await store.log_actions(
        [
            {
                "id": rid,
                "session_id": session_id,
                "tool": "rewind",
                "action": "undo",
                "input_summary": f"undo rewind {rewind_id}",
                "output_summary": summary(out),
                "success": True,
                "ts": time.time(),
            }
        ]
    )
    await journal.finish(store, rid)
    return out


async def _apply(
    store: Any,
    files: FileAccess,
    session_id: str,
    rid: str,
    plans: list[FilePlan],
    bases: dict[str, str | None],
    currents: dict[str, bytes | None],
    out: dict[str, Any],
) -> None:
    """Write the plans, and record what they changed as steps of a checkpoint of the rewind
    itself (``message_id`` = its id), so that it can be undone in turn."""
    blobs = Blobs.beside(store)
    cp = new_id("cp_")
    now = time.time()
    await store._write(
        "INSERT INTO checkpoints (id, session_id, message_id, created_at, ended_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (cp, session_id, rid, now, now),
    )
    for plan in plans:
        out["conflicts"].extend(plan.conflicts)
        if plan.action == "write" and plan.content is not None:
            await files.write(plan.path, plan.content, bases.get(plan.path))
            out["restored"].append(plan.path)
            post: bytes | None = plan.content.encode()
        elif plan.action == "delete":
            await files.delete(plan.path)
            out["deleted"].append(plan.path)
            post = None
        else:
            continue
        pre = currents.get(plan.path)
        await store._write(
            "INSERT INTO checkpoint_steps (checkpoint_id, path, known, pre_exists, pre_blob,"
            " post_exists, post_blob, size, created_at) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?)",
            (
                cp,
                plan.path,
                int(pre is not None),
                await blobs.save(pre) if pre is not None else None,
                int(post is not None),
                await blobs.save(post) if post is not None else None,
                len(pre or b"") + len(post or b""),
                now,
            ),
        )


async def plan_files(
    store: Any, files: FileAccess, steps: dict[str, Any]
) -> tuple[list[FilePlan], dict[str, str | None], dict[str, bytes | None]]:
    """What restoring each file does (steps by path, oldest first), the text each plan was
    worked out from (the base its write is merged against) and the bytes. Reads only."""
    blobs = Blobs.beside(store)
    plans: list[FilePlan] = []
    bases: dict[str, str | None] = {}
    currents: dict[str, bytes | None] = {}
    for path, rows in sorted(steps.items()):
        undo = [
            Step(
                await _blob(blobs, r.pre_exists, r.pre_blob),
                await _blob(blobs, r.post_exists, r.post_blob),
                r.known,
            )
            for r in rows
        ]
        try:
            current, bases[path] = await files.current(path)
            currents[path] = current
        except OSError as e:  # a link, a folder, a FIFO: never written through
            why = f"not a regular file now ({e.strerror or e}): left alone"
            plans.append(FilePlan(path, "keep", conflicts=[{"path": path, "reason": why}]))
            continue
        plans.append(plan_file(path, undo, current))
    return plans, bases, currents


async def _blob(blobs: Blobs, exists: bool, key: str | None) -> bytes | None:
    if not exists or key is None:
        return None
    return await blobs.load(key)


def summary(out: dict[str, Any]) -> str:
    """One line: what was restored, deleted, and left as people have it."""
    parts = []
    if out["restored"]:
        parts.append("restored " + ", ".join(out["restored"]))
    if out["deleted"]:
        parts.append("deleted " + ", ".join(out["deleted"]))
    if out["conflicts"]:
        kept = [
            c["path"] + (f" (cell {c['cell']})" if c.get("cell") else "") for c in out["conflicts"]
        ]
        parts.append("kept " + ", ".join(kept))
    if "content" in out:
        parts.append("conversation back to before the message")
    return "; ".join(parts) or "no file to restore"


class WorkspaceFiles:
    """:class:`FileAccess` over a kernel's workspace (room-backed when a server runs)."""

    def __init__(self, workspace: Any) -> None:
        self.workspace = workspace
        #: The folder paths are named from (the journal records it with a plan).
        self.root = str(workspace.root)

    async def current(self, path: str) -> tuple[bytes | None, str | None]:
        """The file as the workspace reads it; its text is the base of the next write."""
        data = await self.workspace.snapshot(path)
        if data is None:
            return None, None
        try:
            text = await self.workspace.read_text(path)
        except Exception:  # not text, too big: compared as bytes, never merged
            return data, None
        return text.encode(), text

    async def write(self, path: str, content: str, base: str | None) -> None:
        """A write merged (by the rooms) with what others typed since the read."""
        await self.workspace.write_text(path, content)

    async def delete(self, path: str) -> None:
        """Delete it."""
        await self.workspace.delete(path)


__all__ = [
    "RESTORE",
    "FileAccess",
    "NoCheckpoint",
    "NotACheckpoint",
    "WorkspaceFiles",
    "rewind",
    "undo_rewind",
]
