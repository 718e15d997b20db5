"""What the manager knows of one subagent of this process, and how a request is ending.

    handle = Handle(job, root_id, model, started, deadline)   # made by Subagents.delegate
    handle.describe()   # {"task_id", "title", "status", "seconds", "steps", ...}

``check_subagent_status`` and ``wait_for_subagents`` answer with ``describe()``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from ..agent.events import Chat, ErrorEvent, Event
from .runner import Job

RESULT_CHARS = 4000


@dataclass
class RequestEnd:
    """How a request is ending, from its events: answered (complete) or not (failed)."""

    status: str = "failed"
    reason: str | None = None

    def see(self, event: Event) -> None:
        """Take one event of the request's run."""
        if isinstance(event, Chat):
            self.status, self.reason = "complete", None
        elif isinstance(event, ErrorEvent):
            self.status, self.reason = "failed", event.message


@dataclass
class Handle:
    """A subagent of this process: its job, its asyncio task, how it ended."""

    job: Job
    root_id: str
    model: str
    started: float
    deadline: float
    runner: asyncio.Task[None] | None = None
    code: str = "running"  # then complete, error, timeout, cancelled
    result: str | None = None
    error: str = ""
    ended: float | None = None
    cancel_reason: str = ""
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def task_id(self) -> str:
        """The task it works on."""
        return str(self.job.task["id"])

    def describe(self) -> dict[str, Any]:
        """Its state for check_subagent_status."""
        end = self.ended or time.time()
        out: dict[str, Any] = {
            "task_id": self.task_id,
            "title": self.job.task["title"],
            "status": self.code,
            "model": self.model,
            "seconds": round(end - self.started, 1),
            "steps": self.job.steps,
            "tool_calls": self.job.tool_calls,
        }
        if self.job.agent:
            out["agent"] = self.job.agent
        if self.code == "running" and self.job.stream.text:
            out["writing"] = self.job.stream.text[-300:]
        if self.result is not None:
            out["result"] = _clip(self.result, RESULT_CHARS)
        if self.error:
            out["error"] = self.error
        return out


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text):,} characters)"
