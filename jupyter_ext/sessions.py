"""Chat sessions run in think kernels: one kernel per session, started on demand.

    chats = ChatSessions(store, kernel_manager, links, pipeline, hub, policy, owner="srv_...")
    message, run = await chats.send(session_id, "hello")   # stored, then acknowledged
    await chats.cancel(session_id)

A run is a row in ``runs`` (queued -> running -> complete | failed | cancelled, or retrying
while a retry waits in ``schedules``). The user message is committed before :meth:`send`
returns; the request then goes to the session's kernel over its link (``chat`` frame), and is
sent again whenever the kernel's link comes back before the kernel said ``run_started``. A
kernel process that dies mid-run (a new link epoch, a dead kernel, or an expired heartbeat)
interrupts the run: its streaming messages are marked errored and the run is retried with
backoff (transient) or failed (permanent). The kernel resumes from the stored history: every
completed step is already in the ``messages`` table.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from think_kernel.agent.events import TaskEvent
from think_kernel.store import new_id

if TYPE_CHECKING:
    from think_kernel.store import Store

    from .hub import Hub
    from .link import KernelInfo, KernelLinks
    from .pipeline import EventPipeline

log = logging.getLogger(__name__)


class SessionNotFound(KeyError):
    """No such chat session."""


@dataclass
class RetryPolicy:
    """Backoff delays in seconds (``len`` = retries after the first attempt)."""

    delays: list[float] = field(default_factory=lambda: [2.0, 4.0, 8.0])

    def delay(self, attempt: int) -> float | None:
        """Seconds before retry number ``attempt`` (1-based), or None when out of retries."""
        return self.delays[attempt - 1] if 0 < attempt <= len(self.delays) else None


@dataclass
class _Run:
    id: str
    session_id: str
    message_id: str
    content: str
    context: str
    attempt: int = 0
    kernel_id: str | None = None
    epoch: str | None = None  # the kernel process that said run_started
    delivered: bool = False  # the chat frame went out on a live link
    done: asyncio.Event = field(default_factory=asyncio.Event)


class ChatSessions:
    """Kernel-per-session routing, run bookkeeping and retries."""

    def __init__(
        self,
        store: Store,
        kernel_manager: Any,
        links: KernelLinks,
        pipeline: EventPipeline,
        hub: Hub,
        *,
        owner: str,
        policy: RetryPolicy,
        kernel_name: str = "think",
        kernel_env: Callable[[str], dict[str, str]] = lambda session_id: {},
        start_timeout: float = 60.0,
        cancel_timeout: float = 1.0,
    ) -> None:
        self.store = store
        self.kernel_manager = kernel_manager
        self.links = links
        self.pipeline = pipeline
        self.hub = hub
        self.owner = owner
        self.policy = policy
        self.kernel_name = kernel_name
        self.kernel_env = kernel_env
        self.start_timeout = start_timeout
        self.cancel_timeout = cancel_timeout
        self.kernels: dict[str, str] = {}  # session id -> kernel id
        self.runs: dict[str, _Run] = {}  # active runs this server drives
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.wake_scheduler: Callable[[], None] = lambda: None
        links.item_listeners.append(self._on_item)
        links.connect_listeners.append(self._on_connect)

    # -- API ---------------------------------------------------------------------------------

    def session_of(self, kernel_id: str) -> str | None:
        """The chat session a kernel serves, if any."""
        for sid, kid in self.kernels.items():
            if kid == kernel_id:
                return sid
        return None

    def active(self, session_id: str) -> _Run | None:
        """The run in flight in a session (this server's view)."""
        for run in self.runs.values():
            if run.session_id == session_id:
                return run
        return None

    async def send(
        self,
        session_id: str,
        content: str,
        context: dict[str, Any] | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Store the user message (with its attachments) and a queued run, start the run;
        return both rows."""
        if await self.store.get_session(session_id) is None:
            raise SessionNotFound(session_id)
        extra = {"attachments": attachments} if attachments else {}
        message = await self.store.add_message(session_id, "user", content, **extra)
        run_row = await self.store.create_run(new_id("r_"), session_id, message["id"], self.owner)
        await self.store.update_session(session_id, status="running")
        ctx = json.dumps(context, indent=1, default=str) if context else ""
        run = _Run(run_row["id"], session_id, message["id"], content, ctx)
        self.runs[run.id] = run
        # Every tab shows the new user message at once (not only the one that sent it).
        await self.pipeline.emit(session_id, {"type": "message", "message": message})
        await self._task_event(run, "queued", "")
        self._spawn(self._deliver(run))
        return message, run_row

    async def cancel(self, session_id: str) -> dict[str, Any] | None:
        """Cancel the session's run; returns within ``cancel_timeout`` seconds."""
        run = self.active(session_id)
        if run is None:
            return None
        if run.kernel_id is not None:
            self.links.send(run.kernel_id, {"type": "cancel", "run_id": run.id})
        try:
            await asyncio.wait_for(run.done.wait(), self.cancel_timeout)
        except TimeoutError:
            # The kernel did not confirm in time: the run is cancelled for the user anyway,
            # and a late run_end from the kernel is ignored.
            await self._finish(run, "cancelled", "cancelled (kernel did not confirm)")
        return await self.store.get_run(run.id)

    async def deliver_approval(self, session_id: str, frame: dict[str, Any]) -> bool:
        """Send an approval decision to the session's kernel (if it has one)."""
        kid = self.kernels.get(session_id)
        return kid is not None and self.links.send(kid, frame)

    async def retry(self, run_id: str) -> None:
        """Run a retrying run again (called by the scheduler when its backoff is over)."""
        row = await self.store.get_run(run_id)
        if row is None or row["status"] != "retrying":
            return
        message = await self.store.get_message(row["message_id"])
        if message is None:  # truncated away while waiting
            await self.store.update_run(run_id, status="cancelled", error="message deleted")
            return
        run = self.runs.get(run_id) or _Run(
            run_id, row["session_id"], row["message_id"], message["content"], ""
        )
        if message.get("content_blob"):
            run.content = await self.store.message_content(message)
        run.attempt = row["attempt"]
        run.epoch = None
        run.delivered = False
        self.runs[run_id] = run
        await self.store.update_run(
            run_id, status="queued", owner=self.owner, heartbeat_at=time.time()
        )
        await self.store.update_session(run.session_id, status="running")
        self._spawn(self._deliver(run))

    async def interrupt(self, run_id: str, reason: str, transient: bool = True) -> None:
        """A run lost its kernel: mark its stream errored, then retry or fail it."""
        row = await self.store.get_run(run_id)
        if row is None or row["status"] not in ("queued", "running"):
            return
        run = self.runs.pop(run_id, None)
        message = await self.store.get_message(row["message_id"])
        if message is not None:
            await self.store.interrupt_messages(row["session_id"], message["seq"], reason)
        self.hub.clear(row["session_id"])
        attempt = int(row["attempt"]) + 1
        delay = self.policy.delay(attempt) if transient else None
        probe = run or _Run(run_id, row["session_id"], row["message_id"], "", "")
        if delay is None:
            await self.store.update_run(run_id, status="failed", error=reason, attempt=attempt)
            await self.store.update_session(row["session_id"], status="idle")
            await self._task_event(probe, "failed", reason, attempt)
            probe.done.set()
            return
        await self.store.update_run(run_id, status="retrying", error=reason, attempt=attempt)
        await self.store.add_schedule(
            "run_retry", time.time() + delay, {"run_id": run_id}, row["session_id"]
        )
        self.wake_scheduler()
        await self._task_event(probe, "retrying", f"{reason}; retry in {delay:g} s", attempt)

    async def forget(self, session_id: str) -> None:
        """Cancel the session's run and shut its kernel down (the session is being deleted)."""
        if self.active(session_id) is not None:
            await self.cancel(session_id)
        kid = self.kernels.pop(session_id, None)
        if kid is not None:
            try:
                await self.kernel_manager.shutdown_kernel(kid, now=True)
            except Exception:  # already gone
                log.debug("kernel %s did not shut down cleanly", kid, exc_info=True)

    async def close(self) -> None:
        """Stop background deliveries."""
        for task in list(self._tasks):
            task.cancel()

    # -- kernels -----------------------------------------------------------------------------

    async def ensure_kernel(self, session_id: str) -> str:
        """The session's live think kernel, started (or restarted) if needed."""
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            kid = self.kernels.get(session_id)
            if kid is not None and await self._alive(kid):
                return kid
            if kid is not None:
                self.kernels.pop(session_id, None)
                try:
                    await self.kernel_manager.shutdown_kernel(kid, now=True)
                except Exception:  # already gone
                    log.debug("dead kernel %s did not shut down cleanly", kid, exc_info=True)
            # Chat kernels start at the server root: workspace paths and the default store
            # location (<root>/.think/think.db) then agree with the server's.
            env = {**os.environ, **self.kernel_env(session_id)}
            kid = await self.kernel_manager.start_kernel(
                kernel_name=self.kernel_name, path="", env=env
            )
            self.kernels[session_id] = kid
            return str(kid)

    async def _alive(self, kernel_id: str) -> bool:
        try:
            kernel = self.kernel_manager.get_kernel(kernel_id)
        except Exception:  # KeyError, or jupyter_server's HTTPError(404)
            return False
        try:
            return bool(await kernel.is_alive())
        except Exception:
            return False

    async def kernel_alive(self, kernel_id: str) -> bool:
        """Whether the kernel process is still running."""
        return await self._alive(kernel_id)

    # -- delivery ----------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _chat_frame(self, run: _Run) -> dict[str, Any]:
        return {
            "type": "chat",
            "run_id": run.id,
            "session_id": run.session_id,
            "message_id": run.message_id,
            "content": run.content,
            "context": run.context,
        }

    async def _deliver(self, run: _Run) -> None:
        try:
            kid = await self.ensure_kernel(run.session_id)
            run.kernel_id = kid
            await self.store.update_run(run.id, kernel_id=kid, status="running")
            await asyncio.wait_for(self.links.wait(kid), self.start_timeout)
            if run.id in self.runs and run.epoch is None:
                run.delivered = self.links.send(kid, self._chat_frame(run)) or run.delivered
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            await self.interrupt(run.id, "the think kernel did not connect in time")
        except Exception as e:
            permanent = type(e).__name__ in ("NoSuchKernel", "FileNotFoundError")
            log.warning("could not start a kernel for %s: %s", run.session_id, e)
            await self.interrupt(run.id, f"could not start a think kernel: {e}", not permanent)

    def _on_connect(self, info: KernelInfo, new_process: bool) -> None:
        for run in list(self.runs.values()):
            if run.kernel_id != info.kernel_id:
                continue
            if run.epoch is not None and run.epoch != info.epoch:
                self._spawn(self.interrupt(run.id, "the think kernel restarted mid-run"))
            elif run.epoch is None:
                run.delivered = self.links.send(info.kernel_id, self._chat_frame(run))

    def _on_item(self, info: KernelInfo, item: dict[str, Any]) -> None:
        run = self.runs.get(str(item.get("run_id") or ""))
        if run is None:
            return
        if item.get("kind") == "run_started":
            run.epoch = info.epoch
        elif item.get("kind") == "run_end":
            status = str(item.get("status") or "complete")
            error = str(item.get("error") or "")
            if status == "error" and item.get("retryable"):
                self._spawn(self.interrupt(run.id, error or "transient error"))
            else:
                self._spawn(self._finish(run, status, error))

    async def _finish(self, run: _Run, status: str, error: str) -> None:
        if self.runs.pop(run.id, None) is None:
            return
        final = {"complete": "complete", "cancelled": "cancelled"}.get(status, "failed")
        await self.store.update_run(run.id, status=final, error=error or None)
        await self.store.update_session(run.session_id, status="idle")
        self.hub.clear(run.session_id)
        kind = "complete" if final == "complete" else "failed"
        await self._task_event(run, kind, error or final, run.attempt)
        run.done.set()

    async def _task_event(self, run: _Run, kind: str, detail: str, attempt: int = 0) -> None:
        event = TaskEvent(kind=kind, task_id=run.id, detail=detail, attempt=attempt)  # type: ignore[arg-type]
        await self.pipeline.emit(run.session_id, dict(event.to_dict(), run_id=run.id))
