"""One agent type: a Markdown file whose YAML front matter says what the agent may use, and
whose body is its instructions.

    ---
    name: reviewer
    description: Reviews changes; reads and runs the tests, never edits.
    tools:
      allow: [read_file, list_files, read_notebook, bash]
    model: fast                 # a role (primary, fast, summarizer, vision) or a model name
    approval_policy: default    # auto, default or strict
    skills: [code-review]
    ---
    You review ...

    kind = parse_agent_type("reviewer", text, source="workspace", where=".think/agents/reviewer.md")
    kind.limits.allows("write_file")     # False

``tools`` is a list (the tools allowed), or a mapping with ``allow`` and/or ``deny`` lists;
entries may be shell-style patterns (``github__*``). Without ``tools`` every tool is allowed.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

from ..agent.calls import ROLES
from ..approvals.policy import MODES
from ..skills.frontmatter import FrontMatterError, parse_front_matter

NAME_MAX = 64
DESCRIPTION_MAX = 1024
#: Lowercase letters, digits and single hyphens inside, as skill names are.
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
#: Front matter keys an agent type may have; any other is a mistake worth saying.
KEYS = frozenset({"name", "description", "tools", "model", "approval_policy", "skills"})


class InvalidAgentType(ValueError):
    """A file that is not a usable agent type; the message is the reason shown to people."""


@dataclass(frozen=True)
class ToolLimits:
    """Which tools an agent type may call: an allowlist (None: all), then a denylist."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()

    @property
    def unlimited(self) -> bool:
        """True when every tool is allowed."""
        return self.allow is None and not self.deny

    def allows(self, tool: str) -> bool:
        """Whether the type may call ``tool``."""
        if self.allow is not None and not any(fnmatch.fnmatchcase(tool, p) for p in self.allow):
            return False
        return not any(fnmatch.fnmatchcase(tool, p) for p in self.deny)

    def describe(self) -> str:
        """The limits in a few words (the refusal the model sees says them)."""
        parts = []
        if self.allow is not None:
            parts.append("allows only " + (", ".join(self.allow) or "no tools"))
        if self.deny:
            parts.append("denies " + ", ".join(self.deny))
        return "; ".join(parts) or "allows every tool"

    def as_json(self) -> dict[str, Any]:
        """The wire form: ``{"allow": [...] | null, "deny": [...]}``."""
        return {
            "allow": list(self.allow) if self.allow is not None else None,
            "deny": list(self.deny),
        }


@dataclass(frozen=True)
class AgentType:
    """A valid agent type: what it may use and its instructions."""

    name: str
    description: str
    #: ``builtin``, ``workspace``, ``user`` or ``package:<distribution>``.
    source: str
    #: Where its file is (workspace-relative for workspace types, absolute otherwise).
    where: str
    instructions: str
    limits: ToolLimits = field(default_factory=ToolLimits)
    #: A role (``fast``...) or a model name; "" keeps the session's.
    model: str = ""
    #: ``auto``, ``default`` or ``strict``; "" keeps the session's.
    approval_policy: str = ""
    skills: tuple[str, ...] = ()

    @property
    def model_role(self) -> str:
        """The role its ``model`` names, or "" when it names a model (or nothing)."""
        return self.model if self.model in ROLES else ""

    def as_json(self) -> dict[str, Any]:
        """The wire form (``GET /api/think/agents``)."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "path": self.where,
            "tools": self.limits.as_json(),
            "model": self.model,
            "approval_policy": self.approval_policy,
            "skills": list(self.skills),
        }


def _names(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidAgentType(f"'{key}' must be a list of tool names")
    return tuple(v.strip() for v in value)


def parse_limits(value: object) -> ToolLimits:
    """The :class:`ToolLimits` of a ``tools`` value (``InvalidAgentType`` if malformed)."""
    if value is None:
        return ToolLimits()
    if isinstance(value, list | str):
        return ToolLimits(allow=_names(value, "tools"))
    if not isinstance(value, dict):
        raise InvalidAgentType(
            "'tools' must be a list of tool names, or {allow: [...], deny: [...]}"
        )
    unknown = set(value) - {"allow", "deny"}
    if unknown:
        raise InvalidAgentType(
            f"'tools' has {', '.join(sorted(map(str, unknown)))}; only allow and deny"
        )
    allow = _names(value["allow"], "tools.allow") if value.get("allow") is not None else None
    deny = _names(value["deny"], "tools.deny") if value.get("deny") is not None else ()
    return ToolLimits(allow, deny)


def _text(meta: dict[str, Any], key: str, limit: int = 200) -> str:
    value = meta.get(key)
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidAgentType(f"'{key}' must be a string of at most {limit} characters")
    return value.strip()


def parse_agent_type(name: str, text: str, *, source: str, where: str) -> AgentType:
    """An :class:`AgentType` from its file's text; ``name`` is the file's stem, which the
    front matter's ``name`` must match (``InvalidAgentType`` with the reason otherwise)."""
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as e:
        raise InvalidAgentType(str(e)) from None
    unknown = set(map(str, meta)) - KEYS
    if unknown:
        raise InvalidAgentType(
            f"unknown key {', '.join(sorted(unknown))}; the keys are {', '.join(sorted(KEYS))}"
        )
    declared = meta.get("name")
    if not isinstance(declared, str) or not declared.strip():
        raise InvalidAgentType("'name' is missing from the front matter")
    if len(declared) > NAME_MAX or not NAME_RE.match(declared):
        raise InvalidAgentType(
            f"'name' {declared!r} must be lowercase letters, digits and single hyphens "
            f"(at most {NAME_MAX})"
        )
    if declared != name:
        raise InvalidAgentType(f"'name' {declared!r} does not match its file name {name!r}")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise InvalidAgentType("'description' is missing from the front matter")
    if len(description) > DESCRIPTION_MAX:
        raise InvalidAgentType(f"'description' is longer than {DESCRIPTION_MAX} characters")
    policy = _text(meta, "approval_policy")
    if policy and policy not in MODES:
        raise InvalidAgentType(f"'approval_policy' is one of {', '.join(MODES)}; got {policy!r}")
    skills = meta.get("skills")
    return AgentType(
        name=name,
        description=" ".join(description.split()),
        source=source,
        where=where,
        instructions=body.strip(),
        limits=parse_limits(meta.get("tools")),
        model=_text(meta, "model"),
        approval_policy=policy,
        skills=_names(skills, "skills") if skills is not None else (),
    )
