"""The server's side of tasks and subagents: durable checks, and a request's
tasks ended when its run ends here.

A kernel that spawns a subagent writes a ``subagent_check`` schedule (first check after 30 s,
then every 60 s, a bounded number of times: the payload says). The scheduler runs it here
even if that kernel died meanwhile: a subagent whose kernel is gone, has gone silent or ran
past its timeout is marked interrupted (or timed out), its task fails, ``subagent_error``
and ``task_updated`` reach every tab, and a report is stored where the parent agent's next
model call reads it (``think_kernel/subagents/monitor.py``).

    checks = SubagentChecks(store, pipeline, wake=scheduler.wake)
    scheduler.register("subagent_check", checks)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from think_kernel.subagents import mark_lost, owner_alive, verdict
from think_kernel.tasks import TaskBoard, TaskError

if TYPE_CHECKING:
    from think_kernel.agent.events import Event
    from think_kernel.store import Store

    from .pipeline import EventPipeline

log = logging.getLogger(__name__)
KIND = "subagent_check"
MAX_ATTEMPTS = 1000  # a payload cannot make a check reschedule itself forever


def session_board(store: Store, pipeline: EventPipeline, session_id: str) -> TaskBoard:
    """A task board whose events go to one session's tabs (stored, then published)."""

    async def emit(event: Event) -> None:
        await pipeline.emit(session_id, event.to_dict())

    return TaskBoard(store, emit)


class SubagentChecks:
    """The ``subagent_check`` schedule handler."""

    def __init__(
        self, store: Store, pipeline: EventPipeline, wake: Callable[[], None] = lambda: None
    ) -> None:
        self.store = store
        self.pipeline = pipeline
        self.wake = wake

    async def __call__(self, payload: dict[str, Any]) -> None:
        """Check one subagent; look again later, or end it if it is lost."""
        task_id = payload.get("task_id")
        row = await self.store.get_task(task_id) if isinstance(task_id, str) else None
        if row is None:
            return
        attempt = _number(payload.get("attempt"), 1)
        attempts = min(_number(payload.get("attempts"), 12), MAX_ATTEMPTS)
        every = max(1.0, float(_number(payload.get("every"), 60)))
        stale = max(1.0, float(_number(payload.get("stale_after"), 30)))
        code, why = verdict(row, time.time(), alive=owner_alive, stale_after=stale)
        if code == "done":
            return
        if code == "running":
            if attempt < attempts:
                again = {**payload, "attempt": attempt + 1}
                await self.store.add_schedule(KIND, time.time() + every, again, row["session_id"])
                self.wake()
                return
            code, why = "timeout", f"it was still running after {attempt} checks"
        board = session_board(self.store, self.pipeline, row["session_id"])
        report = await mark_lost(board, row, code, why)
        if report is not None:
            log.info("subagent of task %s: %s (%s)", row["id"], code, why)
            await self.pipeline.emit(row["session_id"], {"type": "message", "message": report})


async def end_request_tasks(
    store: Store,
    pipeline: EventPipeline,
    session_id: str,
    message_id: str,
    status: str,
    reason: str,
) -> None:
    """A run ended here (its kernel may have died first): end its root task if it is open."""
    root = await store.root_of_message(message_id)
    if root is None or root["status"] not in ("pending", "in_progress"):
        return
    board = session_board(store, pipeline, session_id)
    try:
        await board.end(root["id"], status, reason or None)
    except TaskError:
        log.exception("could not end the tasks of run message %s", message_id)


def _number(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int | float) and value > 0 else default
