"""``%think_agent [NAME|default]``: the session's agent type (the sidebar's picker too)."""

from __future__ import annotations

from typing import Any

from ...agents import UnknownAgentType
from ..render import code_span
from .reply import CommandError, CommandReply


async def think_agent(rt: Any, arg: str) -> CommandReply:
    """Choose this session's agent type (``default`` resets); with no argument, list them."""
    name = arg.strip()
    agents = rt.agents
    if rt.store is not None:
        await agents.check_trust(rt.store)  # a person may have approved a workspace type
    scan = agents.scan()
    if not name:
        current = agents.chosen(await rt.props())
        lines = [
            f"- {'**' + n + '**' if n == current else n} ({t.kind.source}): {t.kind.description}"
            for n, t in sorted(scan.types.items())
        ]
        lines += [
            f"- {code_span(p.name)} invalid ({p.path}): {p.reason}" for p in scan.report.invalid
        ]
        lines += [f"- {code_span(r.name)} ({r.path}): {r.reason}" for r in scan.report.review]
        return CommandReply(
            f"Agent type of this session: **{current}**. `%think_agent NAME` changes it.\n\n"
            + "\n".join(lines)
        )
    if name == "default":
        await rt.set_props(agent=None)
        return CommandReply(f"Agent type of this session: **{agents.chosen({})}** (the default).")
    try:
        kind = agents.find(name, scan)
    except UnknownAgentType as e:
        raise CommandError(str(e)) from None
    await rt.set_props(agent=kind.name)
    return CommandReply(
        f"Agent type of this session: **{kind.name}** ({kind.source}). Its tools: "
        f"{kind.limits.describe()}."
    )
