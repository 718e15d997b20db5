"""A chat run as the server drives it, the retry backoff, and the error for a missing session."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


class SessionNotFound(KeyError):
    """No such chat session."""


@dataclass
class RetryPolicy:
    """Backoff delays in seconds (``len`` = retries after the first attempt)."""

    delays: list[float] = field(default_factory=lambda: [2.0, 4.0, 8.0])

    def delay(self, attempt: int) -> float | None:
        """Seconds before retry number ``attempt`` (1-based), or None when out of retries."""
        return self.delays[attempt - 1] if 0 < attempt <= len(self.delays) else None


@dataclass
class ChatRun:
    """One run this server drives: its request, its attempt, and who owns the attempt."""

    id: str
    session_id: str
    message_id: str
    content: str
    context: str
    attempt: int = 0
    state: str = "queued"  # queued (waiting its turn), running, retrying
    kernel_id: str | None = None
    epoch: str | None = None  # the kernel process that said run_started for this attempt
    delivered: bool = False  # the chat frame went out on a live link
    delivering: int = 0  # deliveries (kernel start, link, restart note) under way
    ping_floor: int = 0  # pongs to pings from this id on must list this attempt
    missing_since: float | None = None  # first pong that did not list it
    queued_message: bool = False  # its user message waits with status "queued"
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def key(self) -> tuple[str, int]:
        """What the kernel lists in its ``pong`` for this attempt."""
        return (self.id, self.attempt)
