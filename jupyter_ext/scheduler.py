"""Timed work that survives restarts: rows in ``schedules``, run by kind.

    scheduler = Scheduler(store)
    scheduler.register("run_retry", handler)           # async handler(payload: dict)
    await store.add_schedule("run_retry", due_at, {"run_id": ...})
    scheduler.wake()                                    # a new row may be due sooner
    task = asyncio.create_task(scheduler.run())

A row is claimed (``pending`` -> ``running``) before its handler runs, so two servers on one
database never both run it; a handler that raises marks the row ``failed`` with the error.
Rows left ``running`` by a server that died are not re-run (at most once); recovery of the
work they stood for is the owner's job (for runs: ``recovery.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from think_kernel.store import Store

log = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any]], Awaitable[None]]


class Scheduler:
    """Polls for due schedules (sleeping until the next one, at most ``poll`` seconds)."""

    def __init__(self, store: Store, poll: float = 5.0) -> None:
        self.store = store
        self.poll = poll
        self.handlers: dict[str, Handler] = {}
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    def register(self, kind: str, handler: Handler) -> None:
        """Run ``handler(payload)`` for due rows of this kind."""
        self.handlers[kind] = handler

    def wake(self) -> None:
        """Look again now (a schedule was added)."""
        self._wake.set()

    async def run(self) -> None:
        """Run due work forever (cancel the task to stop)."""
        while True:
            await self.run_due()
            due = await self.store.next_schedule_due()
            wait = self.poll if due is None else min(self.poll, max(0.0, due - time.time()))
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), wait)
            except TimeoutError:
                pass

    async def run_due(self) -> int:
        """Start every due schedule with a known kind; return how many were started."""
        started = 0
        for row in await self.store.due_schedules(time.time()):
            handler = self.handlers.get(row["kind"])
            if handler is None or not await self.store.claim_schedule(row["id"]):
                continue
            task = asyncio.create_task(self._run_one(row, handler))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            started += 1
        return started

    async def _run_one(self, row: dict[str, Any], handler: Handler) -> None:
        try:
            payload = row["payload"] if isinstance(row["payload"], dict) else {}
            await handler(payload)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception("schedule %s (%s) failed", row["id"], row["kind"])
            await self.store.finish_schedule(row["id"], "failed", str(e))
            return
        await self.store.finish_schedule(row["id"], "done")

    async def close(self) -> None:
        """Cancel running handlers."""
        for task in list(self._tasks):
            task.cancel()
