"""The tasks and subagents of one runtime: a request's root task, delegation, waiting, cancel.

    subagents = Subagents(runtime, board, TasksConfig(), emit=runtime.emit)
    root = await subagents.begin(session_id, "analyse the logs", message_id)
    job = await subagents.delegate("t_1a2b", "count the 5xx per hour")   # returns at once
    await subagents.wait()                  # results of this request's subagents
    await subagents.end("complete")         # unfinished subagents are cancelled

Each subagent is an asyncio task owned here, with a timeout; while any runs, a heartbeat
refreshes their rows, and with a server (``durable()``) each spawn also writes a durable
``subagent_check`` schedule the server runs even if this kernel dies (see :mod:`.monitor`).
A kernel starting on a session recovers what a dead one left (:meth:`Subagents.recover`).
Ending a request, cancelling it or closing the runtime cancels its subagents; their
sandboxed processes are killed with them (their own worker, nobody else's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..agent.events import (
    Event,
    SubagentComplete,
    SubagentError,
    SubagentSpawned,
)
from ..agents import UnknownAgentType
from ..tasks.board import TaskBoard
from ..tasks.config import TasksConfig
from ..tasks.graph import FINAL, TaskError
from .handle import Handle, RequestEnd
from .monitor import Checks, mark_lost, owner_alive, this_owner, verdict
from .runner import Host, Job, Outcome, run_subagent
from .stream import SubagentStream

log = logging.getLogger(__name__)
Progress = Callable[[str], Awaitable[None]]


class Subagents:
    """Delegation for one runtime (see the module doc)."""

    def __init__(
        self,
        host: Host,
        board: TaskBoard,
        config: TasksConfig,
        *,
        emit: Callable[[Event], Any],
        durable: Callable[[], bool] = lambda: False,
    ) -> None:
        self.host = host
        self.board = board
        self.config = config
        self.emit = emit
        self.durable = durable
        self.owner = this_owner()
        self.root_id: str | None = None
        self.session_id = ""
        self.jobs: dict[str, Handle] = {}
        self._beat: asyncio.Task[None] | None = None

    # -- a request ---------------------------------------------------------------------------

    async def begin(
        self, session_id: str, request: str, message_id: str, new: bool = False
    ) -> dict[str, Any]:
        """Give a request its root task (started); ``new``: its message was never run."""
        root = await self.board.begin(session_id, request, message_id, new)
        self.root_id, self.session_id = root["id"], session_id
        return root

    @contextlib.asynccontextmanager
    async def request(
        self, session_id: str, request: str, message_id: str, new: bool = False
    ) -> AsyncIterator[RequestEnd]:
        """The scope of one request: its root task begins here; when the block ends (an
        answer, an error, a cancel) its subagents stop and its tasks end accordingly."""
        await self.begin(session_id, request, message_id, new)
        ending = RequestEnd()
        try:
            yield ending
        except (asyncio.CancelledError, GeneratorExit):
            ending.status, ending.reason = "cancelled", "the request was cancelled"
            raise
        except Exception as e:
            ending.status, ending.reason = "failed", f"{type(e).__name__}: {e}"
            raise
        finally:
            await asyncio.shield(self.end(ending.status, ending.reason))

    async def end(self, status: str, reason: str | None = None) -> None:
        """The request ended: cancel its subagents still running, then end its tasks."""
        root, self.root_id = self.root_id, None
        if root is None:
            return
        why = "the request ended before the subagent finished"
        await self.cancel_all(root, why if status == "complete" else reason or why)
        try:
            await self.board.end(root, status, reason)
        except TaskError:
            log.exception("could not end the tasks of %s", root)

    # -- delegation --------------------------------------------------------------------------

    async def delegate(
        self,
        task_ref: str,
        instructions: str,
        *,
        type: str = "code",
        timeout: float | None = None,
        message_id: str | None = None,
        agent: str = "",
    ) -> Handle:
        """Start a subagent on a task of this request (an id, or the title of a new subtask
        under the root), as the agent type ``agent`` ("" : the session's); returns at once.
        TaskError says why it cannot."""
        if self.root_id is None:
            raise TaskError("no request is running: subagents work on a request's tasks")
        if agent:
            try:
                self.host.agents.find(agent)
            except UnknownAgentType as e:
                raise TaskError(str(e)) from None
        running = [h for h in self.jobs.values() if not h.done.is_set()]
        if len(running) >= self.config.subagent_max_running:
            raise TaskError(
                f"{len(running)} subagents are running (at most "
                f"{self.config.subagent_max_running}): wait_for_subagents first"
            )
        task = await self._task(task_ref, type, message_id)
        if (task.get("subagent") or {}).get("status") == "running":
            raise TaskError(f"task {task['id']} already has a subagent working on it")
        if task["status"] == "pending":
            task = await self.board.start(task["id"])
        elif task["status"] != "in_progress":
            raise TaskError(f"task {task['id']} is {task['status']}: a subagent needs a ready one")
        limit = min(float(timeout or self.config.subagent_timeout), self.config.subagent_timeout)
        props = await self.host.props()
        model = self.host.model_name(props, "fast")
        now = time.time()
        await self.board.set_subagent(
            task["id"],
            subagent_status="running",
            subagent_model=model,
            subagent_owner=self.owner,
            subagent_started_at=now,
            subagent_ended_at=None,
            subagent_heartbeat_at=now,
            subagent_deadline=now + limit,
        )
        await self._send(SubagentSpawned(task["id"], task["title"], model))
        inputs = [
            t
            for t in await self.board.request_tasks(self.root_id)
            if t["id"] in task["dependencies"]
        ]
        job = Job(
            self.session_id,
            task,
            instructions,
            SubagentStream(task["id"], self._send),
            int(self.config.subagent_max_steps),
            inputs,
            agent=agent,
        )
        handle = Handle(job, self.root_id, model, now, now + limit)
        self.jobs[task["id"]] = handle
        if self.durable():
            await self._schedule_check(handle, limit)
        handle.runner = asyncio.ensure_future(self._run(handle, limit))
        self._heartbeat()
        return handle

    async def _task(self, ref: str, type: str, message_id: str | None) -> dict[str, Any]:
        assert self.root_id is not None
        found = await self.board.get(self.board.resolve(self.root_id, ref))
        if found is not None:
            mine = await self.board.request_tasks(self.root_id)
            if all(t["id"] != found["id"] for t in mine):
                raise TaskError(f"task {ref} belongs to an earlier request")
            return found
        if ref.strip().startswith("t_") and " " not in ref.strip():
            raise TaskError(f"no task {ref.strip()!r}: list_tasks shows this request's tasks")
        return await self.board.create(self.root_id, title=ref, type=type, message_id=message_id)

    async def _run(self, handle: Handle, limit: float) -> None:
        outcome = Outcome()
        try:
            async with asyncio.timeout(limit):
                outcome = await run_subagent(self.host, handle.job)
            code = "complete" if outcome.result is not None and not outcome.error else "error"
            message = outcome.error or ""
        except TimeoutError:
            code, message = "timeout", f"no result within its timeout of {limit:g} s"
        except asyncio.CancelledError:
            reason = handle.cancel_reason or "cancelled"
            await asyncio.shield(self._finish(handle, "cancelled", None, reason))
            raise
        except Exception as e:  # a bug must end this subagent, not the parent's run
            log.exception("subagent %s failed", handle.task_id)
            code, message = "error", f"{type(e).__name__}: {e}"
        await self._finish(handle, code, outcome.result, message)

    async def _finish(self, handle: Handle, code: str, result: str | None, message: str) -> None:
        handle.code, handle.result, handle.error = code, result, message
        handle.ended = time.time()
        task_id = handle.task_id
        try:
            if handle.job.worker is not None:
                await handle.job.worker.close()  # its processes and warm worker go with it
            won = await self.board.set_subagent(
                task_id, when_status="running", subagent_status=code, subagent_ended_at=handle.ended
            )
            if won:
                await self._end_task(task_id, code, result, message)
                if code == "complete":
                    await self._send(SubagentComplete(task_id, result or ""))
                else:
                    await self._send(SubagentError(task_id, message, code))
        except Exception:
            log.exception("could not record the end of subagent %s", task_id)
        finally:
            handle.done.set()

    async def _end_task(self, task_id: str, code: str, result: str | None, message: str) -> None:
        current = await self.board.get(task_id)
        if current is None or current["status"] in FINAL:
            return
        try:
            if code == "complete":
                await self.board.complete(task_id, result)
            elif code == "cancelled":
                await self.board.cancel(task_id, message)
            else:
                await self.board.fail(task_id, f"subagent {code}: {message}")
        except TaskError as e:  # e.g. it made subtasks it did not finish
            await self.board.fail(task_id, f"subagent finished, but: {e}")

    # -- watching ----------------------------------------------------------------------------

    async def status(self, task_ids: list[str] | None = None) -> list[dict[str, Any]]:
        """What each subagent (of this request, or the ones named) is doing or did."""
        out = []
        for task_id in self._ids(task_ids):
            handle = self.jobs.get(task_id)
            if handle is not None:
                out.append(handle.describe())
                continue
            task = await self.board.get(task_id)
            if task is None:
                out.append({"task_id": task_id, "status": "unknown", "error": "no such task"})
            else:
                agent = task.get("subagent") or {}
                out.append(
                    {
                        "task_id": task_id,
                        "title": task["title"],
                        "status": agent.get("status") or "none",
                        "task_status": task["status"],
                        "result": task.get("result"),
                        "error": task.get("error"),
                    }
                )
        return out

    async def wait(
        self,
        task_ids: list[str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (the model's bound on the wait)
        progress: Progress | None = None,
    ) -> list[dict[str, Any]]:
        """Wait until the subagents (of this request, or the ones named) end, or
        ``timeout`` seconds; return their states."""
        ids = self._ids(task_ids)
        handles = [self.jobs[t] for t in ids if t in self.jobs]
        waiting = {asyncio.ensure_future(h.done.wait()): h for h in handles if not h.done.is_set()}
        limit = timeout if timeout and timeout > 0 else None
        loop = asyncio.get_running_loop()
        end = None if limit is None else loop.time() + limit
        total, finished = len(handles), len(handles) - len(waiting)
        try:
            while waiting:
                left = None if end is None else max(0.0, end - loop.time())
                done, _ = await asyncio.wait(
                    waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:
                    break
                for fut in done:
                    handle = waiting.pop(fut)
                    finished += 1
                    if progress is not None:
                        await progress(
                            f"{finished}/{total} done: {handle.job.task['title']} ({handle.code})\n"
                        )
        finally:
            for fut in waiting:
                fut.cancel()
        return await self.status(ids)

    def _of_request(self) -> list[str]:
        return [t for t, h in self.jobs.items() if h.root_id == self.root_id]

    def _ids(self, refs: list[str] | None) -> list[str]:
        if not refs:
            return self._of_request()
        root = self.root_id
        return [self.board.resolve(root, r) if root else r for r in refs]

    # -- stopping ----------------------------------------------------------------------------

    async def cancel(self, task_id: str, reason: str) -> bool:
        """Cancel one subagent (its processes are killed); False if it was not running."""
        handle = self.jobs.get(task_id)
        if handle is None or handle.done.is_set() or handle.runner is None:
            return False
        await self._cancel([handle], reason)
        return True

    async def cancel_all(self, root_id: str | None, reason: str) -> int:
        """Cancel the running subagents (of one request, or all); returns how many."""
        running = [
            h for h in self.jobs.values() if not h.done.is_set() and root_id in (None, h.root_id)
        ]
        await self._cancel(running, reason)
        return len(running)

    async def _cancel(self, handles: list[Handle], reason: str) -> None:
        for handle in handles:
            handle.cancel_reason = reason
            if handle.runner is not None:
                handle.runner.cancel()
        runners = [h.runner for h in handles if h.runner is not None]
        if runners:
            await asyncio.wait(runners, timeout=10)

    async def close(self) -> None:
        """Cancel every subagent and stop the heartbeat (the runtime closes)."""
        await self.cancel_all(None, "the kernel shut down")
        if self._beat is not None:
            self._beat.cancel()
            await asyncio.gather(self._beat, return_exceptions=True)

    # -- liveness ----------------------------------------------------------------------------

    def _checks(self) -> Checks:
        cfg = self.config
        return Checks(
            cfg.subagent_first_check, cfg.subagent_check_interval, cfg.subagent_stale_after
        )

    async def _schedule_check(self, handle: Handle, limit: float) -> None:
        checks = self._checks()
        store = self.board.store
        payload = {
            "task_id": handle.task_id,
            "attempt": 1,
            "attempts": checks.attempts(limit),
            "every": checks.every,
            "stale_after": checks.stale_after,
        }
        await store.add_schedule(
            "subagent_check", time.time() + checks.first, payload, self.session_id
        )

    def _heartbeat(self) -> None:
        if self._beat is None or self._beat.done():
            self._beat = asyncio.ensure_future(self._beats())

    async def _beats(self) -> None:
        """Refresh the rows of running subagents until none runs."""
        while True:
            await asyncio.sleep(max(0.05, float(self.config.subagent_heartbeat)))
            running = [t for t, h in self.jobs.items() if not h.done.is_set()]
            if not running:
                return
            with contextlib.suppress(Exception):  # a busy database: the next beat is soon
                await self.board.store.heartbeat_subagents(running)

    async def recover(self, session_id: str) -> list[dict[str, Any]]:
        """Subagents a dead process left ``running`` in this session: mark them interrupted
        (or timed out) and report them to the parent. Returns the reports."""
        reports = []
        for row in await self.board.store.running_subagents(session_id):
            if row["id"] in self.jobs:
                continue
            code, why = verdict(
                row,
                time.time(),
                alive=owner_alive,
                stale_after=float(self.config.subagent_stale_after),
            )
            if code in ("interrupted", "timeout"):
                report = await mark_lost(self.board, row, code, why)
                if report is not None:
                    reports.append(report)
        if not self.durable():
            # Without a server nothing retries a request a dead kernel was running: it ended
            # there. (With one, a retry carries on under the same root, or the server ends it.)
            for root in await self.board.store.open_roots(session_id):
                if root["id"] != self.root_id:
                    await self.board.end(root["id"], "failed", "the kernel stopped mid-request")
        return reports

    async def _send(self, event: Event) -> None:
        res = self.emit(event)
        if asyncio.iscoroutine(res):
            await res
