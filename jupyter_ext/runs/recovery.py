"""Heartbeats for the runs this server drives, and recovery of runs nobody drives any more.

Every ``interval`` seconds:

- each active run whose kernel link is up gets a heartbeat and a checkpoint (the partial text
  streamed so far) in ``runs``, and its kernel a ``ping``: a kernel whose ``pong`` stops
  listing the run's attempt no longer owns it (it lost or dropped it) and the run is retried;
- a run whose kernel died, or whose link has been down for ``stale_timeout`` seconds, is
  interrupted (retried with backoff, or failed);
- runs in the store that another (dead) server process owned and whose heartbeat is older
  than ``stale_timeout`` are adopted and interrupted the same way: "treat processes as
  ephemeral, SQLite as durable".
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from think_kernel.store import Store

    from ..hub import Hub
    from ..link import KernelLinks
    from .sessions import ChatSessions

log = logging.getLogger(__name__)


class Recovery:
    """The heartbeat and stale-run loop."""

    def __init__(
        self,
        store: Store,
        chats: ChatSessions,
        links: KernelLinks,
        hub: Hub,
        *,
        interval: float = 5.0,
        stale_timeout: float = 30.0,
        retention: float = 0.0,
    ) -> None:
        self.store = store
        self.chats = chats
        self.links = links
        self.hub = hub
        self.interval = interval
        self.stale_timeout = stale_timeout
        self.retention = retention
        self._down_since: dict[str, float] = {}
        # A pong can overtake the run_end of a run that just ended (it is stored first):
        # a run must be missing from its kernel's pongs this long to count as orphaned.
        self.owner_grace = max(2.0, 3 * interval)
        self._last_prune = 0.0

    async def run(self) -> None:
        """Loop forever (cancel the task to stop); one bad pass never ends the loop."""
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("recovery pass failed")
            await asyncio.sleep(self.interval)

    async def tick(self) -> None:
        """One pass: heartbeat live runs, interrupt orphaned ones, adopt a dead server's."""
        now = time.time()
        alive, checkpoints = [], {}
        pinged: set[str] = set()
        for run in list(self.chats.runs.values()):
            kid = run.kernel_id
            if run.state != "running" or kid is None:
                alive.append(run.id)  # queued, retrying (the scheduler owns it) or starting
                continue
            if self.links.connected(kid):
                self._down_since.pop(run.id, None)
                if self.chats.lost_owner(run, self.owner_grace):
                    await self.chats.interrupt(run.id, "the think kernel lost the request")
                    continue
                if kid not in pinged:
                    pinged.add(kid)
                    self.chats.ping(kid)
                alive.append(run.id)
                part = self.hub.partial(run.session_id)
                if part is not None:
                    checkpoints[run.id] = json.dumps(
                        {"message_id": part.message_id, "content": part.content, "seq": part.seq}
                    )
                continue
            if not await self.chats.kernel_alive(kid):
                await self.chats.interrupt(run.id, "the think kernel died mid-run")
                continue
            if not run.delivered:
                alive.append(run.id)  # the kernel is starting: its delivery bounds that wait
                continue
            down = self._down_since.setdefault(run.id, now)
            if now - down > self.stale_timeout:
                await self.chats.interrupt(run.id, "lost the link to the think kernel")
            else:
                alive.append(run.id)
        if alive:
            await self.store.heartbeat_runs(alive, checkpoints)
        for row in await self.store.find_stale_runs(now - self.stale_timeout, self.chats.owner):
            log.info("recovering run %s of session %s", row["id"], row["session_id"])
            await self.chats.adopt(row)
        if self.retention and now - self._last_prune > 3600:
            self._last_prune = now
            await self.store.prune(now - self.retention)
