"""Review mode: the agent's edits become a proposal a person accepts or rejects.

    proposal = Proposal.of(runtime)            # the session's (rows in the store)
    await proposal.is_active()                 # session option "review", else the config's
    await proposal.read(path)                  # bytes | None (deleted) | KEEP (not in it)
    await proposal.write(path, data, base)     # base: the version it was made from
    await proposal.delete(path, base)
    await proposal.paths()

:mod:`.proposal` keeps the rows, :mod:`.overlay` routes the file and notebook tools to them,
:mod:`.diff` shows them (per file, hunk and notebook cell) and :mod:`.decide` accepts (merged
three-way through the rooms) and rejects them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .proposal import KEEP, OPTION, Change, Proposal, is_notebook

__all__ = [
    "KEEP",
    "OPTION",
    "Change",
    "Proposal",
    "before_request",
    "in_review",
    "news_for_step",
    "is_notebook",
]


async def before_request(
    runtime: Any, props: dict[str, Any], user_message_id: str | None, context: str
) -> str:
    """At a request's start: whether its edits go to the proposal whatever the session says
    (its message was sent "propose only"), and its context with what the model has not yet
    been told of the decisions on its proposal."""
    from .notes import take_notes

    proposal = Proposal.of(runtime)
    sent = props.get("propose_only") or []
    proposal.forced = bool(user_message_id) and user_message_id in sent
    return await take_notes(runtime.store, runtime.session_id, context)


async def news_for_step(runtime: Any, session_id: str) -> str:
    """Decisions on the session's proposal made while its run goes on: the model is told at
    its next step (each once), not only at the next request."""
    from .notes import take_notes

    if runtime.store is None:
        return ""
    return await take_notes(runtime.store, session_id)


def in_review(runtime: Any, ctx: Any) -> None:
    """Point one tool call's workspace and notebooks at the session's proposal (they act on
    the live files while review mode is off)."""
    from .overlay import ProposalNotebooks, ProposalWorkspace

    proposal = Proposal.of(runtime)
    # What the session's calls read (the bases) and last saw of its proposal, kept across
    # calls as the reads themselves are.
    memo = getattr(runtime, "_proposal_memo", None)
    if memo is None or memo[0] is not proposal:
        memo = runtime._proposal_memo = (proposal, {}, {})
    ws = ProposalWorkspace(ctx.workspace, proposal, memo[1], memo[2])
    ctx.workspace = ws
    ctx.services = dataclasses.replace(
        ctx.services, notebooks=ProposalNotebooks(ctx.services.notebooks, ws)
    )
