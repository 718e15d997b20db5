"""Server side of approvals: one decision path for the REST API and the WebSocket.

    record = parse_decision(body, handler.current_user, "sidebar")
    row, delivered = await decide_approval(svc, session_id, approval_id, record)

The decision is stored first (the first one wins: a later one gets :class:`AlreadyDecided`),
logged with who made it and from where, then every tab hears ``approval_resolved`` and the
session's kernel a nudge to read it. A kernel that is not connected finds the stored decision
when it polls or when its run resumes, so nothing depends on the nudge arriving.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tornado import web

from think_kernel.approvals import Policy, PolicyError, decide, decision_record
from think_kernel.questions.spec import closing_record
from think_kernel.selftools.approval import APPROVAL_TOOL
from think_kernel.skills.trust import TRUST_TOOL
from think_kernel.wire.link import ApprovalFrame

if TYPE_CHECKING:
    from think_kernel.store import Store

    from .pipeline import EventPipeline
    from .services import Services


#: Approvals of a file's content (a self-written tool, a workspace skill): a cancelled run
#: does not close them, since none of its calls waits on them.
STANDING = frozenset({APPROVAL_TOOL, TRUST_TOOL})


class ApprovalNotFound(KeyError):
    """No such approval in this session."""


class AlreadyDecided(Exception):
    """Another surface decided first."""


class BadDecision(ValueError):
    """The body is not a decision (the message says what is expected)."""


def person(user: Any) -> tuple[str, str]:
    """``(display name, user id)`` of the request's user, from jupyter_server's identity
    provider: decisions name people as Jupyter shows them, never by a raw id."""
    uid = str(getattr(user, "username", "") or "")
    name = getattr(user, "display_name", "") or getattr(user, "name", "") or uid
    return str(name), uid


def parse_decision(body: dict[str, Any], user: Any, source: str) -> dict[str, Any]:
    """The decision record of a request body made by ``user`` (jupyter_server's user
    object); BadDecision when it is malformed."""
    decision = body.get("decision")
    if decision not in ("approve", "reject"):
        raise BadDecision("'decision' must be 'approve' or 'reject'")
    new_input = body.get("input")
    if new_input is not None and not isinstance(new_input, dict):
        raise BadDecision("'input' must be an object (the edited arguments)")
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadDecision("'reason' must be a string")
    always = body.get("always", False)
    if not isinstance(always, bool):
        raise BadDecision("'always' must be a boolean")
    # A client may say it is the sidebar; anything else counts as the API.
    claimed = body.get("source")
    source = claimed if claimed in ("sidebar", "api") else source
    name, uid = person(user)
    record = decision_record(
        decision,
        input=new_input,
        reason=reason or "",
        always=always,
        source=str(source),
        user=name,
    )
    record["user_id"] = uid[:200]  # a tab tells its own decisions by it ("you")
    return record


async def decide_approval(
    svc: Services, session_id: str, approval_id: str, record: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    """Store and announce a decision; returns the row and whether the kernel was told."""
    row = await svc.store.get_approval(approval_id)
    if row is None or row["session_id"] != session_id or row.get("kind") == "question":
        raise ApprovalNotFound(approval_id)  # a question takes an answer (questions.py)
    if not await decide(svc.store, row, record):
        raise AlreadyDecided(approval_id)
    frame = ApprovalFrame(
        approval_id,
        decision=record["decision"],
        input=record["input"],
        reason=record["reason"],
        always=record["always"],
        source=record["source"],
        user=record["user"],
    )  # the kernel needs no user_id: a tab tells its own decisions by it
    delivered = await svc.chats.deliver_approval(session_id, frame)
    await svc.pipeline.emit(
        session_id, {"type": "approval_resolved", "id": approval_id, "tool": row["tool"], **record}
    )
    fresh = await svc.store.get_approval(approval_id)
    return fresh or row, delivered


async def reject_pending(
    store: Store, pipeline: EventPipeline, session_id: str, reason: str
) -> int:
    """Reject every pending approval of a session and close its pending questions (its run
    was cancelled); returns how many."""
    count = 0
    for row in await store.list_approvals(session_id, "pending", kind=None):
        if row["tool"] in STANDING:
            continue  # no run waits on it: it stays for a person to decide
        if row.get("kind") == "question":
            record = closing_record("", source="cancel")
            frame = {"type": "question_answered", "id": row["id"], "source": "cancel"}
        else:
            record = decision_record("reject", reason=reason, source="cancel")
            frame = {"type": "approval_resolved", "id": row["id"], "tool": row["tool"], **record}
        if await decide(store, row, record):
            count += 1
            await pipeline.emit(session_id, frame)
    return count


def session_approval(session: dict[str, Any], value: Any) -> dict[str, Any]:
    """The session's options with its ``approval`` prop replaced (HTTP 400 if invalid).

    ``{"mode": "strict", "rules": [...], "always": [...]}``; ``null`` drops it (the kernel's
    configured policy applies again).
    """
    options = dict(session.get("options") or {})
    if value is None:
        options.pop("approval", None)
        return options
    if not isinstance(value, dict):
        raise web.HTTPError(400, "'approval' must be an object or null")
    unknown = set(value) - {"mode", "rules", "always", "kernel_exec"}
    if unknown:
        raise web.HTTPError(400, f"unknown approval keys: {sorted(unknown)}")
    for key in ("rules", "always"):
        if key in value and not isinstance(value[key], list):
            raise web.HTTPError(400, f"approval '{key}' must be a list")
    if any(not isinstance(t, str) for t in value.get("always") or []):
        raise web.HTTPError(400, "approval 'always' lists tool names")
    if value.get("kernel_exec") not in (None, "ask", "auto"):
        raise web.HTTPError(400, "approval 'kernel_exec' is 'ask' or 'auto'")
    try:
        Policy.from_settings("default", (), {"approval": value})
    except (PolicyError, TypeError) as e:
        raise web.HTTPError(400, f"invalid approval policy: {e}") from None
    options["approval"] = value
    return options
