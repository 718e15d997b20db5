"""The ``think`` Jupyter kernel: a cell is a request to the agent; events become cell output.

The kernel is thin (STYLE.md rule 3): the agent loop lives in
:class:`~think_kernel.runtime.Runtime`, event -> Markdown in :mod:`think_kernel.kernel.render`, the
``%think_*`` commands in :mod:`think_kernel.kernel.commands`, code cells in
:mod:`think_kernel.kernel.cellcode`. This module only turns those into Jupyter messages.

Base class: ``IPythonKernel`` rather than the bare ``Kernel``. It keeps ``comm_manager`` (comms
are dispatched even while a cell runs, which ipywidgets approval prompts need), the display
publisher and IPython's history store (up-arrow recall of requests in consoles); we override
every handler that would otherwise run Python (execute, complete, inspect, is_complete).

Interrupt: ipykernel 7 installs ``default_int_handler`` around each shell handler
(``Kernel.pre_handler_hook``); a KeyboardInterrupt raised inside the asyncio loop while a cell is
awaiting would kill the kernel. We install our own SIGINT handler there instead, which cancels
the running cell's task thread-safely. Message-mode ``interrupt_request`` (control thread)
cancels the task directly as well as sending SIGINT as the base class does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ipykernel.ipkernel import IPythonKernel
from traitlets import Type

from .. import __version__
from ..agent.events import ErrorEvent, Event, StatusEvent, ToolResult
from ..approvals.cards import ApprovalCards
from ..collab.linked import linked_setup
from ..config import ThinkConfig
from ..runtime import Runtime
from ..safeoutput import safe_bundle
from ..schedules.notebook import KernelReminders
from ..store.location import store_dir
from ..tasks.display import TaskDisplay
from .cellcode import run_cell_code
from .commands import COMMANDS, CommandError, run_command, whole_output_markdown
from .link import start_link
from .render import Transcript
from .resume import notebook_key, remember_session, remembered_session

log = logging.getLogger(__name__)

CELL_MAGICS = ("%%python", "%%bash")
# Messages whose data reaches the page; what the model or sandboxed code wrote is in them.
DISPLAYS = frozenset({"display_data", "update_display_data", "execute_result"})
LINE_MAGICS = tuple(f"%{name}" for name in COMMANDS)
WAITING_TICK = 0.5
LINK_WAIT = 5.0  # seconds the first request waits for the server link before going local
BANNER = f"""Think {__version__}: a coding agent in Jupyter.
Type a request in a cell; %%python / %%bash cells run code; %think_help lists the commands."""


class CellOutput:
    """One cell's live Markdown display: batched ``update_display_data`` on a display_id."""

    def __init__(self, kernel: ThinkKernel, parent: dict[str, Any], interval: float) -> None:
        self.kernel = kernel
        self.parent = parent
        self.interval = interval
        self.view = Transcript()
        self.display_id: str | None = None
        self.start = 0
        self.last = 0.0
        self.handle: asyncio.TimerHandle | None = None
        self.loop = asyncio.get_running_loop()
        self.metadata: dict[str, Any] = {}
        self.shown_content = False

    def send(self, msg_type: str, content: dict[str, Any]) -> None:
        """Publish one iopub message for this cell."""
        self.kernel.send_iopub(msg_type, content, self.parent)

    def begin(self) -> None:
        """Show the status line at once; it does not count against the update rate."""
        self.flush()
        self.last = 0.0

    def feed(self, event: Event) -> None:
        """Take an event; redraw now or when the interval allows."""
        if self.view.feed(event, time.monotonic()):
            if not self.shown_content and len(self.view.blocks) > self.start:
                self.flush()  # the first token goes out at once; status lines cost no budget
            else:
                self.schedule()

    def schedule(self) -> None:
        """Redraw within the update interval (at most ~1/interval updates a second)."""
        if self.handle is not None:
            return
        delay = self.last + self.interval - time.monotonic()
        if delay <= 0:
            self.flush()
        else:
            self.handle = self.loop.call_later(delay, self.flush)

    def flush(self, final: bool = False) -> None:
        """Send the current Markdown (a new display, or an update of ours)."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        now = time.monotonic()
        markdown = self.view.render(final=final, now=now, start=self.start)
        if self.display_id is None and not markdown:
            return
        content = {
            "data": {"text/markdown": markdown, "text/plain": markdown},
            "metadata": {"think": self.metadata} if self.metadata else {},
        }
        if self.display_id is None:
            self.display_id = uuid.uuid4().hex
            self.send("display_data", {**content, "transient": {"display_id": self.display_id}})
        else:
            self.send(
                "update_display_data", {**content, "transient": {"display_id": self.display_id}}
            )
        self.last = now
        self.shown_content = len(self.view.blocks) > self.start
        if not final and self.view.status == "waiting" and not self.view.done:
            self.handle = self.loop.call_later(WAITING_TICK, self.flush)  # retry countdown

    def bundles(self, bundles: list[dict[str, Any]]) -> None:
        """Show rich tool outputs (figures, tables) in order, then continue in a new display."""
        self.flush(final=True)
        for bundle in bundles:
            data = {k: v for k, v in bundle.items() if "/" in k}
            if data:
                self.send("display_data", {"data": data, "metadata": {}, "transient": {}})
        self.start = len(self.view.blocks)
        self.display_id = None


class ThinkKernel(IPythonKernel):
    """Cells are requests to the agent; ``%%python`` / ``%%bash`` cells run code."""

    implementation = "think"
    implementation_version = __version__
    language_info = {
        "name": "markdown",
        "mimetype": "text/markdown",
        "file_extension": ".md",
        "pygments_lexer": "markdown",
        "codemirror_mode": "markdown",
    }

    runtime_class = Type(
        Runtime,
        klass=Runtime,
        config=True,
        help="Runtime class (a subclass adds instructions, tools, models). Default: Runtime.",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.runtime: Runtime | None = None
        self._runtime_lock = asyncio.Lock()
        self._run_task: asyncio.Future[Any] | None = None
        self._run_loop: asyncio.AbstractEventLoop | None = None
        self._main_loop: asyncio.AbstractEventLoop | None = None
        self._session_key = notebook_key()
        self._cell_count = 0
        self._background: set[asyncio.Future[Any]] = set()
        self.think_link: Any = None
        self._prepared: Runtime | None = None  # a chat kernel's runtime before its session
        self.reminders: KernelReminders | None = None

    @property
    def banner(self) -> str:  # type: ignore[override]
        """Shown by consoles on connect, with the sandbox tier code will run in (once the
        background probe that :meth:`start` begins has finished)."""
        from ..sandbox.tiers import TIER3_WARNING, Tier, probed_tier

        tier = probed_tier()
        if tier is None:
            return f"{BANNER}\nSandbox: being checked (%think_status shows it)"
        warning = f"\n{TIER3_WARNING}" if tier == Tier.RLIMITS else ""
        return f"{BANNER}\nSandbox: {tier.description}{warning}"

    @property
    def kernel_info(self) -> dict[str, Any]:  # type: ignore[override]
        """As the base class, minus the Python debugger (cells are not Python)."""
        info = dict(super().kernel_info)
        features = info.get("supported_features", [])
        info["supported_features"] = [f for f in features if f != "debugger"]
        return info

    # -- iopub --------------------------------------------------------------------------------

    def send_iopub(
        self, msg_type: str, content: dict[str, Any], parent: dict[str, Any], *, ours: bool = False
    ) -> None:
        """Publish on iopub with an explicit parent (comms may run while a cell runs).

        Every display goes out as inert MIME types (JupyterLab trusts the outputs of cells
        the person ran), except ``ours``: a widget this kernel built itself."""
        assert self.session is not None
        if not ours and msg_type in DISPLAYS and isinstance(content.get("data"), dict):
            content = {**content, "data": safe_bundle(content["data"])}
        self.session.send(
            self.iopub_socket, msg_type, content, parent=parent, ident=self._topic(msg_type)
        )

    # -- the runtime ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the kernel, then (on its loop) the link to the server that started it."""
        super().start()
        self.io_loop.add_callback(self._start_link)

    def _start_link(self) -> None:
        self._main_loop = asyncio.get_running_loop()
        # The sandbox probes (for the banner; the sandbox repeats them from the cache) run
        # beside the kernel's start, not in a kernel_info reply (issue 17).
        from ..sandbox.tiers import detect_tier

        probe = self._main_loop.run_in_executor(None, detect_tier)
        self._background.add(probe)
        probe.add_done_callback(self._background.discard)
        try:
            # ipykernel ignores SIGINT between cells; a chat run (no cell) must still stop
            # on a kernel interrupt, so SIGINT cancels runs at any time.
            signal.signal(signal.SIGINT, self._on_sigint)
        except ValueError:  # not the main thread: interrupt_request still works
            log.debug("SIGINT handler not installed", exc_info=True)
        self.think_link = start_link(self.ensure_runtime)
        if self.think_link is not None:
            self.think_link.on_run = self._chat_status
        if self.think_link is not None and os.environ.get("THINK_CHAT_KERNEL"):
            task = asyncio.ensure_future(self._prepare_chat_runtime())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _chat_status(self, busy: bool) -> None:
        # A chat run has no execute_request: publish busy / idle ourselves so that the
        # server's kernel API (and its culler) see a working kernel as busy.
        state = "busy" if busy else "idle"
        self.send_iopub("status", {"execution_state": state}, {})

    async def _prepare_chat_runtime(self) -> None:
        """A chat kernel (maybe a spare of the server's pool): build the runtime, open the
        store, start the sandbox and the model client before any chat arrives, so the first
        message and the first tool call do not wait for them. No session row is written and
        nothing runs for a session until the first chat frame binds one (``ensure_runtime``).
        The sandbox takes a uid lease of its own here: no other session ever held it, and it
        goes with this kernel to the one session that claims it."""
        try:
            async with self._runtime_lock:
                if self.runtime is not None or self._prepared is not None:
                    return
                root = Path.cwd()
                config = ThinkConfig(parent=self)
                linked = await self._linked_setup(root, config)
                runtime = self.runtime_class(config, root, workspace=linked.get("workspace"))
                runtime.linked = bool(linked.get("server"))  # it watches our subagents
                if "notebooks" in linked:
                    runtime.extras["notebooks"] = linked["notebooks"]
                await runtime.open_store()
                await runtime.refresh_endpoint()  # the setup card's endpoint, if one is saved
                runtime.prewarm_sandbox()
                runtime.prewarm_model()
                self._prepared = runtime
            await runtime.wait_sandbox()
            # Not under the lock: a chat that came meanwhile must not wait for them.
            runtime.prewarm_tools()
            self.think_link.push({"kind": "prepared"})
        except Exception:  # the first chat then builds it the ordinary way
            log.warning("preparing the chat runtime failed", exc_info=True)

    async def _linked_setup(self, root: Path, config: ThinkConfig) -> dict[str, Any]:
        """With a server: its store, and edits through its collaboration rooms."""
        return await linked_setup(self.think_link, root, config, LINK_WAIT)

    async def ensure_runtime(self) -> Runtime:
        """Create and start the runtime on first use, resuming the remembered session."""
        async with self._runtime_lock:
            if self.runtime is None and self._prepared is not None:
                runtime, self._prepared = self._prepared, None
                # The session comes with the first chat frame (the server claimed us for it).
                link = self.think_link
                runtime.session_id = (link.session_id if link else None) or runtime.session_id
                runtime.kind = "chat"  # only chat kernels prepare ahead
                await runtime.start()
                self.runtime = runtime
                await self._start_reminders(runtime)
            if self.runtime is None:
                root = Path.cwd()
                config = ThinkConfig(parent=self)
                linked = await self._linked_setup(root, config)  # may set the store path
                # A chat kernel serves the sidebar session it was started for (no stray
                # notebook session of its own); a notebook's kernel resumes its pointer.
                link = self.think_link
                chat = ""
                if os.environ.get("THINK_CHAT_KERNEL") and link is not None:
                    chat = link.session_id or ""  # set by the chat frame that got us here
                chat = chat or os.environ.get("THINK_SESSION_ID", "").strip()
                sid = chat or remembered_session(
                    store_dir(root, config.store_path), self._session_key
                )
                runtime = self.runtime_class(
                    config,
                    root,
                    session_id=sid,
                    workspace=linked.get("workspace"),
                    kind="chat" if chat else "notebook",
                    session_path=os.environ.get("JPY_SESSION_NAME", "").strip(),
                )
                runtime.linked = bool(linked.get("server"))
                if "notebooks" in linked:
                    runtime.extras["notebooks"] = linked["notebooks"]
                await runtime.start()
                runtime.prewarm_sandbox()  # the zygote preloads numpy/pandas while we talk
                if not chat:
                    remember_session(runtime.store_dir, self._session_key, runtime.session_id)
                self.runtime = runtime
                await self._start_reminders(runtime)
            return self.runtime

    async def _start_reminders(self, runtime: Runtime) -> None:
        """Reminders (issue 15): the server fires them when there is one; else this kernel."""
        self.reminders = KernelReminders(runtime, self.think_link)
        try:
            await self.reminders.start()
        except Exception:  # reminders are a side feature: the kernel works without them
            log.exception("reminders not started")

    async def _show_reminders(self, parent: dict[str, Any]) -> None:
        """Reminders of this session that fired since the last cell, in this cell's output."""
        try:
            await self.ensure_runtime()  # (a failure here is the cell's to report)
            if self.reminders is None:
                return
            note = await self.reminders.take_note()
        except Exception:
            log.exception("could not read fired reminders")
            return
        if note:
            data = {"text/markdown": note, "text/plain": note}
            self.send_iopub("display_data", {"data": data, "metadata": {}}, parent)

    # -- interrupt ------------------------------------------------------------------------------

    def pre_handler_hook(self) -> None:
        """Replace ipykernel's ``default_int_handler``: SIGINT cancels the cell, never the loop."""
        self.saved_sigint_handler = signal.signal(signal.SIGINT, self._on_sigint)

    def post_handler_hook(self) -> None:
        """Restore the handler saved by ``pre_handler_hook``."""
        signal.signal(signal.SIGINT, self.saved_sigint_handler)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.cancel_run()

    def cancel_run(self) -> None:
        """Cancel the running cell and any chat run, from any thread (or a signal handler).

        A cancelled tool call kills its sandboxed process tree (``Sandbox`` does that when
        the awaiting task is cancelled); the interrupt below also reaches code that runs
        outside a cancelled task.
        """
        loop = self._run_loop or self._main_loop
        if loop is None or loop.is_closed():
            return
        task = self._run_task
        if task is not None and not task.done():
            loop.call_soon_threadsafe(task.cancel)
        if self.think_link is not None:
            loop.call_soon_threadsafe(self.think_link.cancel_runs)
        sandbox = getattr(self.runtime, "sandbox", None)
        if sandbox is not None:
            loop.call_soon_threadsafe(self._interrupt_sandbox, sandbox)

    def _interrupt_sandbox(self, sandbox: Any) -> None:
        task = asyncio.ensure_future(sandbox.interrupt())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def interrupt_request(self, stream: Any, ident: Any, parent: Any) -> None:
        """Message-mode interrupt (control thread): cancel the run, then do what ipykernel does."""
        self.cancel_run()
        await super().interrupt_request(stream, ident, parent)

    # -- execute --------------------------------------------------------------------------------

    async def do_execute(  # type: ignore[override]
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        *,
        cell_meta: dict[str, Any] | None = None,
        cell_id: str | None = None,
    ) -> dict[str, Any]:
        """Run one cell: a request, ``%`` commands, or a ``%%python`` / ``%%bash`` cell."""
        assert self.shell is not None
        count = self.shell.execution_count
        if store_history and not silent:
            self.shell.history_manager.store_inputs(count, code)  # type: ignore[union-attr]
            self.shell.execution_count += 1
        parent = self.get_parent("shell")
        self._cell_count = count
        task = asyncio.ensure_future(self._execute(code, silent, parent))
        self._run_task, self._run_loop = task, asyncio.get_running_loop()
        try:
            await asyncio.wait({task})
        finally:
            self._run_task = None
        if task.cancelled():
            reply = _error_reply("KeyboardInterrupt", "the run was interrupted")
        else:
            reply = task.result()
        reply.setdefault("user_expressions", {})
        reply.setdefault("payload", [])
        reply["execution_count"] = count
        return reply

    async def _execute(self, code: str, silent: bool, parent: dict[str, Any]) -> dict[str, Any]:
        text = code.strip()
        if not text:
            return {"status": "ok"}
        if not silent:
            await self._show_reminders(parent)
        first, _, body = text.partition("\n")
        if first.startswith("%%"):
            name = first.split()[0]
            if name not in CELL_MAGICS:
                return self._usage_error(f"unknown cell magic `{name}`; known: %%python, %%bash.")
            return await self._code_cell(name[2:], body, silent, parent)
        lines = text.splitlines()
        n = 0
        while n < len(lines) and (lines[n].startswith("%") or not lines[n].strip()):
            n += 1
        payload: list[dict[str, Any]] = []
        for line in lines[:n]:
            if line.strip():
                reply = await self._command(line.strip(), silent, parent, last=n == len(lines))
                if reply["status"] != "ok":
                    return reply
                payload += reply.get("payload", [])
        request = "\n".join(lines[n:]).strip()
        if not request:
            return {"status": "ok", "payload": payload}
        return await self._agent(request, silent, parent)

    def _usage_error(self, message: str) -> dict[str, Any]:
        self.send_iopub(
            "error",
            {"ename": "UsageError", "evalue": message, "traceback": [f"UsageError: {message}"]},
            self.get_parent("shell"),
        )
        return _error_reply("UsageError", message)

    async def _command(
        self, line: str, silent: bool, parent: dict[str, Any], last: bool
    ) -> dict[str, Any]:
        name, _, arg = line[1:].partition(" ")
        try:
            runtime = await self.ensure_runtime()
            reply = await run_command(runtime, name, arg)
        except CommandError as e:
            return self._usage_error(str(e))
        except KeyError as e:  # switch_session's "no session" message
            return self._usage_error(str(e.args[0] if e.args else e))
        if reply.session_changed:
            remember_session(runtime.store_dir, self._session_key, runtime.session_id)
        if name == "think_help":  # help goes to the pager, as IPython's ``?`` does
            data = {"text/markdown": reply.markdown, "text/plain": reply.markdown}
            return {"status": "ok", "payload": [{"source": "page", "data": data, "start": 0}]}
        if not silent:
            data = {"text/markdown": reply.markdown, "text/plain": reply.value or reply.markdown}
            if reply.value is not None and last:
                content = {"data": data, "metadata": {}, "execution_count": self._cell_count}
                self.send_iopub("execute_result", content, parent)
            else:
                self.send_iopub("display_data", {"data": data, "metadata": {}}, parent)
        return {"status": "ok"}

    async def _code_cell(
        self, language: str, code: str, silent: bool, parent: dict[str, Any]
    ) -> dict[str, Any]:
        runtime = await self.ensure_runtime()

        def on_output(stream: str, text: str) -> None:
            if not silent:
                self.send_iopub("stream", {"name": stream, "text": text}, parent)

        result = await run_cell_code(runtime, language, code, on_output)
        if not silent:
            for warning in result.warnings:
                on_output("stderr", warning.rstrip("\n") + "\n")
            for bundle in result.outputs:
                data = {k: v for k, v in bundle.items() if "/" in k}
                self.send_iopub("display_data", {"data": data, "metadata": {}}, parent)
        if result.ok:
            return {"status": "ok"}
        ename = f"{language.capitalize()}Error"
        evalue = result.error
        if result.error_category:
            evalue = f"{evalue} ({result.error_category})"
        if not silent:
            tb = [f"\x1b[0;31m{language} cell failed: {evalue}\x1b[0m"]
            if result.traceback:  # the sandbox trims it to the user's code
                tb.insert(0, result.traceback.rstrip("\n"))
            self.send_iopub("error", {"ename": ename, "evalue": evalue, "traceback": tb}, parent)
        return _error_reply(ename, evalue)

    async def _agent(self, request: str, silent: bool, parent: dict[str, Any]) -> dict[str, Any]:
        out = CellOutput(self, parent, ThinkConfig(parent=self).display_interval)
        if silent:
            out.send = lambda msg_type, content: None  # type: ignore[method-assign]
        out.begin()
        failed: ErrorEvent | None = None
        tasks = TaskDisplay(out.send, out.interval)  # the request's task tree, live (issue 12)
        cards: ApprovalCards | None = None

        def aside(event: Event) -> None:
            # What happens beside the run's own events: its task tree, and the approvals its
            # subagents ask for (their buttons work in this cell too).
            tasks.feed(event)
            if cards is not None:
                cards.feed_subagent(event)

        runtime: Runtime | None = None
        try:
            runtime = await self.ensure_runtime()
            out.interval = tasks.interval = float(runtime.config.display_interval)
            out.metadata = {"session_id": runtime.session_id}
            if not silent:
                cards = ApprovalCards(
                    runtime, lambda t, c: self.send_iopub(t, c, parent, ours=True)
                )
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
                        out.bundles([{"text/markdown": whole, "text/plain": whole}])
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
            return _error_reply("ThinkError", failed.message)
        return {"status": "ok"}

    # -- completion, inspection, is_complete ----------------------------------------------------

    def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:  # type: ignore[override]
        """Complete magic names at the start of a line, else workspace paths."""
        pos = len(code) if cursor_pos is None else cursor_pos
        match = re.search(r"[^\s`'\"(),]*$", code[:pos])
        token = match.group(0) if match else ""
        start = pos - len(token)
        line_start = code.rfind("\n", 0, start) + 1
        if token.startswith("%") and not code[line_start:start].strip():
            names = (*CELL_MAGICS, *LINE_MAGICS) if line_start == 0 else LINE_MAGICS
            matches = sorted(n for n in names if n.startswith(token))
        else:
            matches = _complete_path(Path.cwd(), token)
        return {
            "matches": matches,
            "cursor_start": start,
            "cursor_end": pos,
            "metadata": {},
            "status": "ok",
        }

    def do_inspect(  # type: ignore[override]
        self, code: str, cursor_pos: int, detail_level: int = 0, omit_sections: Any = ()
    ) -> dict[str, Any]:
        """Help for the ``%think_*`` command under the cursor."""
        words = re.findall(r"%\w+", code)
        found = next((w[1:] for w in words if w[1:] in COMMANDS), None)
        data: dict[str, str] = {}
        if found:
            doc = COMMANDS[found].__doc__ or ""
            data = {"text/plain": f"%{found}: {doc}", "text/markdown": f"`%{found}`: {doc}"}
        return {"status": "ok", "found": bool(found), "data": data, "metadata": {}}

    def do_is_complete(self, code: str) -> dict[str, Any]:  # type: ignore[override]
        """Requests are always complete; ``%%python`` bodies are checked as Python."""
        first, _, body = code.partition("\n")
        if first.strip() == "%%python" and body.strip():
            from IPython.core.inputtransformer2 import TransformerManager

            status, indent = TransformerManager().check_complete(body)
            reply: dict[str, Any] = {"status": status}
            if status == "incomplete":
                reply["indent"] = " " * (indent or 0)
            return reply
        if first.strip() == "%%bash" and code.rstrip("\n").endswith("\\"):
            return {"status": "incomplete", "indent": ""}
        return {"status": "complete"}

    def do_history(self, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """IPython's history of requests, with the real session number for the current one."""
        reply: dict[str, Any] = super().do_history(*args, **kwargs)
        assert self.shell is not None and self.shell.history_manager is not None
        current = self.shell.history_manager.session_number
        # IPython reports the running session as 0 in ``range`` replies; clients (and
        # jupyter_kernel_test) expect the number ``tail`` gave them.
        reply["history"] = [(s or current, n, h) for s, n, h in reply.get("history", [])]
        return reply

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:  # type: ignore[override]
        """Close the runtime (store, sandbox) before the process exits; chat runs are left
        as they are in the store (a shutdown is not a Stop)."""
        # ipykernel answers shutdown_request on its control thread; the runtime, the link and
        # their tasks belong to the main loop (awaited from here, their futures fail).
        loop = self._main_loop
        if loop is not None and loop.is_running() and loop is not asyncio.get_running_loop():
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._close(), loop))
        else:
            await self._close()
        return super().do_shutdown(restart)

    async def _close(self) -> None:
        """On the main loop: leave the chat runs, then close reminders and the runtime."""
        await self._leave_chat_runs()
        if self.reminders is not None:
            try:
                await self.reminders.close()
            except Exception:
                log.exception("closing reminders failed")
        for runtime in (self.runtime, self._prepared):
            if runtime is not None:
                try:
                    await runtime.close()
                except Exception:
                    log.exception("closing the runtime failed")
        self.runtime = self._prepared = None

    async def _leave_chat_runs(self) -> None:
        """End this process's chat runs without a trace in the store or on the server.

        A server that stops (or restarts this kernel) resumes its runs from the store, as
        after a crash: a step streaming, an approval pending. Cancelling them would record
        an end (the approval rejected as cancelled, the step cancelled), so the store stops
        taking this process's writes first; the link stops before the runs do, so no
        "cancelled" end reaches a server that still listens.
        """
        link, runtime = self.think_link, self.runtime
        if link is None or runtime is None or not link.owned_runs():
            return
        try:
            if runtime.store is not None:
                await runtime.store.close()  # the runtime's close later finds it closed
            await link.close()
        except Exception:
            log.exception("leaving the chat runs failed")


async def _one_at_a_time(lock: asyncio.Lock, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """The events of a run, taken under the runtime's run lock."""
    async with lock:
        async for event in events:
            yield event


def _error_reply(ename: str, evalue: str) -> dict[str, Any]:
    return {"status": "error", "ename": ename, "evalue": evalue, "traceback": []}


def _complete_path(root: Path, token: str) -> list[str]:
    """Workspace entries starting with ``token``; directories end with ``/``; never outside."""
    head, _, prefix = token.rpartition("/")
    folder = (root / head).resolve() if head else root.resolve()
    if not folder.is_relative_to(root.resolve()) or not folder.is_dir():
        return []
    out = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(prefix) or (entry.name.startswith(".") and not prefix):
            continue
        name = f"{head}/{entry.name}" if head else entry.name
        out.append(name + "/" if entry.is_dir() else name)
    return sorted(out)
