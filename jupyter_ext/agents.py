"""``GET /api/think/agents?session=ID``: the agent types a session can choose, the files
refused and why, and the workspace types waiting for a person's review (the sidebar's
picker, ``POST /api/think/sessions {"agent"}``).

The server reads the places the session's kernel reads (the workspace at the server's root,
the user-level folder, installed packages, the built-in types) with the same code and the
same store, so a name it accepts is one the kernel will find. A workspace type whose content
no person approved is listed under ``review`` with its file; with a session, each gets a
pending approval there (made once per content, announced to its tabs), decided through
``POST /api/think/sessions/{id}/approvals/{aid}`` like a workspace skill's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.agents import SessionAgents, UnknownAgentType, open_agents
from think_kernel.skills.trust import TRUST_TOOL, review_diff, trust_key

from .base import ThinkHandler
from .modelsetup import kernel_config
from .services import Services
from .skills import announce_review, review_state

#: Why the card asks (the sidebar shows it under the title).
REVIEW_REASON = (
    "a workspace agent type no person approved yet (sandboxed code, an editor or git may "
    "have written it); approved, this content can be chosen as a chat's or subagent's type"
)


async def workspace_agents(root: str) -> SessionAgents:
    """The agent types of the workspace at ``root``, with the settings kernels get."""
    config = await asyncio.to_thread(lambda: kernel_config().config)
    return await asyncio.to_thread(open_agents, Path(root), config)


async def checked_agent(handler: ThinkHandler, name: str) -> str:
    """``name`` when a session of the server's workspace can run as that type; 400 saying
    why not."""
    agents = await workspace_agents(str(handler.serverapp.root_dir))  # type: ignore[union-attr]
    await agents.check_trust(handler.svc.store)
    try:
        return agents.find(name).name
    except UnknownAgentType as e:
        raise web.HTTPError(400, str(e)) from None


async def agents_status(svc: Services, root: str, session_id: str) -> dict[str, Any]:
    """The types, the refused files and the ones waiting for review (with a session: their
    pending approvals in it, and the session's current type)."""
    agents = await workspace_agents(root)
    await agents.check_trust(svc.store)
    scan = agents.last_scan or agents.scan()
    out: dict[str, Any] = {
        "agents": [
            {**t.kind.as_json(), "instructions": t.kind.instructions}
            for _, t in sorted(scan.types.items())
        ],
        "default": agents.config.default_agent,
        "invalid": [
            {"name": p.name, "source": p.source, "path": p.path, "reason": p.reason}
            for p in scan.report.invalid
        ],
        "review": [],
    }
    trust = agents.library.trust
    for r in scan.report.review:
        entry: dict[str, Any] = {
            "name": r.name,
            "source": r.source,
            "path": r.path,
            "reason": r.reason,
            "sha256": r.sha256,
            "text": scan.waiting[r.name].text,
            "approval": None,
        }
        # A content a person rejected stays so (a change asks again): only new ones ask.
        if session_id and trust.verdict(r.path, r.sha256) is None:
            entry["approval"] = await _ask(svc, session_id, entry)
        out["review"].append(entry)
    if session_id:
        out["current"] = agents.chosen(await svc.store.session_options(session_id))
    return out


async def _ask(svc: Services, session_id: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The session's approval of this content (made, and announced, the first time)."""
    key = trust_key(entry["path"], entry["sha256"])
    row = await svc.store.approval_for_call(session_id, key)
    if row is None:
        row = await svc.store.create_approval(
            session_id,
            "",
            key,
            TRUST_TOOL,
            {"path": entry["path"], "name": entry["name"], "sha256": entry["sha256"]},
            summary=f"trust agent type {entry['name']!r} ({entry['path']})",
            diff=review_diff(entry["path"], entry["text"]),
            expires_at=None,
        )
        await announce_review(svc, session_id, row, REVIEW_REASON)
    return review_state(row)


class AgentsHandler(ThinkHandler):
    """``GET ?session=ID``: ``{"agents": [{name, description, source, path, tools: {allow,
    deny}, model, approval_policy, skills, instructions}], "default", "invalid": [{name,
    source, path, reason}], "review": [{name, source, path, reason, sha256, text,
    approval}], "current"?}`` (``current``: the session's type, given a session)."""

    @authorized
    async def get(self) -> None:
        """The list (the files are read now, in a worker thread)."""
        session_id = self.get_query_argument("session", None) or ""
        if session_id:
            await self.session_or_404(session_id)
        root = str(self.serverapp.root_dir)  # type: ignore[union-attr]
        try:
            report = await agents_status(self.svc, root, session_id)
        except OSError as e:
            raise web.HTTPError(500, f"cannot read the agent types: {e}") from None
        self.send(report)


def agent_routes(base: str = "/api/think") -> list[tuple[str, type[ThinkHandler]]]:
    """URL patterns of the agent types' route."""
    return [(f"{base}/agents", AgentsHandler)]
