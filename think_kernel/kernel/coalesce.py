"""Coalescing of streamed text: fewer, larger ``text_delta`` frames, same text, same order.

    c = DeltaCoalescer(emit, interval=0.02, max_parts=16)
    c.add(item)      # a link item; text deltas may be held back for up to ``interval`` s
    c.flush()        # send what is held (any other item flushes first, keeping the order)

A link item ``{"kind": "event", "session_id", "run_id", "event": {"type": "text_delta",
"message_id", "delta"}}`` is still exactly that after coalescing: consecutive deltas of the
same message are joined into one ``delta``, so a client that appends deltas shows the same
text. The first delta after a quiet ``interval`` goes out at once (the first token is never
delayed); later ones are sent at most once per ``interval``, or when ``max_parts`` deltas
(or ``max_chars`` characters) are held. Every other item first sends the held delta, so no
event overtakes text that came before it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

Item = dict[str, Any]


def _delta(item: Item) -> dict[str, Any] | None:
    event = item.get("event")
    if item.get("kind") != "event" or not isinstance(event, dict):
        return None
    if event.get("type") != "text_delta" or not isinstance(event.get("delta"), str):
        return None
    return event


def _same_stream(a: Item, b: Item) -> bool:
    ea, eb = a["event"], b["event"]
    return (
        a.get("session_id") == b.get("session_id")
        and a.get("run_id") == b.get("run_id")
        and {k: v for k, v in ea.items() if k != "delta"}
        == {k: v for k, v in eb.items() if k != "delta"}
    )


class DeltaCoalescer:
    """Holds back and joins consecutive text deltas of one message (see the module doc)."""

    def __init__(
        self,
        emit: Callable[[Item], None],
        interval: float = 0.02,
        max_parts: int = 16,
        max_chars: int = 16_384,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.emit = emit
        self.interval = interval
        self.max_parts = max_parts
        self.max_chars = max_chars
        self.clock = clock
        self._held: Item | None = None
        self._parts = 0
        self._last = float("-inf")  # when the last delta went out
        self._timer: asyncio.TimerHandle | None = None

    def add(self, item: Item) -> None:
        """Send ``item`` now, or hold it (a text delta) to join it with the next ones."""
        event = _delta(item)
        if event is None:
            self.flush()
            self.emit(item)
            return
        held = self._held
        if held is not None and _same_stream(held, item):
            held["event"]["delta"] += event["delta"]
            self._parts += 1
            if self._parts >= self.max_parts or len(held["event"]["delta"]) >= self.max_chars:
                self.flush()
            return
        self.flush()
        now = self.clock()
        wait = self._last + self.interval - now
        if wait <= 0 or self.interval <= 0:
            self._last = now
            self.emit(item)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop to flush later on: send at once
            self._last = now
            self.emit(item)
            return
        self._held = {**item, "event": dict(event)}
        self._parts = 1
        self._timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Send the held delta, if any."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        held, self._held = self._held, None
        if held is not None:
            self._last = self.clock()
            self.emit(held)
