"""``GET /api/think/skills?session=ID``: the AGENTS.md files and skills a session's next
request uses, with the invalid ones and why (the sidebar's Skills list).

The server reads the same places the session's kernel reads (the workspace at the server's
root, the user-level folders, installed packages) with the same code, so what it lists is what
the kernel will load; the files are read again at each call, as the kernel does per request.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.skills.wiring import open_skills

from .base import ThinkHandler


def skills_status(root: str, session_path: str) -> dict[str, Any]:
    """What a session of the workspace at ``root`` about ``session_path`` would load."""
    skills = open_skills(Path(root), None, session_path)
    skills.prompt()
    return skills.status()


class SkillsHandler(ThinkHandler):
    """``GET ?session=ID``: ``{"instructions": {"loaded", "invalid"}, "skills": {"loaded",
    "invalid"}}``; each loaded entry ``{name, source, path, note}``, each invalid one
    ``{name, source, path, reason}``. Without ``session``: the workspace root's."""

    @authorized
    async def get(self) -> None:
        """The report (read in a worker thread: the files are read now)."""
        session_id = self.get_query_argument("session", None)
        path = ""
        if session_id:
            session = await self.session_or_404(session_id)
            path = str(session.get("path") or "")
        root = str(self.serverapp.root_dir)  # type: ignore[union-attr]
        try:
            report = await asyncio.to_thread(skills_status, root, path)
        except OSError as e:
            raise web.HTTPError(500, f"cannot read the skills: {e}") from None
        self.send(report)
