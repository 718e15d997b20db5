"""Building a session's :class:`~.session.SessionSkills` from its configuration.

runtime.skills = open_skills(root, config, "analysis/model.ipynb")
"""

from __future__ import annotations

import os
from pathlib import Path

from traitlets.config import Config

from .config import SkillsConfig
from .instructions import ProjectInstructions
from .library import SkillLibrary
from .session import SessionSkills
from .trust import SkillTrust


def relative_session_path(root: Path, session_path: str) -> str:
    """The session's path relative to the workspace ("" when it is outside or unknown)."""
    if not session_path or not os.path.isabs(session_path):
        return session_path
    try:
        return Path(session_path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return ""


def open_skills(root: Path, config: Config | None, session_path: str = "") -> SessionSkills:
    """The AGENTS.md files and skills one session of the workspace at ``root`` uses."""
    settings = SkillsConfig(config=config)
    return SessionSkills(
        SkillLibrary(root, settings, trust=SkillTrust(settings.trust_workspace_skills)),
        ProjectInstructions(root, settings),
        relative_session_path(root, session_path),
    )
