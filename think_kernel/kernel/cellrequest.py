"""One ``execute_request`` of the think kernel: leading ``%`` commands, a ``%%python`` /
``%%bash`` cell, or a request to the agent whose events become the cell's output.

    cell = CellRequest(life, send, silent=False, count=3)   # send(msg_type, content, ours=)
    reply = await cell.run(code)                            # the execute_reply content

The kernel owns the task the cell runs in (an interrupt cancels it); this module only turns
the cell into iopub messages and a reply.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

from ..agent.events import ErrorEvent, Event, StatusEvent, ToolResult
from ..approvals.cards import ApprovalCards
from ..runtime import Runtime
from ..tasks.display import TaskDisplay
from .cellcode import run_cell_code
from .celloutput import CellOutput
from .commands import CommandError, run_command, whole_output_markdown
from .completion import CELL_MAGICS
from .jobcell import job_cell
from .lifecycle import KernelRuntime
from .resume import remember_session

log = logging.getLogger(__name__)


class Send(Protocol):
    """Publish one iopub message on the cell: ``send("stream", {...})``."""

    def __call__(self, msg_type: str, content: dict[str, Any], *, ours: bool = False) -> None:
        """``ours``: a widget the kernel built itself (its bundle is not made inert)."""
        ...


class CellRequest:
    """Runs one cell's code and answers with the ``execute_reply`` content."""

    def __init__(self, life: KernelRuntime, send: Send, *, silent: bool, count: int) -> None:
        self.life, self.send, self.silent, self.count = life, send, silent, count

    def _out(self, msg_type: str, content: dict[str, Any]) -> None:
        """What the person sees: nothing for a silent request."""
        if not self.silent:
            self.send(msg_type, content)

    async def run(self, code: str) -> dict[str, Any]:
        """Commands first (each on its own line), then the code cell or the request."""
        text = code.strip()
        if not text:
            return {"status": "ok"}
        if not self.silent:
            note = await self.life.reminder_note()
            if note:
                self._out("display_data", {"data": _markdown(note), "metadata": {}})
        first, _, body = text.partition("\n")
        if first.startswith("%%"):
            name = first.split()[0]
            if name not in CELL_MAGICS:
                known = ", ".join(CELL_MAGICS)
                return self._usage_error(f"unknown cell magic `{name}`; known: {known}.")
            if name == "%%think_job":  # a background job, followed in the cell
                runtime = await self.life.ensure_runtime()
                return await job_cell(runtime, first[len(name) :], body, self._out)
            return await self._code_cell(name[2:], body)
        lines = text.splitlines()
        n = 0
        while n < len(lines) and (lines[n].startswith("%") or not lines[n].strip()):
            n += 1
        payload: list[dict[str, Any]] = []
        for line in lines[:n]:
            if line.strip():
                reply = await self._command(line.strip(), last=n == len(lines))
                if reply["status"] != "ok":
                    return reply
                payload += reply.get("payload", [])
        request = "\n".join(lines[n:]).strip()
        if not request:
            return {"status": "ok", "payload": payload}
        return await self._agent(request)

    def _usage_error(self, message: str) -> dict[str, Any]:
        # Shown even for a silent request, as IPython shows a UsageError.
        tb = [f"UsageError: {message}"]
        self.send("error", {"ename": "UsageError", "evalue": message, "traceback": tb})
        return error_reply("UsageError", message)

    async def _command(self, line: str, last: bool) -> dict[str, Any]:
        name, _, arg = line[1:].partition(" ")
        try:
            runtime = await self.life.ensure_runtime()
            reply = await run_command(runtime, name, arg)
        except CommandError as e:
            return self._usage_error(str(e))
        except KeyError as e:  # switch_session's "no session" message
            return self._usage_error(str(e.args[0] if e.args else e))
        if reply.session_changed:
            remember_session(runtime.store_dir, self.life.session_key, runtime.session_id)
        if name == "think_help":  # help goes to the pager, as IPython's ``?`` does
            data = _markdown(reply.markdown)
            return {"status": "ok", "payload": [{"source": "page", "data": data, "start": 0}]}
        data = {"text/markdown": reply.markdown, "text/plain": reply.value or reply.markdown}
        if reply.value is not None and last:
            content = {"data": data, "metadata": {}, "execution_count": self.count}
            self._out("execute_result", content)
        else:
            self._out("display_data", {"data": data, "metadata": {}})
        return {"status": "ok"}

    async def _code_cell(self, language: str, code: str) -> dict[str, Any]:
        runtime = await self.life.ensure_runtime()

        def on_output(stream: str, text: str) -> None:
            self._out("stream", {"name": stream, "text": text})

        result = await run_cell_code(runtime, language, code, on_output)
        for warning in result.warnings:
            on_output("stderr", warning.rstrip("\n") + "\n")
        for bundle in result.outputs:
            data = {k: v for k, v in bundle.items() if "/" in k}
            self._out("display_data", {"data": data, "metadata": {}})
        if result.ok:
            return {"status": "ok"}
        ename = f"{language.capitalize()}Error"
        evalue = result.error
        if result.error_category:
            evalue = f"{evalue} ({result.error_category})"
        tb = [f"\x1b[0;31m{language} cell failed: {evalue}\x1b[0m"]
        if result.traceback:  # the sandbox trims it to the user's code
            tb.insert(0, result.traceback.rstrip("\n"))
        self._out("error", {"ename": ename, "evalue": evalue, "traceback": tb})
        return error_reply(ename, evalue)

    async def _agent(self, request: str) -> dict[str, Any]:
        out = CellOutput(self._out, self.life.config().display_interval)
        out.begin()
        failed: ErrorEvent | None = None
        tasks = TaskDisplay(out.send, out.interval)  # the request's task tree, live
        cards: ApprovalCards | None = None

        def aside(event: Event) -> None:
            # What happens beside the run's own events: its task tree, and the approvals its
            # subagents ask for (their buttons work in this cell too).
            tasks.feed(event)
            if cards is not None:
                cards.feed_subagent(event)

        runtime: Runtime | None = None
        try:
            runtime = await self.life.ensure_runtime()
            out.interval = tasks.interval = float(runtime.config.display_interval)
            out.metadata = {"session_id": runtime.session_id}
            if not self.silent:
                cards = ApprovalCards(runtime, lambda t, c: self.send(t, c, ours=True))
            runtime.add_sink(aside)
            # One run at a time: a reminder this kernel fires (no server) waits for the cell.
            async for event in _one_at_a_time(runtime.run_lock, runtime.run(request)):
                if isinstance(event, ErrorEvent):
                    failed = event
                if cards is not None:
                    cards.feed(event)
                out.feed(event)
                if isinstance(event, ToolResult) and event.display:
                    out.bundles(event.display)
                if isinstance(event, ToolResult) and event.full_size:
                    # The model saw a summary: the cell can expand to the whole output.
                    whole = await whole_output_markdown(runtime, event.result_id, event.call_id)
                    if whole:
                        out.bundles([_markdown(whole)])
        except asyncio.CancelledError:
            out.view.add_note("*Interrupted.*")
            out.flush(final=True)
            raise
        except Exception as e:  # a bug below us: a message in the cell and the log, not a crash
            log.exception("think run failed")
            failed = ErrorEvent(f"internal error: {type(e).__name__}: {e}", code="internal")
            out.feed(failed)
            out.feed(StatusEvent("idle"))
        finally:
            if runtime is not None:
                runtime.remove_sink(aside)
                tasks.flush(final=True)
        out.flush(final=True)
        if failed is not None:
            return error_reply("ThinkError", failed.message)
        return {"status": "ok"}


async def _one_at_a_time(lock: asyncio.Lock, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """The events of a run, taken under the runtime's run lock."""
    async with lock:
        async for event in events:
            yield event


def _markdown(text: str) -> dict[str, str]:
    return {"text/markdown": text, "text/plain": text}


def error_reply(ename: str, evalue: str) -> dict[str, Any]:
    """An ``execute_reply`` content for a failed cell."""
    return {"status": "error", "ename": ename, "evalue": evalue, "traceback": []}
