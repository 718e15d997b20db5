"""The collaborators the extension builds once and hands to every handler."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from think_kernel.waits import wait_for

if TYPE_CHECKING:
    from think_kernel.store import Store

    from .hub import Hub
    from .link import KernelLinks
    from .pipeline import EventPipeline
    from .reminders import Notifier
    from .runs import ChatSessions
    from .scheduler import Scheduler


@dataclass
class Limits:
    """Request limits (see the ``ThinkExtension`` traitlets)."""

    max_body_size: int = 1_048_576
    max_ws_frame: int = 65_536
    history_limit: int = 50
    page_limit: int = 500


@dataclass
class Services:
    """Filled in by ``ThinkExtension``; ``ready`` is set once the store is open."""

    limits: Limits
    store: Store = None  # type: ignore[assignment]
    hub: Hub = None  # type: ignore[assignment]
    pipeline: EventPipeline = None  # type: ignore[assignment]
    links: KernelLinks = None  # type: ignore[assignment]
    chats: ChatSessions = None  # type: ignore[assignment]
    scheduler: Scheduler = None  # type: ignore[assignment]
    notifier: Notifier | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None
    starter: Callable[[], Awaitable[None]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Start the extension if needed and wait for the store (TimeoutError after it)."""
        if not self.ready.is_set() and self.starter is not None:
            await wait_for(self.starter(), timeout)
        await wait_for(self.ready.wait(), timeout)
