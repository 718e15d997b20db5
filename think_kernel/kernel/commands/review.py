"""``%think_review [on|off|default]``: review mode for this session (the sidebar's toggle too)."""

from __future__ import annotations

from typing import Any

from ...proposals import OPTION, Proposal
from .reply import CommandError, CommandReply

WORDS = {"on": True, "off": False, "default": None}


async def think_review(rt: Any, arg: str) -> CommandReply:
    """Turn review mode on or off for this session; with no argument, say what is proposed."""
    word = arg.strip().lower()
    if word and word not in WORDS:
        raise CommandError("usage: %think_review [on|off|default]")
    if word:
        await rt.set_props(**{OPTION: WORDS[word]})
    proposal = Proposal.of(rt)
    on = await proposal.is_active()
    paths = await proposal.paths()
    state = (
        "on: the agent's file and notebook edits become a proposal you accept or reject"
        if on
        else "off: the agent edits the live files"
    )
    listed = "\n".join(f"- `{p}`" for p in paths) or "(nothing proposed)"
    return CommandReply(
        f"Review mode of this session: **{state}**.\n\nProposed changes:\n{listed}\n\n"
        "Review them in the sidebar, or with `GET /api/think/sessions/{id}/proposal`."
    )
