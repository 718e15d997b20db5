"""REST handlers under ``/api/think`` (shapes: ``openapi.py``)."""

from __future__ import annotations

import re
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.agent.attachments import MAX_IMAGE_BYTES, describe_attachment
from think_kernel.checkpoints.undo import with_files
from think_kernel.store import new_id
from think_kernel.tasks import TaskBoard

from .actionundo import undo_routes
from .agents import checked_agent
from .approvals import (
    AlreadyDecided,
    ApprovalNotFound,
    BadDecision,
    decide_approval,
    parse_decision,
    session_approval,
)
from .attachments import checked_attachments
from .base import ThinkHandler, field
from .jobs import JobsHandler, JobsStopHandler
from .openapi import OPENAPI
from .proposals import proposal_routes, propose_only, review_of
from .reminders import AllSchedulesHandler, ScheduleHandler, SchedulesHandler
from .rewind import branch_page, rewind_routes, tell_tabs
from .runs import SessionNotFound
from .skills import SkillsHandler

SID = r"(?P<session_id>[A-Za-z0-9_.\-]{1,128})"
ID = r"[A-Za-z0-9_.\-]{1,128}"
#: A side conversation of a session: a subagent's.
FACET = re.compile(r"subagent:[A-Za-z0-9_.\-]{1,200}")
#: Session kinds: the sidebar's chats, think notebooks, ``%%think`` in another kernel, and
#: the calls of an agent on the MCP endpoint.
KINDS = ("chat", "notebook", "magic", "mcp")


class SessionsHandler(ThinkHandler):
    """``GET ?kind=`` lists sessions; ``POST {"title"?, "path"?, "agent"?}`` creates a chat
    session (``agent``: its agent type, 400 when no usable type has that name)."""

    @authorized
    async def get(self) -> None:
        """List sessions, most recently updated first."""
        limit = self.int_arg("limit", 100, 1, self.svc.limits.page_limit)
        offset = self.int_arg("offset", 0, 0)
        assert limit is not None and offset is not None
        kind = self.get_query_argument("kind", None) or None
        if kind is not None and kind not in KINDS:
            raise web.HTTPError(400, f"kind must be one of {', '.join(KINDS)}")
        sessions = await self.svc.store.list_sessions(limit, offset, kind)
        for session in sessions:
            # Idle, not gone: it holds no kernel now and wakes on a spare at its next message.
            session["hibernating"] = self.svc.chats.pool.hibernating(session["id"])
        self.send({"sessions": sessions})

    @authorized
    async def post(self) -> None:
        """Create a session."""
        body = self.body()
        title = field(body, "title", str) or ""
        path = field(body, "path", str) or ""
        options: dict[str, Any] = {}
        agent = field(body, "agent", str)
        if agent:
            options["agent"] = await checked_agent(self, agent)
        session = await self.svc.store.create_session(
            title=title[:500], path=path[:4096], options=options or None
        )
        self.send(session, 201)


class SessionHandler(ThinkHandler):
    """One session: ``GET``, ``PATCH {"title"?, "path"?, "approval"?, "agent"?, "review"?}``,
    ``DELETE`` (``agent``: its agent type, null for the default; ``review``: review mode,
    null for the configured default)."""

    @authorized
    async def get(self, session_id: str) -> None:
        """The session, with its active run."""
        session = await self.session_or_404(session_id)
        session["run"] = await self.svc.store.active_run(session_id)
        session["hibernating"] = self.svc.chats.pool.hibernating(session_id)
        session["review"] = review_of(session)
        session["queued"] = [
            r for r in await self.svc.store.queued_runs(session_id) if r != session["run"]
        ]
        self.send(session)

    @authorized
    async def patch(self, session_id: str) -> None:
        """Rename."""
        await self.session_or_404(session_id)
        body = self.body()
        changes = {}
        if "title" in body:
            changes["title"] = (field(body, "title", str) or "")[:500]
        if "path" in body:
            changes["path"] = (field(body, "path", str) or "")[:4096]
        options: dict[str, Any] | None = None
        if "approval" in body:  # the session's approval policy, None: config's
            session = await self.session_or_404(session_id)
            options = changes["options"] = session_approval(session, body["approval"])
        if "agent" in body:  # the session's agent type, None: the default
            agent = field(body, "agent", str)
            if options is None:
                options = dict((await self.session_or_404(session_id)).get("options") or {})
            options.pop("agent", None)
            if agent:
                options["agent"] = await checked_agent(self, agent)
            changes["options"] = options
        if "review" in body:  # review mode: the agent's edits become a proposal
            review = field(body, "review", bool)
            if options is None:
                options = dict((await self.session_or_404(session_id)).get("options") or {})
            options.pop("review", None)
            if review is not None:
                options["review"] = review
            changes["options"] = options
        if not changes:
            raise web.HTTPError(400, "nothing to change: send a 'title'")
        await self.svc.store.update_session(session_id, **changes)
        self.send(await self.session_or_404(session_id))

    @authorized
    async def delete(self, session_id: str) -> None:
        """Cancel its run, stop its kernel, delete everything stored for it."""
        await self.session_or_404(session_id)
        await self.svc.chats.forget(session_id)
        await self.svc.store.delete_session(session_id)
        self.set_status(204)
        self.finish()


class MessagesHandler(ThinkHandler):
    """``GET ?before=&limit=&facet=&branch=`` pages history (the main conversation's current
    branch, or with ``branch=ID`` another, or with ``facet=subagent:<task id>`` a
    subagent's); ``POST {"content", "context"?, "options"?, "attachments"?, "interrupt"?}``
    starts a run, or queues it behind the session's active
    run (the message is then stored with status ``queued``); ``"interrupt": true`` ("stop
    and send") cancels the active and queued runs first; ``"propose_only": true`` sends the
    run's file and notebook edits to the session's proposal (review mode for this message).
    ``options`` (``model``, ``base_url``) become the session's props, as ``%think_model``
    does in a notebook, so the sidebar's settings apply to this and later runs.
    ``attachments`` are uploaded files (``POST .../attachments``) and notebook cells; they
    are stored with the message.
    """

    @authorized
    async def get(self, session_id: str) -> None:
        """A page of messages, oldest first, and the cursor for the page before it."""
        await self.session_or_404(session_id)
        before = self.int_arg("before", None, 0)
        limit = self.int_arg("limit", 50, 1, self.svc.limits.page_limit)
        assert limit is not None
        facet = self.get_query_argument("facet", None) or None
        if facet is not None and not FACET.fullmatch(facet):
            raise web.HTTPError(400, "facet must be 'subagent:<task id>'")
        branch = self.get_query_argument("branch", None) or None
        if branch is not None and facet is None:  # one branch of the tree, not the current
            rows, cursor = await branch_page(self.svc.store, session_id, branch, before, limit)
            self.send({"messages": rows, "next_cursor": cursor})
            return
        rows, cursor = await self.svc.store.page_messages(session_id, before, limit, facet)
        self.send({"messages": rows, "next_cursor": cursor})

    @authorized
    async def post(self, session_id: str) -> None:
        """Store the message (committed before the answer), then start a run."""
        body = self.body()
        content = field(body, "content", str, required=True)
        context = field(body, "context", dict)
        options = field(body, "options", dict) or {}
        raw_attachments = field(body, "attachments", list) or []
        interrupt = bool(field(body, "interrupt", bool))
        proposing = bool(field(body, "propose_only", bool))
        if not content.strip() and not raw_attachments:
            raise web.HTTPError(400, "'content' is empty")
        session = await self.session_or_404(session_id)
        attachments = await checked_attachments(self.svc.store, raw_attachments)
        props = _session_props(session, options)
        message_id = new_id("m_") if proposing else None
        if message_id is not None:  # this message's run proposes its edits (review mode)
            props = propose_only(props or dict(session.get("options") or {}), message_id)
        if props is not None:
            await self.svc.store.update_session(session_id, options=props)
        try:
            message, run = await self.svc.chats.send(
                session_id,
                content,
                context,
                attachments=attachments or None,
                interrupt=interrupt,
                message_id=message_id,
            )
        except SessionNotFound:
            raise web.HTTPError(404, f"no session {session_id!r}") from None
        self.send({"message": message, "run_id": run["id"], "run": run}, 201)


def _session_props(session: dict[str, Any], options: dict[str, Any]) -> dict[str, Any] | None:
    """The session's props with a message's ``options`` applied, or None if nothing changes."""
    props = dict(session.get("options") or {})
    for key in ("model", "base_url"):
        if key not in options:
            continue
        value = options[key]
        if value is None or value == "":
            props.pop(key, None)
            continue
        if not isinstance(value, str) or len(value) > 500:
            raise web.HTTPError(400, f"'options.{key}' must be a string of at most 500 chars")
        if key == "base_url" and not value.startswith(("http://", "https://")):
            raise web.HTTPError(400, "'options.base_url' must be an http(s) URL")
        props[key] = value
    return props if props != (session.get("options") or {}) else None


class MessageContentHandler(ThinkHandler):
    """``GET``: the whole content of a message (read from its blob if it was offloaded); for a
    tool message, its whole output even when the model saw only a summary of it."""

    @authorized
    async def get(self, session_id: str, message_id: str) -> None:
        """Full content."""
        message = await self.svc.store.get_message(message_id)
        if message is None or message["session_id"] != session_id:
            raise web.HTTPError(404, f"no message {message_id!r} in session {session_id!r}")
        try:
            content = await self.svc.store.full_output(message)
        except KeyError:
            raise web.HTTPError(410, "the blob of this message is missing") from None
        size = message.get("output_size") or message["content_size"]
        self.send({"id": message_id, "content": content, "size": size})


#: What an attachment may be served as; anything else goes out as bytes to download.
SERVED_IMAGES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


class MessageAttachmentHandler(ThinkHandler):
    """``GET``: the bytes of a message's ``n``-th attachment (an uploaded file or image, or a
    screenshot a tool took), so a reloaded chat can show them again."""

    @authorized
    async def get(self, session_id: str, message_id: str, index: str) -> None:
        """The stored bytes, with the attachment's MIME type (images) or as a download."""
        message = await self.svc.store.get_message(message_id)
        if message is None or message["session_id"] != session_id:
            raise web.HTTPError(404, f"no message {message_id!r} in session {session_id!r}")
        items = message.get("attachments") or []
        n = int(index)
        item = items[n] if isinstance(items, list) and n < len(items) else None
        if not isinstance(item, dict) or not isinstance(item.get("blob"), str):
            raise web.HTTPError(404, f"message {message_id!r} has no attachment {n}")
        try:
            data = await self.svc.store.load_blob(item["blob"])
        except (KeyError, ValueError, OSError):
            raise web.HTTPError(410, "the stored bytes of this attachment are missing") from None
        mime = str(item.get("mime") or "")
        # Stored bytes are served, never interpreted: no sniffing, no scripts, no same origin.
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Content-Security-Policy", "default-src 'none'; sandbox")
        self.set_header("Cache-Control", "private, max-age=86400, immutable")
        if mime not in SERVED_IMAGES:
            mime = "application/octet-stream"
            self.set_header("Content-Disposition", "attachment")
        self.finish(data, set_content_type=mime)  # APIHandler would say application/json


class UsageHandler(ThinkHandler):
    """``GET ?calls=N``: tokens and estimated cost of the session, in total and by role, model
    and purpose; ``calls`` adds the newest N calls."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Totals (and recent calls)."""
        await self.session_or_404(session_id)
        calls = self.int_arg("calls", 0, 0, 5000)
        totals = await self.svc.store.usage_totals(session_id)
        if calls:
            totals["calls"] = await self.svc.store.list_usage(session_id, calls)
        self.send(totals)


class AttachmentsHandler(ThinkHandler):
    """``POST ?name=plot.png`` with the file's bytes as the body: store an attachment for a
    later message (images by their bytes: PNG, JPEG, GIF, WebP; else UTF-8 text)."""

    @authorized
    async def post(self, session_id: str) -> None:
        """Store the bytes; answer with the attachment to put in a message's ``attachments``."""
        await self.session_or_404(session_id)
        data = self.request.body or b""
        if len(data) > MAX_IMAGE_BYTES:
            raise web.HTTPError(
                413, f"the file is {len(data):,} bytes; the limit is {MAX_IMAGE_BYTES:,}"
            )
        if not data:
            raise web.HTTPError(400, "the body is empty: send the file's bytes")
        name = self.get_query_argument("name", "") or "attachment"
        try:
            attachment = describe_attachment(name, data)
        except ValueError as e:
            raise web.HTTPError(415, str(e)) from None
        attachment["blob"] = await self.svc.store.save_blob(data)
        self.send(attachment, 201)


class CancelHandler(ThinkHandler):
    """``POST``: cancel the running request (answers within about a second)."""

    @authorized
    async def post(self, session_id: str) -> None:
        """Cancel."""
        await self.session_or_404(session_id)
        run = await self.svc.chats.cancel(session_id)
        self.send({"cancelled": run is not None, "run": run})


class TruncateHandler(ThinkHandler):
    """``POST {"message_id"}``: edit from that message: a new branch leaves before it; the
    message and those after it stay, on the branch left (``GET .../branches``)."""

    @authorized
    async def post(self, session_id: str) -> None:
        """Truncate."""
        body = self.body()
        message_id = field(body, "message_id", str, required=True)
        await self.session_or_404(session_id)
        if self.svc.chats.busy(session_id):
            raise web.HTTPError(409, "a run is in progress or queued; cancel it first")
        try:
            deleted = await self.svc.store.truncate(session_id, message_id)
        except KeyError:
            raise web.HTTPError(404, f"no message {message_id!r} in this session") from None
        await tell_tabs(self.svc, session_id)
        self.send({"deleted": deleted})


class ActionsHandler(ThinkHandler):
    """``GET ?tool=&success=&since=&until=&message_id=&task_id=&limit=``: the action log
    (``task_id``: the calls of the subagent working on that task)."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Filtered action-log rows, oldest first."""
        await self.session_or_404(session_id)
        limit = self.int_arg("limit", 500, 1, 5000)
        assert limit is not None
        rows = await self.svc.store.list_actions(
            session_id,
            tool=self.get_query_argument("tool", None) or None,
            success=self.bool_arg("success"),
            since=self.float_arg("since"),
            until=self.float_arg("until"),
            message_id=self.get_query_argument("message_id", None) or None,
            limit=limit,
            task_id=self.get_query_argument("task_id", None) or None,
        )
        # Each row names the files its call changed: those rows can be undone.
        self.send({"actions": await with_files(self.svc.store, session_id, rows)})


class TasksHandler(ThinkHandler):
    """``GET``: the session's task graph: ``{"tasks": [root tasks, each with "children"
    recursively], "progress": 0..1}``; ``?flat=1``: ``{"tasks": [every task, oldest
    first]}`` (task objects: ``think_kernel/tasks/shape.py``)."""

    @authorized
    async def get(self, session_id: str) -> None:
        """The tree (or the flat list)."""
        await self.session_or_404(session_id)
        board = TaskBoard(self.svc.store, lambda event: None)  # reads only: emits nothing
        if self.bool_arg("flat"):
            self.send({"tasks": await board.session_flat(session_id)})
        else:
            self.send(await board.session_tree(session_id))


class EventsHandler(ThinkHandler):
    """``GET ?after=seq&limit=``: stored events (replay after a reconnect)."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Events after a seq, oldest first."""
        await self.session_or_404(session_id)
        after = self.int_arg("after", 0, 0)
        limit = self.int_arg("limit", 1000, 1, 10_000)
        assert after is not None and limit is not None
        rows = await self.svc.store.list_events(session_id, after, limit)
        last = rows[-1]["seq"] if rows else after
        self.send({"events": rows, "last_seq": last})


class ApprovalsHandler(ThinkHandler):
    """``GET ?status=``: the session's approvals."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Approvals, oldest first."""
        await self.session_or_404(session_id)
        status = self.get_query_argument("status", None) or None
        self.send({"approvals": await self.svc.store.list_approvals(session_id, status)})


class ApprovalHandler(ThinkHandler):
    """``GET`` one approval; ``POST {"decision": "approve"|"reject", "input"?, "reason"?,
    "always"?}`` decides it (409 when another surface decided first)."""

    async def _approval(self, session_id: str, approval_id: str) -> dict[str, Any]:
        row = await self.svc.store.get_approval(approval_id)
        if row is None or row["session_id"] != session_id:
            raise web.HTTPError(404, f"no approval {approval_id!r} in session {session_id!r}")
        return row

    @authorized
    async def get(self, session_id: str, approval_id: str) -> None:
        """The approval."""
        self.send(await self._approval(session_id, approval_id))

    @authorized
    async def post(self, session_id: str, approval_id: str) -> None:
        """Approve, reject (with a reason the model sees), or approve with edited arguments."""
        body = self.body()
        try:
            record = parse_decision(body, self.current_user, "api")
            row, delivered = await decide_approval(self.svc, session_id, approval_id, record)
        except BadDecision as e:
            raise web.HTTPError(400, str(e)) from None
        except ApprovalNotFound:
            raise web.HTTPError(
                404, f"no approval {approval_id!r} in session {session_id!r}"
            ) from None
        except AlreadyDecided:
            raise web.HTTPError(409, "this approval is already resolved") from None
        self.send(dict(row, delivered=delivered))


class KernelsHandler(ThinkHandler):
    """``GET``: the chat kernels: each session's, and the pool's spares."""

    @authorized
    async def get(self) -> None:
        """Pool settings and every chat kernel with its state and process id."""
        pool = self.svc.chats.pool
        km = pool.kernel_manager
        rows: list[tuple[str, str | None]] = [(kid, sid) for sid, kid in pool.kernels.items()]
        rows += [(kid, None) for kid in pool.spare_ids()]
        kernels = []
        for kid, sid in rows:
            try:
                kernel = km.get_kernel(kid)
            except Exception:  # gone since
                continue
            kernels.append(
                {
                    "id": kid,
                    "session_id": sid,
                    "pid": getattr(getattr(kernel, "provisioner", None), "pid", None),
                    "execution_state": getattr(kernel, "execution_state", None),
                    "prepared": kid in pool.prepared,
                }
            )
        self.send(
            {
                "pool_size": pool.pool_size,
                "spares_ready": pool.spares_ready,
                "idle_timeout": pool.idle_timeout,
                "culled": pool.culled,
                "kernels": kernels,
            }
        )


class OpenAPIHandler(ThinkHandler):
    """``GET``: the OpenAPI document of these routes."""

    @authorized
    async def get(self) -> None:
        """The document."""
        self.send(OPENAPI)


def routes(base: str = "/api/think") -> list[tuple[str, type[ThinkHandler]]]:
    """URL patterns (relative to the server's base_url) for the REST handlers."""
    s = f"{base}/sessions/{SID}"
    return [
        (f"{base}/openapi.json", OpenAPIHandler),
        (f"{base}/sessions", SessionsHandler),
        (f"{base}/kernels", KernelsHandler),
        (f"{base}/schedules", AllSchedulesHandler),
        (f"{base}/skills", SkillsHandler),
        (s, SessionHandler),
        (f"{s}/messages", MessagesHandler),
        (f"{s}/messages/(?P<message_id>{ID})/content", MessageContentHandler),
        (
            f"{s}/messages/(?P<message_id>{ID})/attachments/(?P<index>[0-9]{{1,3}})",
            MessageAttachmentHandler,
        ),
        (f"{s}/usage", UsageHandler),
        (f"{s}/attachments", AttachmentsHandler),
        (f"{s}/cancel", CancelHandler),
        (f"{s}/truncate", TruncateHandler),
        (f"{s}/actions", ActionsHandler),
        (f"{s}/tasks", TasksHandler),
        (f"{s}/events", EventsHandler),
        (f"{s}/approvals", ApprovalsHandler),
        (f"{s}/approvals/(?P<approval_id>{ID})", ApprovalHandler),
        (f"{s}/schedules", SchedulesHandler),
        (f"{s}/schedules/(?P<schedule_id>{ID})", ScheduleHandler),
        (f"{s}/jobs", JobsHandler),
        (f"{s}/jobs/stop", JobsStopHandler),
        *rewind_routes(s),
        *undo_routes(s, ID),
        *proposal_routes(s),
    ]
