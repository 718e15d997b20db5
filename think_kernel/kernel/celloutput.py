"""One request cell's live output: the run's Markdown transcript on one display, redrawn in
batches with ``update_display_data``, and the rich tool outputs in between.

    out = CellOutput(send, interval)   # send(msg_type, content) publishes on the cell
    out.begin()                        # the status line, at once
    out.feed(event)                    # each event of the run
    out.bundles(event.display)         # figures and tables, in order
    out.flush(final=True)
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from ..agent.events import Event
from .render import Transcript

Send = Callable[[str, dict[str, Any]], None]
WAITING_TICK = 0.5  # seconds between redraws of a retry countdown


class CellOutput:
    """One cell's live Markdown display: batched ``update_display_data`` on a display_id."""

    def __init__(self, send: Send, interval: float) -> None:
        self.send = send
        self.interval = interval
        self.view = Transcript()
        self.display_id: str | None = None
        self.start = 0
        self.last = 0.0
        self.handle: asyncio.TimerHandle | None = None
        self.loop = asyncio.get_running_loop()
        self.metadata: dict[str, Any] = {}
        self.shown_content = False

    def begin(self) -> None:
        """Show the status line at once; it does not count against the update rate."""
        self.flush()
        self.last = 0.0

    def feed(self, event: Event) -> None:
        """Take an event; redraw now or when the interval allows."""
        if self.view.feed(event, time.monotonic()):
            if not self.shown_content and len(self.view.blocks) > self.start:
                self.flush()  # the first token goes out at once; status lines cost no budget
            else:
                self.schedule()

    def schedule(self) -> None:
        """Redraw within the update interval (at most ~1/interval updates a second)."""
        if self.handle is not None:
            return
        delay = self.last + self.interval - time.monotonic()
        if delay <= 0:
            self.flush()
        else:
            self.handle = self.loop.call_later(delay, self.flush)

    def flush(self, final: bool = False) -> None:
        """Send the current Markdown (a new display, or an update of ours)."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        now = time.monotonic()
        markdown = self.view.render(final=final, now=now, start=self.start)
        if self.display_id is None and not markdown:
            return
        content = {
            "data": {"text/markdown": markdown, "text/plain": markdown},
            "metadata": {"think": self.metadata} if self.metadata else {},
        }
        if self.display_id is None:
            self.display_id = uuid.uuid4().hex
            self.send("display_data", {**content, "transient": {"display_id": self.display_id}})
        else:
            self.send(
                "update_display_data", {**content, "transient": {"display_id": self.display_id}}
            )
        self.last = now
        self.shown_content = len(self.view.blocks) > self.start
        if not final and self.view.status == "waiting" and not self.view.done:
            self.handle = self.loop.call_later(WAITING_TICK, self.flush)  # retry countdown

    def bundles(self, bundles: list[dict[str, Any]]) -> None:
        """Show rich tool outputs (figures, tables) in order, then continue in a new display."""
        self.flush(final=True)
        for bundle in bundles:
            data = {k: v for k, v in bundle.items() if "/" in k}
            if data:
                self.send("display_data", {"data": data, "metadata": {}, "transient": {}})
        self.start = len(self.view.blocks)
        self.display_id = None
