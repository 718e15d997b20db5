"""The collaborators the extension builds once, and the handle handlers wait on for them.

The store opens when the server's event loop runs, after the handlers are registered, so a
handler receives a :class:`Startup` and gets the complete :class:`Services` from it:

    async def prepare(self):
        self.svc = await self.startup.wait()   # Services: store, chats, scheduler...
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from think_kernel.waits import wait_for

if TYPE_CHECKING:
    from think_kernel.store import Store

    from .apps import AppsWatch
    from .hub import Hub
    from .jobs import JobsWatch
    from .link import KernelLinks
    from .mcp.calls import KernelCalls
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


@dataclass(frozen=True)
class Services:
    """Everything a handler uses, built whole by ``ThinkExtension`` once the store is open."""

    limits: Limits
    store: Store
    hub: Hub
    pipeline: EventPipeline
    links: KernelLinks
    chats: ChatSessions
    scheduler: Scheduler
    notifier: Notifier
    mcp_calls: KernelCalls
    #: What each session's kernel last said of its background jobs.
    jobs: JobsWatch
    #: What each session's kernel last said of its live apps (and the proxy's clients).
    apps: AppsWatch


class StartFailed(RuntimeError):
    """The extension could not start (its store did not open)."""


class Startup:
    """The extension's start as handlers see it: ``await startup.wait()`` gives the services.

    ``starter`` starts the extension when a host (pytest-jupyter) never ran the server's
    start hook; calling it again only waits for the first start.
    """

    def __init__(self, starter: Callable[[], Awaitable[None]]) -> None:
        self.starter = starter
        self.ready = asyncio.Event()
        self.error: BaseException | None = None
        self._services: Services | None = None

    def finish(self, services: Services) -> None:
        """The extension started: hand out ``services`` from now on."""
        self._services = services
        self.ready.set()

    def fail(self, error: BaseException) -> None:
        """The extension could not start: every wait raises :class:`StartFailed`."""
        self.error = error
        self.ready.set()

    @property
    def services(self) -> Services:
        """The services of a started extension (:class:`StartFailed` before or without)."""
        if self._services is None:
            raise StartFailed(f"Think did not start: {self.error or 'still starting'}")
        return self._services

    async def wait(self, timeout: float = 30.0) -> Services:
        """Start the extension if needed and return its services (TimeoutError after
        ``timeout`` seconds, :class:`StartFailed` if the store failed to open)."""
        if not self.ready.is_set():
            await wait_for(self.starter(), timeout)
            await wait_for(self.ready.wait(), timeout)
        return self.services
