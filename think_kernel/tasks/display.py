"""The task tree of a think cell, live: one display updated in place while the request runs.

    view = TaskDisplay(send, interval=0.05)   # send(msg_type, content): the cell's iopub
    runtime.add_sink(view.feed)               # task_created / task_updated events
    ...
    view.flush(final=True)

Shown once the request has a subtask (a request the model does not plan shows nothing);
redrawn at most once per ``interval`` seconds.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from ..agent.events import Event, TaskCreated, TaskUpdated
from .shape import markdown

Send = Callable[[str, dict[str, Any]], None]


class TaskDisplay:
    """One cell's live task tree (see the module doc)."""

    def __init__(self, send: Send, interval: float = 0.05) -> None:
        self.send = send
        self.interval = interval
        self.tasks: dict[str, dict[str, Any]] = {}
        self.display_id: str | None = None
        self.last = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def feed(self, event: Event) -> None:
        """Take a runtime event; redraw soon if it changed a task."""
        if not isinstance(event, TaskCreated | TaskUpdated):
            return
        task = event.task
        self.tasks[task["id"]] = task
        if self._timer is not None or not self._visible():
            return
        wait = self.last + self.interval - time.monotonic()
        if wait <= 0:
            self.flush()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self.flush)

    def markdown(self) -> str:
        """The tree as it stands."""
        return markdown(list(self.tasks.values()))

    def flush(self, final: bool = False) -> None:
        """Send the tree now (a new display the first time, then updates of it)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._visible():
            return
        text = self.markdown()
        content: dict[str, Any] = {
            "data": {"text/markdown": text, "text/plain": text},
            "metadata": {"think": {"tasks": True}},
        }
        if self.display_id is None:
            self.display_id = uuid.uuid4().hex
            self.send("display_data", {**content, "transient": {"display_id": self.display_id}})
        else:
            self.send(
                "update_display_data", {**content, "transient": {"display_id": self.display_id}}
            )
        self.last = time.monotonic()

    def _visible(self) -> bool:
        return any(t.get("parent_id") for t in self.tasks.values())
