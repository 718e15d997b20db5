"""Project instructions: ``AGENTS.md`` files joined into the system prompt at each request.

    instructions = ProjectInstructions("/home/me/project", SkillsConfig())
    text, report = instructions.read("analysis/model.ipynb")
    # analysis/AGENTS.md, then AGENTS.md (the root), then <jupyter_config_dir>/AGENTS.md

Nearest first: the folder of the notebook or file the session is about, each folder above it
up to the workspace root, then the user's own. Workspace files are read through
:class:`~think_kernel.safefs.SafeReader`, so a planted link never leads a read out of the
workspace. The whole is bounded by ``SkillsConfig.instructions_max_chars``; what is cut is said.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from ..safefs import SafeReader
from .config import SkillsConfig
from .places import user_config_dir
from .report import Found, Problem, Report

NAME = "AGENTS.md"

HEADER = """\
## Project instructions
From AGENTS.md files, nearest folder first; where they disagree, the nearer one wins. Follow them.
"""


def folders_of(session_path: str) -> list[str]:
    """The workspace folders from the session's own up to the root (``""``), nearest first."""
    parts = PurePosixPath(session_path.strip("/")).parts if session_path else ()
    # A session about a file is about its folder; a session about a folder, that folder.
    if parts and PurePosixPath(parts[-1]).suffix:
        parts = parts[:-1]
    if ".." in parts:
        parts = ()
    return ["/".join(parts[:n]) for n in range(len(parts), -1, -1)]


class ProjectInstructions:
    """Reads the AGENTS.md files that apply to a session (never cached: edits apply at once)."""

    def __init__(
        self,
        workspace_root: str | os.PathLike[str],
        config: SkillsConfig | None = None,
        *,
        user_dir: Path | None = None,
    ) -> None:
        self.config = config or SkillsConfig()
        self.workspace = SafeReader(workspace_root)
        self.user_dir = user_dir if user_dir is not None else user_config_dir()

    def read(self, session_path: str = "") -> tuple[str, Report]:
        """The prompt section ("" when there are none) and the report of the files read."""
        report = Report()
        budget = max(0, self.config.instructions_max_chars)
        pieces: list[str] = []
        sources: list[tuple[str, SafeReader, str, str]] = [
            ("workspace", self.workspace, f"{folder}/{NAME}" if folder else NAME, "")
            for folder in folders_of(session_path)
        ]
        sources.append(("user", SafeReader(self.user_dir), NAME, str(self.user_dir) + "/"))
        for source, reader, rel, prefix in sources:
            shown = prefix + rel
            if budget <= 0:
                if reader.stat(rel) is not None:
                    reason = "left out: the limit c.SkillsConfig.instructions_max_chars was reached"
                    report.invalid.append(Problem(NAME, source, shown, reason))
                continue
            try:
                with reader.open_read(rel) as f:
                    size = os.fstat(f.fileno()).st_size
                    # Four bytes a character at most: enough bytes for what can be shown.
                    data = f.read(budget * 4 + 4)
            except FileNotFoundError:
                continue
            except OSError as e:
                report.invalid.append(Problem(NAME, source, shown, str(e)))
                continue
            text = data.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            note = ""
            if len(text) > budget or len(data) < size:
                total = max(len(text), size)
                text = text[:budget]
                note = f"cut to {len(text)} of about {total} characters"
                text += (
                    f"\n[{shown} was cut here: only its first {len(text)} characters fit "
                    "(c.SkillsConfig.instructions_max_chars)]"
                )
            budget -= len(text)
            report.loaded.append(Found(NAME, source, shown, note))
            pieces.append(f'<instructions path="{shown}">\n{text}\n</instructions>\n')
        if not pieces:
            return "", report
        return HEADER + "\n" + "\n".join(pieces), report
