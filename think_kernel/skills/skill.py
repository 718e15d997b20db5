"""One skill in the Agent Skills format: a folder holding ``SKILL.md`` (YAML ``name`` and
``description``, then instructions) and optionally ``scripts/``, ``references/``, ``assets/``.

    skill = parse_skill("csv-tips", text, source="workspace", where=".think/skills/csv-tips")
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .frontmatter import FrontMatterError, parse_front_matter

NAME_MAX = 64
DESCRIPTION_MAX = 1024
#: Lowercase letters, digits and single hyphens inside, as the Agent Skills format has it.
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class InvalidSkill(ValueError):
    """A SKILL.md that cannot be used; the message is the reason shown to people."""


@dataclass(frozen=True)
class Skill:
    """A valid skill: its catalog entry and its instructions."""

    name: str
    description: str
    #: ``workspace``, ``user`` or ``package:<distribution>``.
    source: str
    #: The skill's folder as the model and sandboxed code reach it (workspace-relative for
    #: workspace skills, absolute otherwise).
    where: str
    instructions: str


def check_name(name: object, folder: str) -> str:
    """The skill's name, or ``InvalidSkill`` saying what is wrong with it."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidSkill("'name' is missing from the front matter")
    if len(name) > NAME_MAX:
        raise InvalidSkill(f"'name' is {len(name)} characters; at most {NAME_MAX}")
    if not NAME_RE.match(name):
        raise InvalidSkill(f"'name' {name!r} must be lowercase letters, digits and single hyphens")
    if name != folder:
        raise InvalidSkill(f"'name' {name!r} does not match its folder {folder!r}")
    return name


def check_description(description: object) -> str:
    """The skill's description, or ``InvalidSkill`` saying what is wrong with it."""
    if not isinstance(description, str) or not description.strip():
        raise InvalidSkill("'description' is missing from the front matter")
    if len(description) > DESCRIPTION_MAX:
        raise InvalidSkill(
            f"'description' is {len(description)} characters; at most {DESCRIPTION_MAX}"
        )
    return " ".join(description.split())


def parse_skill(folder: str, text: str, *, source: str, where: str) -> Skill:
    """A :class:`Skill` from the text of its SKILL.md (``InvalidSkill`` with the reason)."""
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as e:
        raise InvalidSkill(str(e)) from None
    name = check_name(meta.get("name"), folder)
    description = check_description(meta.get("description"))
    return Skill(name, description, source, where, body.strip())
