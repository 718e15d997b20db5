"""Review mode over REST: a session's proposal, and the decisions on it.

    GET  /api/think/sessions/{id}/proposal
        -> {"session_id", "review", "mode_detail", "files": [{path, kind, status, missing,
            diff, hunks, cells}]}
    POST /api/think/sessions/{id}/proposal  {"accept": [ids] | "all", "reject": [ids] | "all",
                                             "reason"?}
        -> {"accepted", "rejected", "conflicts", "errors", "action_id"?, "proposal"}

Accepted changes are written through the collaboration rooms as ordinary attributed edits,
three-way against the versions the agent based them on (``think_kernel.proposals.decide``);
each decision is an action-log row (Undo on it reverts what it wrote), the model is told at
its next request, and every tab of the session gets a ``proposal`` frame.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.proposals import OPTION, Proposal
from think_kernel.proposals.decide import BadDecision, decide, describe
from think_kernel.safefs import SafeReader
from think_kernel.wire.session import ProposalFrame

from .base import ThinkHandler, field
from .collab.doccheck import DocumentError
from .modelsetup import kernel_config
from .rewind import DocumentFiles

log = logging.getLogger(__name__)

#: How many messages sent "propose only" a session remembers (the newest).
PROPOSE_ONLY_KEPT = 20


def review_default() -> bool:
    """Review mode for a session that chose none (``c.ThinkConfig.review_mode``)."""
    return bool(kernel_config().review_mode)


def review_of(session: dict[str, Any]) -> bool:
    """Whether review mode is on for this session."""
    value = (session.get("options") or {}).get(OPTION)
    return review_default() if value is None else bool(value)


def propose_only(options: dict[str, Any], message_id: str) -> dict[str, Any]:
    """The session's options with ``message_id`` sent "propose only"."""
    kept = [m for m in options.get("propose_only") or [] if isinstance(m, str)]
    return {**options, "propose_only": [*kept, message_id][-PROPOSE_ONLY_KEPT:]}


async def tell_tabs(svc: Any, session_id: str, proposal: Proposal) -> None:
    """Every tab of the session: the proposal changed."""
    frame = ProposalFrame(session_id=session_id, count=await proposal.count())
    svc.hub.publish(session_id, frame.to_dict())


class ProposalWatch:
    """Tells a session's tabs when its kernel changed the proposal: a file or notebook tool
    reports each change it made (``file_changed``), to the live files or to the proposal.

        watch = ProposalWatch(hub, store); links.item_listeners.append(watch.on_item)
    """

    def __init__(self, hub: Any, store: Any) -> None:
        self.hub = hub
        self.store = store
        self._counts: dict[str, int] = {}  # session -> proposed files last told
        self._tasks: set[asyncio.Task[None]] = set()

    def on_item(self, info: Any, item: dict[str, Any]) -> None:
        """A kernel's ``file_changed`` event: count the session's proposal again."""
        event = item.get("event")
        if item.get("kind") != "event" or not isinstance(event, dict):
            return
        sid = str(item.get("session_id") or "")
        if event.get("type") != "file_changed" or not sid:
            return
        task = asyncio.ensure_future(self._tell(sid))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _tell(self, sid: str) -> None:
        try:
            count = await Proposal(self.store, sid).count()
        except Exception:  # a courtesy to the tabs: never fails the kernel's events
            log.debug("proposal count of %s failed", sid, exc_info=True)
            return
        if count or self._counts.get(sid):
            self._counts[sid] = count
            frame = ProposalFrame(session_id=sid, count=count)
            self.hub.publish(sid, frame.to_dict())


class ProposalHandler(ThinkHandler):
    """``GET``: the session's proposal; ``POST``: accept and reject parts of it."""

    def _files(self) -> DocumentFiles:
        documents = self.settings.get("think_documents")
        if documents is None:
            raise web.HTTPError(409, "proposals are applied through the collaboration rooms")
        root = self.settings.get("server_root_dir") or self.serverapp.root_dir
        return DocumentFiles(documents, SafeReader(root), root)

    async def _body(self, session: dict[str, Any], proposal: Proposal) -> dict[str, Any]:
        root = self.settings.get("server_root_dir") or self.serverapp.root_dir
        disk = SafeReader(root)
        files = await describe(proposal, lambda path: disk.lstat(path) is not None)
        return {
            "session_id": session["id"],
            "review": review_of(session),
            # How the session's sandboxed runs see the proposal is theirs to say; the file and
            # notebook tools always see it.
            "mode_detail": "tools" if review_of(session) else "none",
            "files": files,
        }

    @authorized
    async def get(self, session_id: str) -> None:
        """Each proposed file with its diff, hunks and (notebooks) changed cells."""
        session = await self.session_or_404(session_id)
        proposal = Proposal(self.svc.store, session_id)
        self.send(await self._body(session, proposal))

    @authorized
    async def post(self, session_id: str) -> None:
        """Decide: 400 for a malformed body or when no id named anything proposed."""
        body = self.body()
        accept = body.get("accept", [])
        reject = body.get("reject", [])
        reason = field(body, "reason", str) or ""
        if not accept and not reject:
            raise web.HTTPError(400, "nothing to decide: send 'accept' and/or 'reject'")
        session = await self.session_or_404(session_id)
        proposal = Proposal(self.svc.store, session_id)
        user = self.current_user
        name = getattr(user, "name", "") or getattr(user, "username", "") or "someone"
        try:
            out = await decide(
                proposal, self._files(), accept, reject, reason[:2000], f"{name} (review panel)"
            )
        except BadDecision as e:
            raise web.HTTPError(400, str(e)) from None
        except DocumentError as e:  # a room refused a write (too large, not text, ...)
            raise web.HTTPError(409, f"could not apply the change: {e}") from None
        out["proposal"] = await self._body(session, proposal)
        if out["accepted"] or out["rejected"]:
            await tell_tabs(self.svc, session_id, proposal)
        decided = out["accepted"] or out["rejected"] or out["conflicts"]
        self.send(out, 200 if decided else 400)


def proposal_routes(s: str) -> list[tuple[str, type[ThinkHandler]]]:
    """The route under a session's URL ``s``."""
    return [(f"{s}/proposal", ProposalHandler)]
