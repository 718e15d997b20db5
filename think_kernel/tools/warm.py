"""Tool argument validators built ahead of the first call, while nobody is waiting.

    warmer = ToolWarmer(registry)
    async with warmer.running():     # a run: nothing is built meanwhile
        ...
    # a second after the last run ends, every validator not built yet is built

Building a pydantic validator costs ~0.1-0.3 s on a cold process; the first tool call would
otherwise pay it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from .base import ToolRegistry

log = logging.getLogger(__name__)


class ToolWarmer:
    """Counts active runs; once none is, builds the validators when idle."""

    def __init__(self, tools: ToolRegistry) -> None:
        self.tools = tools
        self._runs = 0
        self._idle: asyncio.TimerHandle | None = None

    def build_all(self) -> None:
        """Build every tool's argument validator now."""
        for tool in list(self.tools.tools.values()):
            if tool.validator_built:  # already, or a schema tool (validated by jsonschema)
                continue
            try:
                tool.model  # noqa: B018 (built on first access)
            except Exception:  # an odd annotation: its first call reports it
                log.debug("validator of %s not built ahead", tool.name, exc_info=True)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hold the building back while a run is active."""
        self._runs += 1
        try:
            yield
        finally:
            self._runs -= 1
            self.when_idle()

    def when_idle(self, delay: float = 1.0) -> None:
        """Build the validators once no run has been active for ``delay`` s (a person is
        typing): ahead of the first tool call, without slowing a run down."""
        self.cancel()
        if all(t.validator_built for t in self.tools.tools.values()):
            return

        def fire() -> None:
            self._idle = None
            if self._runs:
                self.when_idle(delay)
            else:
                self.build_all()

        try:
            self._idle = asyncio.get_running_loop().call_later(delay, fire)
        except RuntimeError:  # a run generator closed outside the loop (garbage collection)
            self._idle = None

    def cancel(self) -> None:
        """Forget a pending build (the runtime closes)."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
