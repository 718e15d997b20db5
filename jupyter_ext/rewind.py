"""Time travel over REST: checkpoints, rewinds, branches and forks of a session.

    GET  /api/think/sessions/{id}/checkpoints
    POST /api/think/sessions/{id}/rewind    {"message_id", "restore": "files"|"conversation"|"both"}
    GET  /api/think/sessions/{id}/branches
    POST /api/think/sessions/{id}/branches  {"branch_id"}   (switch the current branch)
    POST /api/think/sessions/{id}/fork      {"message_id"}  -> the new session

Files are restored through the collaboration rooms as ordinary edits (a person with the file
open sees them live), by the three-way plan of ``think_kernel.checkpoints.restore``: only what
the rewound turns changed is undone, and a person's overlapping change stands and is
reported. A rewind during a run stops the run first.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.checkpoints.blobs import Blobs
from think_kernel.checkpoints.records import (
    NotACheckpoint,
    StepRow,
    files_since,
    has_checkpoint,
    list_checkpoints,
)
from think_kernel.checkpoints.restore import FilePlan, Step, plan_file
from think_kernel.safefs import SafeReader
from think_kernel.store.branches import BranchNotFound

from .base import ThinkHandler, field

RESTORE = ("files", "conversation", "both")


class CheckpointsHandler(ThinkHandler):
    """``GET``: the checkpoints of the session's current branch, oldest first."""

    @authorized
    async def get(self, session_id: str) -> None:
        """One per user message: its id, place, text and the files its turn changed."""
        await self.session_or_404(session_id)
        self.send({"checkpoints": await list_checkpoints(self.svc.store, session_id)})


class RewindHandler(ThinkHandler):
    """``POST {"message_id", "restore"}``: go back to before a user message."""

    @authorized
    async def post(self, session_id: str) -> None:
        """Stop the run, restore files and/or start a branch; one action-log row."""
        body = self.body()
        message_id = field(body, "message_id", str, required=True)
        restore = field(body, "restore", str) or "both"
        if restore not in RESTORE:
            raise web.HTTPError(400, f"'restore' must be one of {', '.join(RESTORE)}")
        await self.session_or_404(session_id)
        store = self.svc.store
        try:
            undo = await files_since(store, session_id, message_id)
        except NotACheckpoint:
            raise web.HTTPError(
                404, f"no user message {message_id!r} on this session's current branch"
            ) from None
        if self.svc.chats.busy(session_id):
            await self.svc.chats.cancel(session_id)
            if self.svc.chats.busy(session_id):
                raise web.HTTPError(409, "the running request did not stop; try again")
        out: dict[str, Any] = {"restored": [], "deleted": [], "conflicts": []}
        if restore in ("files", "both"):
            if not await has_checkpoint(store, message_id):
                raise web.HTTPError(
                    409,
                    "no checkpoint is kept for this message (pruned, or sent before "
                    "checkpoints were recorded): its files cannot be restored",
                )
            documents = self.settings.get("think_documents")
            if documents is None and undo:
                raise web.HTTPError(503, "files are restored through the collaboration rooms")
            root = self.settings.get("server_root_dir") or self.serverapp.root_dir
            plans = await restore_files(store, documents, SafeReader(root), undo)
            for plan in plans:
                out["conflicts"].extend(plan.conflicts)
                if plan.action == "write":
                    out["restored"].append(plan.path)
                elif plan.action == "delete":
                    out["deleted"].append(plan.path)
        if restore in ("conversation", "both"):
            started = await store.start_branch(session_id, message_id)
            out["branch_id"] = started["branch"]
            out["left_branch_id"] = started["left"]
            out["content"] = await store.message_content(started["message"])
        await store.log_actions(
            [
                {
                    "session_id": session_id,
                    "tool": "rewind",
                    "action": restore,
                    "message_id": message_id,
                    "input_summary": f"rewind {restore} to before {message_id}",
                    "output_summary": _summary(out),
                    "success": True,
                    "ts": time.time(),
                }
            ]
        )
        self.send(out)


def _summary(out: dict[str, Any]) -> str:
    parts = []
    if out["restored"]:
        parts.append("restored " + ", ".join(out["restored"]))
    if out["deleted"]:
        parts.append("deleted " + ", ".join(out["deleted"]))
    if out["conflicts"]:
        parts.append(
            "kept "
            + ", ".join(
                c["path"] + (f" (cell {c['cell']})" if c.get("cell") else "")
                for c in out["conflicts"]
            )
        )
    return "; ".join(parts) or "no file to restore"


async def restore_files(
    store: Any, documents: Any, disk: SafeReader, undo: dict[str, list[StepRow]]
) -> list[FilePlan]:
    """Plan and apply the restore of each file through its room (see the module doc)."""
    action_id = f"rewind-{int(time.time() * 1000)}"
    blobs = Blobs.beside(store)
    plans = []
    for path, rows in sorted(undo.items()):
        steps = [
            Step(
                await _blob(blobs, r.pre_exists, r.pre_blob),
                await _blob(blobs, r.post_exists, r.post_blob),
                r.known,
            )
            for r in rows
        ]
        current, current_text = await _current(documents, disk, path)
        plan = plan_file(path, steps, current)
        if plan.action == "write" and plan.content is not None:
            base = None if path.endswith(".ipynb") else current_text
            await documents.write_text(path, plan.content, base=base, action_id=action_id)
        elif plan.action == "delete":
            await documents.delete(path, action_id=action_id)
        plans.append(plan)
    return plans


async def _blob(blobs: Blobs, exists: bool, key: str | None) -> bytes | None:
    if not exists or key is None:
        return None
    return await blobs.load(key)


async def _current(documents: Any, disk: SafeReader, path: str) -> tuple[bytes | None, Any]:
    """A file as its room shows it now (bytes, and the text for a merge), None if absent."""
    st = await asyncio.to_thread(disk.lstat, path)
    if st is None:
        return None, None
    try:
        got = await documents.read_text(path)
    except Exception:  # not a file a room can hold: compare bytes from disk
        return await asyncio.to_thread(disk.read_bytes, path), None
    text = str(got["content"])
    return text.encode(), text


class BranchesHandler(ThinkHandler):
    """``GET``: the session's branches; ``POST {"branch_id"}``: make one current."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Each branch with the message it leaves from and its last message."""
        await self.session_or_404(session_id)
        self.send({"branches": await self.svc.store.list_branches(session_id)})

    @authorized
    async def post(self, session_id: str) -> None:
        """Switch the conversation to another branch (files stay as they are)."""
        body = self.body()
        branch_id = field(body, "branch_id", str, required=True)
        await self.session_or_404(session_id)
        if self.svc.chats.busy(session_id):
            raise web.HTTPError(409, "a run is in progress or queued; cancel it first")
        try:
            switched = await self.svc.store.switch_branch(session_id, branch_id)
        except BranchNotFound:
            raise web.HTTPError(404, f"no branch {branch_id!r} in this session") from None
        self.send(switched)


class ForkHandler(ThinkHandler):
    """``POST {"message_id", "title"?}``: a new session with the line up to that message."""

    @authorized
    async def post(self, session_id: str) -> None:
        """Copy the branch up to and including the message; answer the new session."""
        body = self.body()
        message_id = field(body, "message_id", str, required=True)
        title = field(body, "title", str)
        await self.session_or_404(session_id)
        try:
            fork = await self.svc.store.fork_session(session_id, message_id, title)
        except KeyError:
            raise web.HTTPError(404, f"no message {message_id!r} in this session") from None
        self.send(fork, 201)


async def branch_page(
    store: Any, session_id: str, branch_id: str, before: int | None, limit: int
) -> tuple[list[dict[str, Any]], int | None]:
    """A page of one branch's line, as ``page_messages`` pages the current one."""
    try:
        rows = await store.branch_messages(session_id, branch_id)
    except BranchNotFound:
        raise web.HTTPError(404, f"no branch {branch_id!r} in this session") from None
    if before is not None:
        rows = [r for r in rows if r["seq"] < before]
    if len(rows) > limit:
        rows = rows[-limit:]
        return rows, int(rows[0]["seq"])
    return rows, None


def rewind_routes(s: str) -> list[tuple[str, type[ThinkHandler]]]:
    """The routes under a session's URL ``s``."""
    return [
        (f"{s}/checkpoints", CheckpointsHandler),
        (f"{s}/rewind", RewindHandler),
        (f"{s}/branches", BranchesHandler),
        (f"{s}/fork", ForkHandler),
    ]
