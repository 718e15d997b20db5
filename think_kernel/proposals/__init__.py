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

__all__ = ["KEEP", "OPTION", "Change", "Proposal", "in_review", "is_notebook"]


def in_review(runtime: Any, ctx: Any) -> None:
    """Point one tool call's workspace and notebooks at the session's proposal (they act on
    the live files while review mode is off)."""
    from .overlay import ProposalNotebooks, ProposalWorkspace

    proposal = Proposal.of(runtime)
    based = getattr(runtime, "_proposal_based", None)
    if based is None or getattr(runtime, "_proposal_based_for", None) is not proposal:
        based = runtime._proposal_based = {}
        runtime._proposal_based_for = proposal
    ws = ProposalWorkspace(ctx.workspace, proposal, based)
    ctx.workspace = ws
    ctx.services = dataclasses.replace(
        ctx.services, notebooks=ProposalNotebooks(ctx.services.notebooks, ws)
    )
