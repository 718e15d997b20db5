"""Approval cards in a request cell's output: one ipywidgets card per pending approval.

The cell awaits its run, so the kernel keeps reading comm messages and the card's buttons
work while the run waits for them::

    cards = ApprovalCards(runtime, publish)   # publish(msg_type, content) on the cell
    cards.feed(event)                         # each event of the run
    cards.feed_subagent(event)                # each event of the runtime's sinks
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from ..agent.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    QuestionAnswered,
    QuestionAsked,
)

log = logging.getLogger(__name__)

Publish = Callable[[str, dict[str, Any]], None]


class Approver(Protocol):
    """What the cards need of the runtime: its session, and where a decision goes.

    ``await approver.resolve_approval(approval_id, frame)`` takes the card's frame."""

    session_id: str

    async def resolve_approval(self, approval_id: Any, frame: dict[str, Any]) -> bool:
        """Record the decision ``frame`` for the approval ``approval_id``."""
        ...


class ApprovalCards:
    """ipywidgets approval cards in a request cell (the cell awaits, so clicks arrive)."""

    def __init__(self, runtime: Approver, publish: Publish) -> None:
        self.runtime, self.publish = runtime, publish
        self.cards: dict[str, Any] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._subagent_asks: set[str] = set()

    def feed_subagent(self, event: Event) -> None:
        """A subagent's approval events (they reach the runtime's sinks, not the run)."""
        if isinstance(event, (ApprovalRequested, QuestionAsked)) and event.task_id:
            self._subagent_asks.add(event.id)
            self.feed(event)
        elif isinstance(event, (ApprovalResolved, QuestionAnswered)) and (
            event.id in self._subagent_asks
        ):
            self.feed(event)

    def feed(self, event: Event) -> None:
        """Show a card for ``approval_requested`` (or ``question_asked``); settle it on
        ``approval_resolved`` (``question_answered``)."""
        if isinstance(event, (ApprovalRequested, QuestionAsked)):
            self._ask(event)
        elif isinstance(event, (ApprovalResolved, QuestionAnswered)) and event.id in self.cards:
            card = self.cards[event.id]
            card.resolved(event.to_dict())
            self._show("update_display_data", event.id, card.bundle())

    def _ask(self, event: ApprovalRequested | QuestionAsked) -> None:
        from ..questions.widget import card_for, pending_text

        aid = event.id

        def decide(frame: dict[str, Any]) -> None:
            task = asyncio.ensure_future(self.runtime.resolve_approval(aid, frame))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        session_id = self.runtime.session_id
        try:
            card = card_for(event.to_dict(), decide, session_id)
        except Exception:  # no widgets here: the text says how to decide elsewhere
            log.exception("approval card")
            data = {"text/plain": pending_text(event.to_dict(), session_id)}
            self._show("display_data", aid, data)
            return
        self.cards[aid] = card
        # text/plain is what a run without a page (nbclient, papermill) records.
        self._show("display_data", aid, card.bundle())

    def _show(self, msg_type: str, approval_id: str, data: dict[str, Any]) -> None:
        # One display per approval: the decision updates its text where it was recorded.
        transient = {"display_id": f"think-approval-{approval_id}"}
        self.publish(msg_type, {"data": data, "metadata": {}, "transient": transient})
