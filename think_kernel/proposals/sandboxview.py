"""The session's proposal as its sandbox sees it: review-mode runs see the workspace with
the proposal applied, and their writes become proposed changes
(:class:`~think_kernel.sandbox.review.ReviewSource`)::

    sandbox.review_source = ProposalSource(runtime)
"""

from __future__ import annotations

from typing import Any

from .proposal import Proposal


class ProposalSource:
    """A :class:`~think_kernel.sandbox.review.ReviewSource` over ``Proposal.of(runtime)``
    (looked up at each use: the runtime's session and store may change)."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def _proposal(self) -> Proposal | None:
        return Proposal.of(self.runtime) if self.runtime.store is not None else None

    async def active(self) -> bool:
        """Review mode for the session's runs now (the session's option, the config's
        default, or a "propose only" request)."""
        proposal = self._proposal()
        return proposal is not None and await proposal.is_active()

    async def files(self) -> dict[str, bytes | None]:
        """Every proposed file: its content, None when deleted."""
        proposal = self._proposal()
        if proposal is None:
            return {}
        return {c.path: c.proposed for c in await proposal.changes()}

    async def write(self, path: str, data: bytes, base: bytes | None) -> None:
        """Propose what a run wrote (``base``: the live version)."""
        proposal = self._proposal()
        if proposal is not None:
            await proposal.write(path, data, base)

    async def delete(self, path: str, base: bytes | None) -> None:
        """Propose what a run deleted."""
        proposal = self._proposal()
        if proposal is not None:
            await proposal.delete(path, base)
