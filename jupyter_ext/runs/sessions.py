"""Chat sessions run in think kernels: one kernel per session, one run at a time.

    chats = ChatSessions(store, kernel_manager, links, pipeline, hub, policy, owner="srv_...")
    message, run = await chats.send(session_id, "hello")   # stored, then acknowledged
    await chats.send(session_id, "no, this", interrupt=True)  # "stop and send"
    await chats.cancel(session_id)

A run is a row in ``runs``: queued -> running -> complete | failed | cancelled, or retrying
while a retry waits in ``schedules``. A session has at most one active (running or retrying)
run; a message sent meanwhile is stored with status ``queued`` and its run starts when the
active one ends (the message then moves after that run's replies). ``interrupt=True`` cancels
the active and queued runs first.

Every attempt of a run has exactly one owner: the kernel process (link epoch) that said
``run_started`` for that attempt number. The ``chat`` frame carries the attempt; the kernel
drops a resend of the same attempt and restarts on a new one, and items of an old attempt
are ignored here. A run ends ``failed`` (with the error in its row, a ``task_failed`` event and
an error message in the chat) when the kernel reports an error its own model retries did not
cure, or when retries after lost kernels are spent. Loss of the owner (the kernel died,
restarted, lost the link, or stopped listing the run in its ``pong``) interrupts the attempt:
streaming messages are marked errored and the run is retried with backoff (the kernel resumes
from the stored history: every completed step is already in ``messages``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from think_kernel.store import new_id
from think_kernel.waits import wait_for
from think_kernel.wire.base import Frame
from think_kernel.wire.link import CancelFrame, ReleaseFrame

from ..approvals import reject_pending
from .budget import MemoryBudget
from .chatkernels import ChatKernels
from .delivery import Delivery
from .owners import Owners
from .records import record_dropped, record_end, task_event
from .run import ChatRun, RetryPolicy, SessionNotFound

if TYPE_CHECKING:
    from think_kernel.store import Store

    from ..hub import Hub
    from ..link import KernelInfo, KernelLinks
    from ..pipeline import EventPipeline


class ChatSessions:
    """Kernel-per-session routing, the per-session run queue, attempts and retries."""

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
        kernel_env: Callable[[], dict[str, str]] = dict,
        start_timeout: float = 60.0,
        cancel_timeout: float = 1.0,
        pool_size: int = 0,
        idle_timeout: float = 0.0,
        session_manager: Any = None,
        sessions_per_kernel: int = 1,
        budget: MemoryBudget | None = None,
    ) -> None:
        self.store = store
        self.pool = ChatKernels(
            kernel_manager,
            kernel_name,
            kernel_env,
            pool_size=pool_size,
            idle_timeout=idle_timeout,
            start_timeout=start_timeout,
            session_manager=session_manager,
            title_of=self._title_of,
            linked=links.wait,
            busy=self.busy,
            sessions_per_kernel=sessions_per_kernel,
            release=lambda kid, sid: links.send(kid, ReleaseFrame(sid)),
            budget=budget,
        )
        self.links = links
        self.pipeline = pipeline
        self.hub = hub
        self.owner = owner
        self.policy = policy
        self.start_timeout = start_timeout
        self.cancel_timeout = cancel_timeout
        self.runs: dict[str, ChatRun] = {}  # every unfinished run this server drives
        self.holds: Counter[str] = Counter()  # sessions whose kernel serves an MCP call
        self._send_locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.owners = Owners(links.send)  # which attempts each kernel says it owns
        self.delivery = Delivery(
            store,
            self.pool,
            links,
            pipeline,
            self.owners,
            start_timeout=start_timeout,
            current=self._wanted,
            interrupt=self.interrupt,
        )
        self._closing = False
        self.wake_scheduler: Callable[[], None] = lambda: None
        links.item_listeners.append(self._on_item)
        links.connect_listeners.append(self._on_connect)
        links.pong_listeners.append(self.owners.on_pong)

    # -- API ---------------------------------------------------------------------------------

    def session_of(self, kernel_id: str) -> str | None:
        """The chat session a kernel serves, if any."""
        return self.pool.session_of(kernel_id)

    def active(self, session_id: str) -> ChatRun | None:
        """The run a session is busy with (running or retrying), in this server's view."""
        for run in self.runs.values():
            if run.session_id == session_id and run.state != "queued":
                return run
        return None

    def queued(self, session_id: str) -> list[ChatRun]:
        """Runs waiting behind the active one, oldest first."""
        return [r for r in self.runs.values() if r.session_id == session_id and r.state == "queued"]

    def busy(self, session_id: str) -> bool:
        """Whether the session has a run that is not finished (active or queued), or its
        kernel serves a call (an MCP client's)."""
        return self.holds[session_id] > 0 or any(
            r.session_id == session_id for r in self.runs.values()
        )

    @contextlib.contextmanager
    def hold(self, session_id: str) -> Iterator[None]:
        """The session's kernel is in use outside a run (an MCP call): it is not culled, and
        its idle time starts again when the last hold ends."""
        self.holds[session_id] += 1
        try:
            yield
        finally:
            self.holds[session_id] -= 1
            if self.holds[session_id] <= 0:
                del self.holds[session_id]
            self.pool.touch(session_id)

    async def send(
        self,
        session_id: str,
        content: str,
        context: dict[str, Any] | None = None,
        attachments: list[dict[str, Any]] | None = None,
        *,
        interrupt: bool = False,
        message_id: str | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Store the user message (with its attachments) and its run; start it, or queue it
        behind the active run.

        ``interrupt=True`` ("stop and send") cancels the session's runs first. With a
        ``message_id`` the send is idempotent (a reminder's firing): a message of
        that id that already has a run is returned as it is, one without a run gets one.
        """
        if await self.store.get_session(session_id) is None:
            raise SessionNotFound(session_id)
        if interrupt:
            await self.cancel(session_id)
        async with self._queue_lock(session_id):
            existing = await self.store.get_message(message_id) if message_id else None
            if existing is not None:
                done = await self.store.run_of_message(existing["id"])
                if done is not None:
                    return existing, done
            # A run another (dead) server left behind also counts until recovery ends it.
            waits = self.busy(session_id) or await self.store.active_run(session_id) is not None
            status = "queued" if waits else "complete"
            if existing is not None:
                message = existing  # posted by an attempt that died before its run was stored
                if message.get("status") != status:
                    await self.store.update_message(message["id"], status=status)
                    message = {**message, "status": status}
            else:
                extra: dict[str, Any] = {"attachments": attachments} if attachments else {}
                if message_id:
                    extra["id"] = message_id
                message = await self.store.add_message(
                    session_id, "user", content, status=status, **extra
                )
            row = await self.store.create_run(new_id("r_"), session_id, message["id"], self.owner)
            ctx = json.dumps(context, indent=1, default=str) if context else ""
            run = ChatRun(row["id"], session_id, message["id"], content, ctx, queued_message=waits)
            run.state = "queued" if waits else "running"  # taken before the lock is released
            self.runs[run.id] = run
        await self.store.update_session(session_id, status="running")
        # Every tab shows the new user message at once (not only the one that sent it).
        await self.pipeline.emit(session_id, {"type": "message", "message": message})
        detail = ""
        if waits:
            ahead = len(self.queued(session_id)) - 1
            detail = "queued: starts when the current request ends"
            detail += f" ({ahead} more before it)" if ahead > 0 else ""
        await task_event(self.pipeline, run, "queued", detail)
        if not waits:
            await self._start(run)
        return message, row

    def _queue_lock(self, session_id: str) -> asyncio.Lock:
        """Held while a message decides to wait and its run is registered, and while the end
        of a run looks for the next one: a run that ended between the two would find nothing
        to start, and the message would stay queued for good."""
        return self._send_locks.setdefault(session_id, asyncio.Lock())

    async def cancel(self, session_id: str) -> dict[str, Any] | None:
        """Cancel the session's active run and its queued ones; returns within
        ``cancel_timeout`` seconds with the active run's row (or the last queued one's)."""
        last: dict[str, Any] | None = None
        for waiting in self.queued(session_id):
            await self._drop_queued(waiting)
            last = await self.store.get_run(waiting.id)
        run = self.active(session_id)
        if run is None:
            return last
        # A cancelled run's pending approvals count as rejected; the kernel does
        # the same when its run stops, whichever comes first wins.
        await reject_pending(self.store, self.pipeline, session_id, "the run was cancelled")
        if run.state == "retrying":
            await self._finish(run, "cancelled", "cancelled")
        else:
            if run.kernel_id is not None:
                self.links.send(run.kernel_id, CancelFrame(run.id))
            try:
                await wait_for(run.done.wait(), self.cancel_timeout)
            except TimeoutError:
                # The kernel did not confirm in time: the run is cancelled for the user anyway,
                # and a late run_end from the kernel is ignored.
                await self._finish(run, "cancelled", "cancelled (kernel did not confirm)")
        return await self.store.get_run(run.id)

    async def deliver_approval(self, session_id: str, frame: Frame | dict[str, Any]) -> bool:
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
            run = self.runs.get(run_id)
            if run is not None:
                await self._finish(run, "cancelled", "message deleted")
            else:
                await self.store.update_run(run_id, status="cancelled", error="message deleted")
            return
        run = self.runs.get(run_id) or ChatRun(
            run_id, row["session_id"], row["message_id"], message["content"], ""
        )
        if message.get("content_blob"):
            run.content = await self.store.message_content(message)
        run.attempt = int(row["attempt"])
        run.state, run.epoch, run.delivered = "running", None, False
        # Not the dead kernel's id: until the delivery has a live kernel, recovery must see a
        # run that is starting, not one whose kernel died (that would interrupt it again).
        run.kernel_id = None
        self.runs[run_id] = run
        await self.store.update_run(
            run_id, status="running", owner=self.owner, heartbeat_at=time.time(), epoch=None
        )
        await self.store.update_session(run.session_id, status="running")
        self._spawn(self.delivery.deliver(run))

    async def interrupt(self, run_id: str, reason: str, transient: bool = True) -> None:
        """An attempt lost its owner: mark its stream errored, then retry or fail the run."""
        row = await self.store.get_run(run_id)
        if row is None or row["status"] not in ("queued", "running"):
            return
        run = self.runs.get(run_id) or ChatRun(run_id, row["session_id"], row["message_id"], "", "")
        run.attempt = int(row["attempt"])
        self.runs[run_id] = run
        message = await self.store.get_message(row["message_id"])
        if message is not None:
            await self.store.interrupt_messages(row["session_id"], message["seq"], reason)
        self.hub.clear(row["session_id"])
        attempt = run.attempt + 1
        delay = self.policy.delay(attempt) if transient else None
        if delay is None:
            spent = f"{reason} (after {run.attempt + 1} attempts)" if transient else reason
            await self._finish(run, "failed", spent)
            return
        run.attempt, run.state, run.epoch, run.delivered = attempt, "retrying", None, False
        run.missing_since = None
        await self.store.update_run(
            run_id, status="retrying", error=reason, attempt=attempt, epoch=None
        )
        await self.store.add_schedule(
            "run_retry", time.time() + delay, {"run_id": run_id}, row["session_id"]
        )
        self.wake_scheduler()
        await task_event(self.pipeline, run, "retrying", f"{reason}; retry in {delay:g} s", attempt)

    async def adopt(self, row: dict[str, Any]) -> None:
        """Take over a run a dead server left behind (called by recovery)."""
        await self.store.update_run(row["id"], owner=self.owner, heartbeat_at=time.time())
        if row["status"] == "running":
            await self.interrupt(row["id"], "the server stopped mid-run")
        elif row["status"] == "retrying":
            # Its schedule's claim by the dead server is taken over by the scheduler too
            # (at least once); retry() runs a retrying run once, whichever comes first.
            await self.retry(row["id"])
        elif row["status"] == "queued" and row["id"] not in self.runs:
            message = await self.store.get_message(row["message_id"])
            if message is None:
                await self.store.update_run(row["id"], status="cancelled", error="message deleted")
                return
            content = await self.store.message_content(message)
            run = ChatRun(
                row["id"],
                row["session_id"],
                row["message_id"],
                content,
                "",
                queued_message=message.get("status") == "queued",
            )
            self.runs[run.id] = run
            await self._start_next(run.session_id)

    def lost_owner(self, run: ChatRun, grace: float) -> bool:
        """Whether the run's kernel stopped listing its attempt for ``grace`` seconds."""
        return self.owners.lost(run, grace)

    def ping(self, kernel_id: str) -> None:
        """Ask a kernel which runs it owns (answered by a ``pong`` listing them)."""
        self.owners.ping(kernel_id)

    async def forget(self, session_id: str) -> None:
        """Cancel the session's runs and shut its kernel down (the session is being deleted)."""
        if self.busy(session_id):
            await self.cancel(session_id)
        await self.pool.forget(session_id)

    async def close(self) -> None:
        """Stop background deliveries and the kernel pool (the server stops).

        A stop is not a cancel: the runs stay in the store as they are (running, their
        approvals pending) and the next start resumes them, as after a crash. What the
        kernels say while they shut down no longer changes them here.
        """
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await self.pool.close()

    async def _title_of(self, session_id: str) -> str:
        session = await self.store.get_session(session_id)
        return str((session or {}).get("title") or "")

    # -- kernels -----------------------------------------------------------------------------

    @property
    def kernels(self) -> dict[str, str]:
        """Session id -> the id of its think kernel."""
        return self.pool.kernels

    async def ensure_kernel(self, session_id: str) -> str:
        """The session's live think kernel, started (or restarted) if needed."""
        return await self.pool.ensure(session_id)

    async def kernel_alive(self, kernel_id: str) -> bool:
        """Whether the kernel process is still running."""
        return await self.pool.alive(kernel_id)

    # -- starting and delivering ------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _start(self, run: ChatRun) -> None:
        """Make a queued run the session's active one and send it to the kernel."""
        run.state = "running"
        if run.queued_message:
            run.queued_message = False
            message = await self.store.start_queued_message(run.message_id)
            if message is not None:
                await self.pipeline.emit(run.session_id, {"type": "message", "message": message})
        await self.store.update_run(
            run.id, status="running", owner=self.owner, heartbeat_at=time.time()
        )
        await self.store.update_session(run.session_id, status="running")
        self._spawn(self.delivery.deliver(run))

    async def _start_next(self, session_id: str) -> None:
        async with self._queue_lock(session_id):
            if self.active(session_id) is not None:
                return
            waiting = self.queued(session_id)
            if waiting:
                await self._start(waiting[0])
            elif await self.store.active_run(session_id) is None:
                await self.store.update_session(session_id, status="idle")

    async def _drop_queued(self, run: ChatRun) -> None:
        if self.runs.pop(run.id, None) is None:
            return
        await record_dropped(self.store, self.pipeline, run)
        run.done.set()

    def _wanted(self, run: ChatRun) -> bool:
        """Whether a delivered attempt is still the one to run (no cancel, no newer one)."""
        return self.runs.get(run.id) is run and run.state == "running" and run.epoch is None

    # -- what kernels say --------------------------------------------------------------------

    def _on_connect(self, info: KernelInfo, new_process: bool) -> None:
        if new_process:
            # A chat kernel links once before any chat takes it: a new process of a kernel
            # that serves chats is a restart (jupyter_server's restarter brings a dead kernel
            # back under the same id), and its chats' warm workers went with the old one.
            self.pool.restarted.update(self.pool.sessions_on(info.kernel_id))
        for run in list(self.runs.values()):
            if run.kernel_id != info.kernel_id or run.state != "running":
                continue
            if run.epoch is not None and run.epoch != info.epoch:
                self._spawn(self.interrupt(run.id, "the think kernel restarted mid-run"))
            elif run.epoch is None and not run.delivering:
                self.delivery.send(info.kernel_id, run)  # the kernel drops it if it has it

    def _on_item(self, info: KernelInfo, item: dict[str, Any]) -> None:
        if self._closing:
            return
        if item.get("kind") == "prepared":
            self.pool.prepared.add(info.kernel_id)
            return
        run = self.runs.get(str(item.get("run_id") or ""))
        if run is None or run.state != "running":
            return
        attempt = item.get("attempt")
        if isinstance(attempt, int) and attempt != run.attempt:
            return  # an attempt that was superseded: it no longer owns the run
        if item.get("kind") == "run_started":
            run.epoch = info.epoch
            self._spawn(self.store.update_run(run.id, epoch=info.epoch))
        elif item.get("kind") == "run_end":
            if run.epoch is not None and run.epoch != info.epoch:
                return  # not the owner of this attempt
            status = str(item.get("status") or "complete")
            # The kernel's model loop already retried transient errors: an error is final.
            self._spawn(self._finish(run, status, str(item.get("error") or "")))

    # -- ending ------------------------------------------------------------------------------

    async def _finish(self, run: ChatRun, status: str, error: str) -> None:
        if self.runs.pop(run.id, None) is None:
            return
        await record_end(self.store, self.pipeline, self.hub, run, status, error)
        run.done.set()
        self.pool.touch(run.session_id)  # idle time counts from the end of the last run
        await self._start_next(run.session_id)
