"""The work the server hands a kernel over its link: chat runs, MCP tool calls, approvals.

:class:`~think_kernel.kernel.link.KernelLink` owns one and routes the ``chat``, ``cancel``,
``approval``, ``tool`` and ``tool_cancel`` frames to it; what the work produces goes back
through ``push`` (numbered outbox items):

    runs = LinkRuns(link.push, link.runtime, link.learn_session)
    runs.on_chat(ChatFrame("r1", attempt=1, content="hi"))  # run_started ... run_end items

``runtime(session_id)`` gives the runtime that serves a session. A kernel that hosts several
chat sessions (:mod:`.host`) passes ``runtimes`` too: its sessions' runs then go on side by
side (one at a time per session), and an approval goes to the runtime that asked for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from ..apps.registry import RUN as APP_RUN
from ..wire.link import (
    ApprovalFrame,
    CancelFrame,
    ChatFrame,
    JobsStopFrame,
    ToolCancelFrame,
    ToolFrame,
)

log = logging.getLogger(__name__)
# MCP call ids remembered to drop a resend (the oldest are forgotten past this many).
MAX_TOOL_IDS = 4096


class LinkRuns:
    """The chat runs and MCP calls of one kernel process, keyed by the server's ids."""

    def __init__(
        self,
        push: Callable[[dict[str, Any]], None],
        runtime: Callable[[str | None], Awaitable[Any]],
        learn_session: Callable[[str], None],
        runtimes: Callable[[], list[Any]] | None = None,
    ) -> None:
        self._push = push
        self._runtime = runtime
        self._learn_session = learn_session
        self._runtimes = runtimes  # a hosting kernel's runtimes (None: one runtime)
        self._runs: dict[str, asyncio.Task[None]] = {}
        # run id -> the attempt this process runs (or ran): a resend of it is dropped, a
        # higher attempt (the server retried the run) supersedes it.
        self._attempts: dict[str, int] = {}
        self._run_lock = asyncio.Lock()
        self._session_locks: dict[str, asyncio.Lock] = {}  # a host's, per session
        #: The chat run whose events the runtime emits now (None between runs).
        self.current: str | None = None
        self._current: dict[str, str] = {}  # a host's: session id -> its run now
        # MCP calls (call id -> task), and the ids already taken (a resend is dropped).
        self._tools: dict[str, asyncio.Task[None]] = {}
        self._tool_ids: OrderedDict[str, None] = OrderedDict()
        self._busy = 0
        self._stops: set[asyncio.Task[None]] = set()  # jobs being stopped
        #: Called with True when a chat run starts and False when it ends (the kernel
        #: publishes busy / idle, so jupyter_server reports the kernel's real state).
        self.on_run: Callable[[bool], None] | None = None

    def on_jobs_stop(self, frame: JobsStopFrame) -> None:
        """Stop a session's background jobs (one, or all): a person's Stop in the sidebar."""
        task = asyncio.ensure_future(self._stop_jobs(frame))
        self._stops.add(task)
        task.add_done_callback(self._stops.discard)

    async def _stop_jobs(self, frame: JobsStopFrame) -> None:
        try:
            jobs = (await self._runtime(frame.session_id)).jobs
            if frame.name:
                if jobs.get(frame.session_id, frame.name) is not None:
                    await jobs.stop(frame.session_id, frame.name, "stopped from the sidebar")
            else:
                await jobs.stop_all(frame.session_id, "stopped from the sidebar (Stop all)")
        except Exception:
            log.exception("stopping jobs failed")

    def current_of(self, session_id: str | None) -> str | None:
        """The chat run whose events the session's runtime emits now (None between runs)."""
        if self._runtimes is None:
            return self.current
        return self._current.get(session_id or "")

    def _lock_of(self, session_id: str) -> asyncio.Lock:
        # One runtime runs one request at a time; a host's sessions each have their own.
        if self._runtimes is None:
            return self._run_lock
        return self._session_locks.setdefault(session_id, asyncio.Lock())

    def tasks(self) -> list[asyncio.Task[None]]:
        """Every run and approval task not yet done."""
        return [task for task in self._runs.values() if not task.done()]

    def on_cancel(self, frame: CancelFrame) -> None:
        """Cancel a chat run (unknown ids are ignored: the run may have ended)."""
        task = self._runs.get(frame.run_id)
        if task is not None:
            task.cancel()

    def on_approval(self, frame: ApprovalFrame) -> None:
        """Hand a person's decision to the runtime (in a task: the runtime may be created)."""
        self._spawn(self._approval(frame))

    def on_tool_cancel(self, frame: ToolCancelFrame) -> None:
        """Cancel an MCP tool call."""
        call = self._tools.get(frame.call_id)
        if call is not None:
            call.cancel()

    def spawn(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` as work of this link (a close cancels and waits for it)."""
        self._spawn(coro)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._runs[f"_{id(task)}"] = task
        task.add_done_callback(lambda t: self._runs.pop(f"_{id(t)}", None))

    def owned_runs(self) -> list[list[Any]]:
        """``[run_id, attempt]`` of every chat run this process is running."""
        return [[rid, self._attempts.get(rid, 0)] for rid in self._runs if not rid.startswith("_")]

    def cancel_runs(self) -> int:
        """Cancel every chat run (a kernel interrupt); returns how many were running."""
        tasks = [t for rid, t in self._runs.items() if not rid.startswith("_") and not t.done()]
        for task in tasks:
            task.cancel()
        return len(tasks)

    def on_chat(self, frame: ChatFrame) -> None:
        """Start one attempt of a chat run (a resend is dropped, a higher attempt replaces)."""
        run_id, attempt = frame.run_id, frame.attempt
        if not run_id or self._attempts.get(run_id, -1) >= attempt:
            return  # a resend of an attempt this process already has (or an older one)
        self._attempts[run_id] = attempt
        if frame.session_id:
            # A kernel of the server's pool learns the session it serves from its first chat.
            self._learn_session(frame.session_id)
        old = self._runs.get(run_id)
        if old is not None:
            old.cancel()  # superseded: the server gave up on that attempt
        task = asyncio.ensure_future(self._run(frame, attempt, old))
        self._runs[run_id] = task

        def forget(t: asyncio.Task[None]) -> None:
            if self._runs.get(run_id) is t:
                del self._runs[run_id]

        task.add_done_callback(forget)

    async def _run(
        self, frame: ChatFrame, attempt: int, previous: asyncio.Task[None] | None
    ) -> None:
        run_id, session_id = frame.run_id, frame.session_id
        status, error, retryable = "complete", "", False
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        ids = {"run_id": run_id, "session_id": session_id, "attempt": attempt}
        APP_RUN.set(run_id)  # the apps this run starts are its own: its Stop ends them
        rt: Any = None
        async with self._lock_of(session_id):
            self._push({"kind": "run_started", **ids})
            self.current = run_id
            self._current[session_id] = run_id
            self._run_state(True)
            try:
                rt = await self._runtime(session_id)
                if session_id and rt.session_id != session_id:
                    await rt.switch_session(session_id)
                async for event in rt.run(
                    frame.content, context=frame.context, user_message_id=frame.message_id
                ):
                    if getattr(event, "type", "") == "error":
                        status, error = "error", str(getattr(event, "message", ""))
                        retryable = bool(getattr(event, "retryable", False))
            except asyncio.CancelledError:
                status, error = "cancelled", "cancelled"
                if rt is not None:  # before run_end: the server hears of them first
                    with contextlib.suppress(Exception):
                        await asyncio.shield(rt.apps.stop_run(run_id))
                raise
            except Exception as e:
                log.exception("chat run %s failed", run_id)
                status, error = "error", f"{type(e).__name__}: {e}"
            finally:
                self.current = None
                self._current.pop(session_id, None)
                self._run_state(False)
                end = {"status": status, "error": error, "retryable": retryable}
                self._push({"kind": "run_end", **ids, **end})

    def _run_state(self, busy: bool) -> None:
        # Counted: chat runs and MCP calls overlap; the kernel is idle when the last ends.
        self._busy += 1 if busy else -1
        if self.on_run is not None and self._busy == (1 if busy else 0):
            try:
                self.on_run(busy)
            except Exception:
                log.debug("run state callback failed", exc_info=True)

    def on_tool(self, frame: ToolFrame) -> None:
        """Start one MCP tool call (a resend of the same call id is dropped)."""
        call_id = frame.call_id
        if not call_id or call_id in self._tool_ids:
            return  # a resend: the call runs, or its result waits in the outbox
        self._tool_ids[call_id] = None
        while len(self._tool_ids) > MAX_TOOL_IDS:
            self._tool_ids.popitem(last=False)
        if frame.session_id:
            self._learn_session(frame.session_id)  # a pool kernel learns its session
        task = asyncio.ensure_future(self._run_tool(frame, call_id))
        self._tools[call_id] = task
        task.add_done_callback(lambda t: self._tools.pop(call_id, None))

    async def _run_tool(self, frame: ToolFrame, call_id: str) -> None:
        from ..mcp.served import serve_call

        session_id = frame.session_id
        output: dict[str, Any] = {}
        self._run_state(True)
        try:
            rt = await self._runtime(session_id)
            if session_id and rt.session_id != session_id:
                await rt.switch_session(session_id)
            output = await serve_call(rt, frame.name, frame.arguments, call_id, frame.client)
        except asyncio.CancelledError:
            output = {"text": "Error: the call was cancelled", "ok": False, "error": "cancelled"}
            raise
        except Exception as e:
            log.exception("MCP call %s failed", call_id)
            msg = f"{type(e).__name__}: {e}"
            output = {"text": f"Error: {msg}", "ok": False, "error": msg}
        finally:
            self._run_state(False)
            self._push(
                {"kind": "tool_result", "call_id": call_id, "session_id": session_id,
                 "output": output}
            )  # fmt: skip

    async def _approval(self, frame: ApprovalFrame) -> None:
        if self._runtimes is not None:
            # A host: the approval belongs to the one session whose runtime asked for it.
            for rt in self._runtimes():
                if await rt.resolve_approval(frame.approval_id, frame.to_dict()):
                    return
            return
        rt = await self._runtime(None)
        resolve: Callable[..., Any] | None = getattr(rt, "resolve_approval", None)
        if resolve is None:
            log.warning("think link: this runtime cannot take approval decisions")
            return
        res = resolve(frame.approval_id, frame.to_dict())
        if inspect.isawaitable(res):
            await res
