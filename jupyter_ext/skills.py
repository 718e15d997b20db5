"""``GET /api/think/skills?session=ID``: the AGENTS.md files and skills a session's next
request uses, the invalid ones and why, and the workspace skills waiting for a person's review
(the sidebar's Skills list).

The server reads the same places the session's kernel reads (the workspace at the server's
root, the user-level folders, installed packages) with the same code and the same store, so
what it lists is what the kernel will load; the files are read again at each call, as the
kernel does per request.

A workspace skill whose content no person approved yet is listed under ``skills.review``
with its SKILL.md. With a session, each gets a pending approval in that session (made once
per content, and announced to its tabs as an ``approval_requested`` frame), which a person
decides through the ordinary approvals route,
``POST /api/think/sessions/{id}/approvals/{aid}``: approved, the skill joins the catalog at
the next request of every session.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.agent.events import ApprovalRequested
from think_kernel.approvals import decide, decision_record
from think_kernel.skills.trust import Verdict, ask_review, trust_key
from think_kernel.skills.wiring import open_skills

from .base import ThinkHandler
from .modelsetup import kernel_config
from .services import Services

#: Why the card asks (the sidebar shows it under the title).
REVIEW_REASON = (
    "a workspace skill no person approved yet (sandboxed code, an editor or git may have "
    "written it); approved, this content joins the catalog of every session"
)


async def skills_status(svc: Services, root: str, session_id: str, path: str) -> dict[str, Any]:
    """What a session of the workspace at ``root`` about ``path`` would load, with the
    skills waiting for review and (given a session) their pending approvals in it."""
    # The settings kernels get (``think_kernel_config.py``): the list is what they load.
    config = await asyncio.to_thread(lambda: kernel_config().config)
    skills = await asyncio.to_thread(open_skills, Path(root), config, path)
    await skills.check_trust(svc.store)
    await asyncio.to_thread(skills.prompt)
    report = skills.status()
    trust = skills.library.trust
    for entry in report["skills"]["review"]:
        loaded = skills.last_scan.waiting[entry["name"]]
        entry["text"] = loaded.text
        entry["approval"] = None
        # A content a person rejected stays so (a change asks again): only new ones ask.
        if session_id and trust.verdict(entry["path"], entry["sha256"]) is None:
            entry["approval"] = await _ask(svc, session_id, entry)
    if session_id:
        # What a person decided in another session settles this session's card of it.
        decided = [*skills.last_scan.skills.values(), *skills.last_scan.waiting.values()]
        for s in decided:
            if s.skill.source == "workspace":
                path = f"{s.skill.where}/SKILL.md"
                verdict = trust.verdict(path, s.sha256)
                if verdict is not None:
                    await _settle(svc, session_id, trust_key(path, s.sha256), verdict)
    return report


async def _settle(svc: Services, session_id: str, key: str, verdict: Verdict) -> None:
    """Decide the session's pending approval of a content as a person decided it elsewhere."""
    row = await svc.store.approval_for_call(session_id, key)
    if row is None or row["status"] != "pending":
        return
    record = decision_record(
        "approve" if verdict.approved else "reject",
        reason=f"decided in another session{': ' + verdict.reason if verdict.reason else ''}",
        source="api",
        user=verdict.user,
    )
    if await decide(svc.store, row, record):
        frame = {"type": "approval_resolved", "id": row["id"], "tool": row["tool"], **record}
        await svc.pipeline.emit(session_id, frame)


async def _ask(svc: Services, session_id: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The session's approval of this content (made, and announced, the first time)."""
    row, made = await ask_review(
        svc.store, session_id, entry["path"], entry["name"], entry["sha256"], entry["text"]
    )
    if made:
        await announce_review(svc, session_id, row, REVIEW_REASON)
    return review_state(row)


async def announce_review(svc: Services, session_id: str, row: dict[str, Any], why: str) -> None:
    """Tell the session's tabs of a new review approval (its card, with ``why`` under it)."""
    event = ApprovalRequested(
        row["id"],
        row["tool"],
        row.get("input"),
        summary=row.get("summary") or "",
        diff=row.get("diff") or "",
        reason=why,
        call_id=row.get("call_id") or "",
    )
    await svc.pipeline.emit(session_id, event.to_dict())


def review_state(row: dict[str, Any]) -> dict[str, Any]:
    """A review approval as listings show it: ``{id, status, summary}``."""
    return {"id": row["id"], "status": row["status"], "summary": row.get("summary") or ""}


class SkillsHandler(ThinkHandler):
    """``GET ?session=ID``: ``{"instructions": {"loaded", "invalid"}, "skills": {"loaded",
    "invalid", "review"}}``; each loaded entry ``{name, source, path, note}``, each invalid
    one ``{name, source, path, reason}``, each one waiting for review ``{name, source, path,
    reason, sha256, text, approval}`` (``approval``: ``{id, status, summary}`` of the
    session's pending approval, null without a session). Without ``session``: the
    workspace root's."""

    @authorized
    async def get(self) -> None:
        """The report (the files are read now, in a worker thread)."""
        session_id = self.get_query_argument("session", None) or ""
        path = ""
        if session_id:
            session = await self.session_or_404(session_id)
            path = str(session.get("path") or "")
        root = str(self.serverapp.root_dir)  # type: ignore[union-attr]
        try:
            report = await skills_status(self.svc, root, session_id, path)
        except OSError as e:
            raise web.HTTPError(500, f"cannot read the skills: {e}") from None
        self.send(report)
