"""Time travel over REST: checkpoints, rewinds, branches and forks of a session.

    GET  /api/think/sessions/{id}/checkpoints
    POST /api/think/sessions/{id}/rewind    {"message_id", "restore": "files"|"conversation"|"both"}
    POST /api/think/sessions/{id}/rewind    {"undo": REWIND_ID}    (undo an earlier rewind)
    GET  /api/think/sessions/{id}/branches
    POST /api/think/sessions/{id}/branches  {"branch_id", "files"?}   (switch the current branch)
    POST /api/think/sessions/{id}/fork      {"message_id"}  -> the new session

Files are restored through the collaboration rooms as ordinary edits (a person with the file
open sees them live), by the three-way plan of ``think_kernel.checkpoints.restore``: only what
the rewound turns changed is undone, and a person's overlapping change stands and is
reported. A rewind during a run stops the run first. Every tab watching the session gets
the branch's newest messages (a ``history`` frame) when its conversation changes, so a second
tab shows what the first one rewound or switched to.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import stat
import time
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.checkpoints import journal
from think_kernel.checkpoints.records import NotACheckpoint, list_checkpoints, target_message
from think_kernel.checkpoints.rewind import RESTORE, NoCheckpoint, rewind, undo_rewind
from think_kernel.checkpoints.switch import switch_with_files
from think_kernel.safefs import SafeReader
from think_kernel.store.branches import BranchNotFound
from think_kernel.wire.session import HistoryFrame

from .base import ThinkHandler, field

log = logging.getLogger(__name__)


async def tell_tabs(svc: Any, session_id: str) -> None:
    """Send every tab of the session its current branch's newest messages."""
    rows, cursor = await svc.store.page_messages(session_id, None, svc.limits.history_limit)
    svc.hub.publish(session_id, HistoryFrame(rows, cursor).to_dict())


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
        undo = field(body, "undo", str)
        if undo is not None:
            await self._undo(session_id, undo)
            return
        message_id = field(body, "message_id", str, required=True)
        restore = field(body, "restore", str) or "both"
        if restore not in RESTORE:
            raise web.HTTPError(400, f"'restore' must be one of {', '.join(RESTORE)}")
        await self.session_or_404(session_id)
        store = self.svc.store
        try:
            await target_message(store, session_id, message_id)
        except NotACheckpoint:
            raise web.HTTPError(
                404, f"no user message {message_id!r} on this session's current branch"
            ) from None
        if self.svc.chats.busy(session_id):
            await self.svc.chats.cancel(session_id)
            if self.svc.chats.busy(session_id):
                raise web.HTTPError(409, "the running request did not stop; try again")
        documents = self.settings.get("think_documents")
        root = self.settings.get("server_root_dir") or self.serverapp.root_dir
        files = DocumentFiles(documents, SafeReader(root), root) if documents is not None else None
        try:
            out = await rewind(store, files, session_id, message_id, restore)
        except NoCheckpoint:
            raise web.HTTPError(
                409,
                "no checkpoint is kept for this message (pruned, or sent before checkpoints "
                "were recorded), or files cannot be restored without the collaboration rooms",
            ) from None
        if restore != "files":
            await tell_tabs(self.svc, session_id)
        self.send(out)

    async def _undo(self, session_id: str, rewind_id: str) -> None:
        """``{"undo": REWIND_ID}``: put back what an earlier rewind changed in the files."""
        await self.session_or_404(session_id)
        documents = self.settings.get("think_documents")
        if documents is None:
            raise web.HTTPError(409, "files are restored through the collaboration rooms")
        if self.svc.chats.busy(session_id):
            await self.svc.chats.cancel(session_id)
        root = self.settings.get("server_root_dir") or self.serverapp.root_dir
        files = DocumentFiles(documents, SafeReader(root), root)
        try:
            out = await undo_rewind(self.svc.store, files, session_id, rewind_id)
        except KeyError:
            raise web.HTTPError(404, f"no rewind {rewind_id!r} of files in this session") from None
        self.send(out)


class DocumentFiles:
    """Files as the server's rooms hold them (a rewind's ``FileAccess``)."""

    def __init__(self, documents: Any, disk: SafeReader, root: str | None = None) -> None:
        self.documents = documents
        self.disk = disk
        #: The folder paths are named from (the server's root).
        self.root = root
        self.action_id = f"rewind-{int(time.time() * 1000)}"

    async def current(self, path: str) -> tuple[bytes | None, str | None]:
        """The room's text (unsaved typing included); bytes from disk for what no room holds."""
        st = await asyncio.to_thread(self.disk.lstat, path)
        if st is None:
            return None, None
        if not stat.S_ISREG(st.st_mode):  # a link is neither followed nor written through
            raise OSError(errno.EPERM, "a link or special file")
        try:
            got = await self.documents.read_text(path)
        except Exception:  # not a file a room can hold: compared as bytes, never merged
            return await asyncio.to_thread(self.disk.read_bytes, path), None
        text = str(got["content"])
        return text.encode(), text

    async def write(self, path: str, content: str, base: str | None) -> None:
        """An attributed edit in the room, merged with typing since ``base``."""
        if path.endswith(".ipynb"):
            base = None  # a notebook's plan is merged cell by cell already
        await self.documents.write_text(path, content, base=base, action_id=self.action_id)

    async def delete(self, path: str) -> None:
        """Deleted as the file browser does."""
        await self.documents.delete(path, action_id=self.action_id)


class BranchesHandler(ThinkHandler):
    """``GET``: the session's branches; ``POST {"branch_id"}``: make one current."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Each branch with the message it leaves from and its last message."""
        await self.session_or_404(session_id)
        self.send({"branches": await self.svc.store.list_branches(session_id)})

    @authorized
    async def post(self, session_id: str) -> None:
        """Switch the conversation to another branch; with ``"files": true`` the files go
        to that branch's state too (the turns since the shared part undone and redone)."""
        body = self.body()
        branch_id = field(body, "branch_id", str, required=True)
        with_files = field(body, "files", bool) or False
        await self.session_or_404(session_id)
        if self.svc.chats.busy(session_id):
            raise web.HTTPError(409, "a run is in progress or queued; cancel it first")
        try:
            if with_files:
                documents = self.settings.get("think_documents")
                if documents is None:
                    raise web.HTTPError(409, "files are restored through the collaboration rooms")
                root = self.settings.get("server_root_dir") or self.serverapp.root_dir
                files = DocumentFiles(documents, SafeReader(root), root)
                switched = await switch_with_files(self.svc.store, files, session_id, branch_id)
            else:
                switched = await self.svc.store.switch_branch(session_id, branch_id)
        except BranchNotFound:
            raise web.HTTPError(404, f"no branch {branch_id!r} in this session") from None
        await tell_tabs(self.svc, session_id)
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


async def finish_rewinds(store: Any, documents: Any, root: str, tries: int = 10) -> int:
    """At the server's start: finish the rewinds a crash cut short (their plans are in the
    store); return how many. The rooms may still be starting: tried again, bounded."""
    if documents is None:
        return 0
    files = DocumentFiles(documents, SafeReader(root), root)
    delay = 0.5
    for attempt in range(tries):
        try:
            rows = await journal.pending(store)
            done = 0
            for row in rows:
                if not journal.reachable(row, files):
                    # A kernel's rewind of files outside the server's root: that kernel's
                    # next rewind of the session finishes it.
                    log.warning("rewind %s: its files are outside %s; left", row["id"], root)
                    continue
                await journal.complete(store, files, row)
                done += 1
            return done
        except Exception:
            if attempt == tries - 1:
                log.exception("could not finish an interrupted rewind")
                return 0
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    return 0


def rewind_routes(s: str) -> list[tuple[str, type[ThinkHandler]]]:
    """The routes under a session's URL ``s``."""
    return [
        (f"{s}/checkpoints", CheckpointsHandler),
        (f"{s}/rewind", RewindHandler),
        (f"{s}/branches", BranchesHandler),
        (f"{s}/fork", ForkHandler),
    ]
