"""A subagent's loop events -> ``subagent_*`` events for the parent's clients.

    stream = SubagentStream("t_1a2b", emit)   # emit: the parent runtime's (its sinks)
    async for event in agent.run(...):
        await stream.feed(event)
    await stream.close()

Text is coalesced: deltas are joined and sent at most once per ``interval`` (0.05 s, so
at most ~20 frames a second per subagent, however fast the model streams); any other event
sends the held text first, so order is kept. Tool calls and results become
``subagent_tool_call`` / ``subagent_tool_result`` (the output as a one-line summary: the
whole of it is in the subagent's stored messages). Approval requests and decisions and
changed files pass through unchanged (an approval asked by a subagent shows up like any
other, with its ``task_id``); the rest (status, usage, reasoning) stays inside.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

from ..agent.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    FileChanged,
    QuestionAnswered,
    QuestionAsked,
    SubagentTextDelta,
    SubagentToolCall,
    SubagentToolResult,
    TextDelta,
    ToolCall,
    ToolResult,
)

OUTPUT_CHARS = 300
# A subagent's approvals and questions go through its parent (they carry the task's id).
PASS_THROUGH = (ApprovalRequested, ApprovalResolved, QuestionAsked, QuestionAnswered, FileChanged)


def summary_of(result: ToolResult) -> str:
    """A tool result in one short line."""
    text = result.summary or next(iter(result.output.strip().splitlines()), "")
    text = " ".join(text.split())
    return text if len(text) <= OUTPUT_CHARS else text[: OUTPUT_CHARS - 1] + "…"


class SubagentStream:
    """Forwards one subagent's events, coalescing its text."""

    def __init__(
        self,
        task_id: str,
        emit: Callable[[Event], Any],
        interval: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.task_id = task_id
        self.emit = emit
        self.interval = interval
        self.clock = clock
        self.frames = 0  # text frames sent (the rate is what the issue bounds)
        self.text = ""  # the text of the current step, for check_subagent_status
        self._held = ""
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: set[asyncio.Future[None]] = set()

    async def feed(self, event: Event) -> None:
        """Take one event of the subagent's loop."""
        if isinstance(event, TextDelta):
            self.text += event.delta
            self._held += event.delta
            wait = self._last + self.interval - self.clock()
            if wait <= 0:
                await self.flush()
            elif self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(wait, self._on_timer)
            return
        await self.flush()
        if isinstance(event, ToolCall):
            self.text = ""
            await self._send(SubagentToolCall(self.task_id, event.id, event.name, event.input))
        elif isinstance(event, ToolResult):
            out = SubagentToolResult(
                self.task_id,
                event.call_id,
                event.name,
                summary_of(event),
                event.ok,
                event.duration_ms,
            )
            await self._send(out)
        elif isinstance(event, PASS_THROUGH):
            await self._send(event)

    async def flush(self) -> None:
        """Send the held text now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        held, self._held = self._held, ""
        if held:
            self._last = self.clock()
            self.frames += 1
            await self._send(SubagentTextDelta(self.task_id, held))

    async def close(self) -> None:
        """Send what is held and stop the timer."""
        await self.flush()
        if self._flushing:
            await asyncio.gather(*self._flushing, return_exceptions=True)

    def _on_timer(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self.flush())
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)

    async def _send(self, event: Event) -> None:
        res = self.emit(event)
        if inspect.isawaitable(res):
            await res
