"""Limits of project instructions and skills (``c.SkillsConfig.*``)."""

from __future__ import annotations

from traitlets import Bool, Int
from traitlets.config import Configurable


class SkillsConfig(Configurable):
    """How much of ``AGENTS.md`` and of the skills reaches the model."""

    instructions_max_chars = Int(
        32_000,
        config=True,
        help="Characters of AGENTS.md files (all of them together) in the system prompt; "
        "past it they are cut, with a note saying so. Default: 32000.",
    )
    catalog_max_chars = Int(
        8_000,
        config=True,
        help="Characters of the skill catalog (names and descriptions) in the system prompt; "
        "skills past it are listed by name only. Default: 8000.",
    )
    skill_max_bytes = Int(
        256 * 1024,
        config=True,
        help="Bytes of one SKILL.md; a longer one is refused as invalid. Default: 262144.",
    )
    file_max_bytes = Int(
        256 * 1024,
        config=True,
        help="Bytes read_skill_file returns from one file of a skill. Default: 262144.",
    )
    trust_workspace_skills = Bool(
        False,
        config=True,
        help="Offer skills of <workspace>/.think/skills without a person's approval of each "
        "new or changed SKILL.md. Sandboxed code can write the workspace, so with this set "
        "a prompt-injected page can leave instructions for every later session. "
        "Default: False.",
    )
