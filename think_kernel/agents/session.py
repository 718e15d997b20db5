"""The agent types of one session: which one a request runs as, and what that changes.

    agents = open_agents(root, config)
    await agents.check_trust(store)            # each request: verdicts on new workspace types
    kind = agents.of(props)                    # props["agent"], else c.AgentsConfig.default_agent
    tools = limited(runtime.tools, kind)       # its tool limits (think_kernel.agents.limits)
    agents.prompt(kind, skills)                # its section of the system prompt
    agents.apply(kind, settings)               # its model or role for the agent loop

A chat's type is its ``agent`` option (the sidebar's picker, ``%think_agent``, the ``agent``
of ``POST /api/think/sessions``); a subagent's is the ``agent`` of ``delegate_to_subagent``.
A type that cannot be found (a file removed, changed and not yet reviewed, invalid) is not
replaced by another: the request fails and says why, so a chat chosen read-only never runs
with more tools than it was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets.config import Config

from ..skills.session import skill_block
from ..skills.trust import SkillTrust
from .agenttype import AgentType
from .config import AgentsConfig
from .library import AgentLibrary, AgentScan

if TYPE_CHECKING:
    from ..skills.session import SessionSkills
    from ..store import Store


class UnknownAgentType(LookupError):
    """No usable agent type of that name; the message says why and which there are."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown agent type"


class SessionAgents:
    """What one session's requests see of agent types (see the module doc)."""

    def __init__(self, library: AgentLibrary, config: AgentsConfig | None = None) -> None:
        self.library = library
        self.config = config or AgentsConfig()
        self.last_scan: AgentScan | None = None

    async def check_trust(self, store: Store) -> None:
        """Read the types again and learn whether a person decided on the workspace ones
        waiting for review (before each request)."""
        scan = self.library.scan()
        if scan.waiting:
            contents = [(w.kind.where, w.sha256) for w in scan.waiting.values()]
            await self.library.trust.refresh(store, contents)
            scan = self.library.scan()
        self.last_scan = scan

    def scan(self) -> AgentScan:
        """The types as they are now (a stat per file; a file is re-read only when changed)."""
        self.last_scan = self.library.scan()
        return self.last_scan

    def _current(self) -> AgentScan:
        return self.last_scan if self.last_scan is not None else self.scan()

    def chosen(self, props: dict[str, Any]) -> str:
        """The name of the type a session's props choose (the default when none)."""
        return str(props.get("agent") or self.config.default_agent)

    def find(self, name: str, scan: AgentScan | None = None) -> AgentType:
        """The usable type of that name; ``UnknownAgentType`` says why not."""
        scan = scan or self._current()
        found = scan.types.get(name)
        if found is not None:
            return found.kind
        known = ", ".join(sorted(scan.types)) or "none"
        why = next((p.reason for p in scan.report.invalid if p.name == name), "")
        if name in scan.waiting:
            why = "its workspace file waits for a person's review (GET /api/think/agents)"
        detail = f" ({why})" if why else ""
        raise UnknownAgentType(f"no usable agent type {name!r}{detail}; the types are: {known}")

    def of(self, props: dict[str, Any]) -> AgentType:
        """The type a request with these props runs as (``UnknownAgentType`` if unusable)."""
        return self.find(self.chosen(props))

    def policy_of(self, props: dict[str, Any]) -> str:
        """The approval policy the session's type sets ("" when none, or no usable type)."""
        try:
            return self.of(props).approval_policy
        except UnknownAgentType:
            return ""  # the request itself fails and says why

    def status(self, props: dict[str, Any]) -> str:
        """The session's type for ``%think_status`` (Markdown)."""
        try:
            kind = self.of(props)
        except UnknownAgentType as e:
            return f"**unavailable**: {e}"
        return f"`{kind.name}` ({kind.source}; {kind.limits.describe()})"

    def prompt(self, kind: AgentType, skills: SessionSkills | None = None) -> str:
        """The type's section of the system prompt ("" for a type that changes nothing)."""
        parts = []
        if kind.instructions or not kind.limits.unlimited:
            parts.append(f"# Agent type: {kind.name}\n{kind.description}")
        if not kind.limits.unlimited:
            parts.append(
                f"Your tools are limited by your agent type: it {kind.limits.describe()}. "
                "Calls to other tools are refused."
            )
        if kind.instructions:
            parts.append(kind.instructions)
        if kind.skills and skills is not None:
            for name in kind.skills:
                loaded = skills.find(name)
                if loaded is not None:
                    parts.append(skill_block(loaded))
        return "\n\n".join(parts)

    def apply(self, kind: AgentType, settings: dict[str, Any]) -> dict[str, Any]:
        """The agent loop's settings with the type's model: a role it names runs the steps,
        a model it names runs the step role."""
        if kind.model_role:
            return {**settings, "step_role": kind.model_role}
        if not kind.model:
            return settings
        role = str(settings.get("step_role") or "primary")
        models = {**dict(settings.get("models") or {}), role: kind.model}
        out = {**settings, "models": models}
        if role == "primary":
            out["model_name"] = kind.model
        return out


def open_agents(root: Path, config: Config | None) -> SessionAgents:
    """The agent types of a session of the workspace at ``root``."""
    settings = AgentsConfig(config=config)
    library = AgentLibrary(root, trust=SkillTrust(settings.trust_workspace_agents))
    return SessionAgents(library, settings)
