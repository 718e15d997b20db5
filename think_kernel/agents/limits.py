"""An agent type's tool limits, enforced where tools are called, not asked of the model.

    tools = LimitedTools(runtime.tools, reviewer)   # a view: the session's registry, filtered
    tools.specs()                                   # only what the type allows is offered
    await tools.call("write_file", args, ctx)       # refused: ok=False, the reason as result

The view follows the registry it wraps (tools that load later, MCP tools, self-written
tools), so a limit holds for them too. A refused call is an ordinary failed call: the model
sees why, and the action log records it like any other.
"""

from __future__ import annotations

import json
from typing import Any

from ..tools.base import CallOutcome, Tool, ToolContext, ToolFunc, ToolOutput, ToolRegistry
from .agenttype import AgentType

#: The error code of a call an agent type does not allow.
NOT_ALLOWED = "NOT_ALLOWED"


def refusal(tool: str, kind: AgentType) -> str:
    """What the model reads when it calls a tool its agent type does not allow."""
    return (
        f"{tool} is not allowed for the {kind.name!r} agent type ({kind.limits.describe()}); "
        "it was not run. Use the tools you have, or say what you would change."
    )


class LimitedTools(ToolRegistry):
    """The tools of ``base`` that an agent type allows (see the module doc)."""

    def __init__(self, base: ToolRegistry, kind: AgentType) -> None:
        # No registry of its own: every read goes to ``base`` through the properties below.
        self.base = base
        self.kind = kind

    # Read-only views of the wrapped registry's attributes: nothing here assigns them.
    @property
    def tools(self) -> dict[str, Tool]:  # type: ignore[override]
        """The allowed tools, by name, in registration order."""
        allows = self.kind.limits.allows
        return {n: t for n, t in self.base.tools.items() if allows(n)}

    @property
    def core(self) -> set[str]:  # type: ignore[override]
        """The allowed core tools."""
        return {n for n in self.base.core if self.kind.limits.allows(n)}

    @property
    def optional(self) -> set[str]:  # type: ignore[override]
        """As the wrapped registry says."""
        return self.base.optional

    @property
    def hidden(self) -> set[str]:  # type: ignore[override]
        """As the wrapped registry says."""
        return self.base.hidden

    @property
    def version(self) -> int:  # type: ignore[override]
        """The wrapped registry's: a change there is a change here."""
        return self.base.version

    def add(self, func: ToolFunc | Tool, core: bool = False) -> Tool:
        """Add to the wrapped registry (the limits still apply here)."""
        return self.base.add(func, core)

    def remove(self, name: str) -> None:
        """Remove from the wrapped registry."""
        self.base.remove(name)

    def offer(self, name: str, offered: bool) -> None:
        """Offer or hide in the wrapped registry."""
        self.base.offer(name, offered)

    def specs(self) -> list[dict[str, Any]]:
        """The specs of the offered tools the type allows."""
        allows = self.kind.limits.allows
        return [s for s in self.base.specs() if allows(s["function"]["name"])]

    def __contains__(self, name: str) -> bool:
        return name in self.base and self.kind.limits.allows(name)

    async def call(self, name: str, arguments: str | dict | None, ctx: ToolContext) -> CallOutcome:
        """Run an allowed tool; refuse any other one with the reason as its result."""
        if name in self.base and not self.kind.limits.allows(name):
            text = refusal(name, self.kind)
            out = ToolOutput(text=f"Error: {text}", ok=False, error=text, summary="not allowed")
            return CallOutcome(out, 0.0, _as_dict(arguments))
        return await self.base.call(name, arguments, ctx)


def _as_dict(arguments: str | dict | None) -> dict[str, Any] | None:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def limited(tools: ToolRegistry, kind: AgentType) -> ToolRegistry:
    """``tools`` as ``kind`` may use them (the registry itself when it allows everything)."""
    return tools if kind.limits.unlimited else LimitedTools(tools, kind)
