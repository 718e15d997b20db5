"""The event pipeline: persist live frames in batches, then fan them out, in order.

    pipeline = EventPipeline(hub)
    task = asyncio.create_task(pipeline.run(store))
    pipeline.submit(session_id, frame, event_id="epoch:17", done=ack)   # from the kernel link
    seq = await pipeline.emit(session_id, frame)                        # server's own events

Every frame is written to the ``events`` table before any client sees it, so a client that
reconnects can replay from ``GET .../events?after=seq`` without gaps. Frames queued while a
write is in flight go in the next batch: one SQLite round trip for a burst (group commit).
Duplicates (an ``event_id`` already stored: the kernel resent after a dropped link) are
acknowledged but neither stored nor published again. Frames submitted before ``run`` (a
kernel that connected while the store was still opening) wait in the queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from think_kernel.store import Store

    from .hub import Hub

log = logging.getLogger(__name__)
Done = Callable[[int], None]


@dataclass(slots=True)
class _Item:
    session_id: str
    frame: dict[str, Any] | None  # None: a control item, only ordered with the events
    event_id: str | None
    done: Done | None


class EventPipeline:
    """Ordered, batched persistence and fan-out of session frames."""

    def __init__(self, hub: Hub, max_batch: int = 2_000) -> None:
        self.hub = hub
        self.max_batch = max_batch
        self._queue: list[_Item] = []
        self._wake = asyncio.Event()
        self._after_requests = False

    def submit(
        self,
        session_id: str,
        frame: dict[str, Any] | None,
        event_id: str | None = None,
        done: Done | None = None,
    ) -> None:
        """Queue a frame; ``done(seq)`` runs once it is stored (seq 0: duplicate/control)."""
        self._queue.append(_Item(session_id, frame, event_id, done))
        self._wake.set()

    def let_requests_first(self) -> None:
        """A request came behind queued frames (a run's doc.flush after its tool calls):
        its task runs before they are stored. A kernel waits on the answer,
        nobody on the storing; frames with no request behind them (a stream's text) are
        not held back."""
        if self._queue:
            self._after_requests = True

    async def emit(self, session_id: str, frame: dict[str, Any]) -> int:
        """Store and publish a frame the server itself produces; return its seq."""
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def done(seq: int) -> None:
            if not fut.done():
                fut.set_result(seq)

        self.submit(session_id, frame, None, done)
        return await fut

    async def run(self, store: Store) -> None:
        """Drain the queue into ``store`` forever (cancel the task to stop)."""
        while True:
            await self._wake.wait()
            if self._after_requests:
                self._after_requests = False
                await asyncio.sleep(0)  # see let_requests_first
            self._wake.clear()
            while self._queue:
                batch = self._queue[: self.max_batch]
                del self._queue[: len(batch)]
                await self._write(store, batch)

    async def _write(self, store: Store, batch: list[_Item]) -> None:
        rows = []
        index = []
        for i, item in enumerate(batch):
            if item.frame is not None:
                data = {k: v for k, v in item.frame.items() if k not in ("seq", "session_id")}
                rows.append((item.event_id, item.session_id, str(data.get("type", "")), data))
                index.append(i)
        seqs: dict[int, int] = {}
        if rows:
            try:
                stored = await store.append_events(rows)
            except Exception:
                # The batch is lost to the database but not to the clients; say so loudly.
                log.exception("could not store %d events", len(rows))
                stored = {}
            seqs = {index[r]: seq for r, seq in stored.items()}
        for i, item in enumerate(batch):
            seq = seqs.get(i, 0)
            if item.frame is not None and seq:
                frame = dict(item.frame, seq=seq, session_id=item.session_id)
                self.hub.publish(item.session_id, frame)
            if item.done is not None:
                try:
                    item.done(seq)
                except Exception:
                    log.exception("event callback failed")
