"""What the store, the chat and every tab keep of a chat run: its task events and its end.

    await task_event(pipeline, run, "queued", "queued: starts when the current request ends")
    await record_dropped(store, pipeline, run)                  # cancelled before it started
    await record_end(store, pipeline, hub, run, "failed", "the kernel died")

The run queue decides when a run ends; these write it down, in the order the tabs expect:
the run's row, the failure note in the chat, the request's tasks, then the task event.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from think_kernel.agent.events import TaskEvent

from ..subagents import end_request_tasks
from .run import ChatRun

if TYPE_CHECKING:
    from think_kernel.store import Store

    from ..hub import Hub
    from ..pipeline import EventPipeline


async def task_event(
    pipeline: EventPipeline, run: ChatRun, kind: str, detail: str, attempt: int = 0
) -> None:
    """Tell the session's tabs how the run's request stands (queued, retrying, ended)."""
    event = TaskEvent(kind=kind, task_id=run.id, detail=detail, attempt=attempt)  # type: ignore[arg-type]
    await pipeline.emit(run.session_id, dict(event.to_dict(), run_id=run.id))


async def record_dropped(store: Store, pipeline: EventPipeline, run: ChatRun) -> None:
    """A queued run was cancelled before it started: so are its row and its waiting message."""
    await store.update_run(run.id, status="cancelled", error="cancelled")
    if run.queued_message:
        await store.update_message(run.message_id, status="cancelled")
        message = await store.get_message(run.message_id)
        if message is not None:
            await pipeline.emit(run.session_id, {"type": "message", "message": message})
    await task_event(pipeline, run, "failed", "cancelled", run.attempt)


async def record_end(
    store: Store, pipeline: EventPipeline, hub: Hub, run: ChatRun, status: str, error: str
) -> None:
    """Store how the run ended (``complete``, ``cancelled``, anything else is ``failed``)."""
    final = {"complete": "complete", "cancelled": "cancelled"}.get(status, "failed")
    if final == "failed" and not error:
        error = "the request failed"
    await store.update_run(run.id, status=final, error=error or None, ended_at=time.time())
    hub.clear(run.session_id)
    if final == "failed":
        # The reason stays in the chat (and its history), not only in a transient banner.
        note = await store.add_message(
            run.session_id,
            "system",
            f"The request failed: {error}",
            status="error",
            error=error,
            parent_id=run.message_id,
        )
        await pipeline.emit(run.session_id, {"type": "message", "message": note})
    # Its kernel ended its tasks, unless it died first.
    await end_request_tasks(store, pipeline, run.session_id, run.message_id, final, error)
    kind = "complete" if final == "complete" else "failed"
    detail = final if final != "failed" else error
    await task_event(pipeline, run, kind, detail, run.attempt)
