"""The ``apps`` link frame in a kernel: a person's Stop or Restart of an app (the sidebar,
``POST .../apps`` with ``{"action": "stop"|"restart", "name"}``).

    control = AppsControl(link.runtime)
    control.on_frame(AppsFrame(session_id="s_1", name="site", action="restart"))

The apps' next record (the ``apps`` item) tells the server how it went.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..wire.link import AppsFrame
from .app import AppError

log = logging.getLogger(__name__)


class AppsControl:
    """Carries out ``apps`` frames on the runtime that serves their session."""

    def __init__(self, runtime: Callable[[str], Awaitable[Any]]) -> None:
        self._runtime = runtime
        self._tasks: set[asyncio.Task[None]] = set()

    def on_frame(self, frame: AppsFrame) -> None:
        """Stop or restart the app (in a task: the link reads on)."""
        task = asyncio.ensure_future(self._act(frame))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _act(self, frame: AppsFrame) -> None:
        try:
            apps = (await self._runtime(frame.session_id)).apps
            if frame.action == "stop":
                await apps.stop(frame.session_id, frame.name, "stopped from the sidebar")
            elif frame.action == "restart":
                await apps.restart(frame.session_id, frame.name)
        except AppError as e:  # its record says how the app stands
            log.info("app %s: %s", frame.name, e)
        except Exception:
            log.exception("the app's %s failed", frame.action)
