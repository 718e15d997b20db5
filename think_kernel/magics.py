"""``%think`` / ``%%think`` for any IPython kernel (``%load_ext think_kernel``).

    %think -o answer what columns does df have?
    %%think
    plot the distribution of df.price and save it as price.png

The agent sees a compact summary of the notebook's variables (:mod:`think_kernel.namespace`).
It runs on a private asyncio loop in a daemon thread (IPython runs magics synchronously, and the
kernel's own loop is blocked while a cell runs); events come back through a queue and the cell's
thread renders them as a live Markdown display, batched like the think kernel's. Ctrl-C / the stop
button raise KeyboardInterrupt in the cell's thread: we cancel the run on the private loop, show
"Interrupted." and re-raise, so the kernel aborts queued cells and stays alive.

Loading is cheap: heavy modules (the runtime imports ``openai``) are imported on the private
thread right after ``%load_ext`` returns, so the first ``%think`` usually finds them warm.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import queue
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display, update_display

from .kernelexec import KernelExec, execute, make_run_in_kernel

_DONE = object()
INTERRUPT_GRACE = 5.0
LINK_WAIT = 5.0  # seconds to wait for the server link before working on local files
KERNEL_PROMPT = """You are running inside the user's own notebook (an IPython kernel, through
%%think). Two ways to run code, pick on purpose:
- run_in_kernel(code) runs in the user's kernel: their variables (listed in <context>),
  imports and data are there, and its output and plots appear in their cell. Use it for
  anything that needs their objects (for example df). It may wait for their approval.
- execute_code and bash run isolated in a sandbox: they cannot see the user's variables."""


def _parse_args(line: str) -> tuple[str | None, str]:
    """``-o name rest`` -> (name, rest)."""
    parts = line.strip().split(maxsplit=2)
    if len(parts) >= 2 and parts[0] in ("-o", "--output"):
        if not parts[1].isidentifier():
            raise ValueError(f"-o needs a variable name, got {parts[1]!r}")
        return parts[1], parts[2] if len(parts) > 2 else ""
    return None, line.strip()


@magics_class
class ThinkMagics(Magics):
    """The ``%think`` magics; one agent session per kernel, resumed across restarts."""

    shell: Any

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runtime: Any = None
        self._link: Any = None  # the link to the Jupyter server that started this kernel
        self._runtime_future: concurrent.futures.Future[Any] | None = None
        self._cell_sink: Any = None  # where run_in_kernel requests go while a cell runs
        # In a kernel with an asyncio loop, %think cells are awaited (see _AsyncThink), so
        # the kernel dispatches widget clicks while the agent works.
        _install_async_cells(shell)
        self._start_loop()

    # -- the private loop -----------------------------------------------------------------------

    def _start_loop(self) -> None:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            loop.call_soon(ready.set)
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=serve, name="think-magics", daemon=True)
        self._thread.start()
        ready.wait(5)
        self._runtime_future = asyncio.run_coroutine_threadsafe(self._make_runtime(), self.loop)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The private loop the agent runs on."""
        assert self._loop is not None
        return self._loop

    async def _make_runtime(self) -> Any:
        from .collab.linked import linked_setup
        from .config import ThinkConfig
        from .link import start_link
        from .resume import notebook_key, own_notebook, remember_session, remembered_session
        from .runtime import Runtime
        from .store.location import store_dir

        root = Path(os.getcwd())
        key = notebook_key()
        config = ThinkConfig(parent=self.shell)
        # With a Jupyter server (the kernel was started by one), the agent edits through its
        # collaboration rooms, like a think kernel: the notebook this cell runs in changes
        # live in the open tab, never behind its back on disk (issue 11). Approvals decided
        # in the sidebar reach this kernel over the same link.
        self._link = start_link(lambda: self._runtime)
        linked = await linked_setup(self._link, root, config, LINK_WAIT)
        sid = remembered_session(store_dir(root, config.store_path), key)
        notebook = own_notebook(root, getattr(self._link, "root_dir", None))
        here = (
            f"\nThis notebook is `{notebook}`: read_notebook, insert_cell and edit_cell "
            "with that path change it live, in the user's open tab."
            if notebook
            else ""
        )

        class KernelRuntime(Runtime):
            instructions = KERNEL_PROMPT + here  # which tool reaches the user's variables

        runtime = KernelRuntime(
            config,
            root,
            session_id=sid,
            workspace=linked.get("workspace"),
            kind="magic",
            session_path=os.environ.get("JPY_SESSION_NAME", "").strip(),
        )
        runtime.linked = bool(linked.get("server"))  # the server watches its subagents
        if "notebooks" in linked:
            runtime.extras["notebooks"] = linked["notebooks"]
        runtime.tools.add(make_run_in_kernel(self._submit))
        await runtime.start()
        remember_session(runtime.store_dir, key, runtime.session_id)
        self._runtime = runtime
        if self._link is not None:
            await self._link.runtime()  # its events reach the server (the sidebar) from now
            # A reminder set here wakes the server's scheduler at once (issue 15); without a
            # server, %%think reminders wait for one (no run can start in this kernel alone).
            from .schedules.notebook import KernelReminders

            KernelReminders(runtime, self._link)
        return runtime

    def runtime(self) -> Any:
        """The runtime (created on the private loop at load time)."""
        assert self._runtime_future is not None
        return self._runtime_future.result(60)

    def close(self) -> None:
        """Close the runtime and stop the private loop."""
        if self._runtime is not None:
            fut = asyncio.run_coroutine_threadsafe(self._runtime.close(), self.loop)
            with contextlib.suppress(Exception):
                fut.result(10)
            self._runtime = None
        if self._link is not None:
            fut = asyncio.run_coroutine_threadsafe(self._link.close(), self.loop)
            with contextlib.suppress(Exception):
                fut.result(5)
            self._link = None
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    # -- %think / %%think -----------------------------------------------------------------------

    @line_magic
    def think(self, line: str) -> Any:
        """``%think [-o NAME] REQUEST``: ask the agent; ``-o`` keeps the answer in NAME."""
        name, request = _parse_args(line)
        return self._ask(request, name)

    @cell_magic("think")  # type: ignore[arg-type]  # IPython 9 stubs type the decorator as Never
    def think_cell(self, line: str, cell: str) -> Any:
        """``%%think [-o NAME]`` with the request in the cell body."""
        name, extra = _parse_args(line)
        return self._ask("\n".join(p for p in (extra, cell.strip()) if p), name)

    @line_magic("think_await")  # type: ignore[arg-type]
    def think_await(self, line: str) -> Any:
        """Internal: ``%think`` as the awaited form (the cell's input transformer uses it)."""
        name, request = _parse_args(line)
        return self._ask_async(request, name)

    @cell_magic("think_await")  # type: ignore[arg-type]
    def think_await_cell(self, line: str, cell: str) -> Any:
        """Internal: ``%%think`` as the awaited form (the cell's input transformer uses it)."""
        name, extra = _parse_args(line)
        return self._ask_async("\n".join(p for p in (extra, cell.strip()) if p), name)

    def _ask(self, request: str, out_name: str | None) -> None:
        if not request:
            print("usage: %think [-o NAME] REQUEST, or %%think [-o NAME] with the request below")
            return
        _CellRun(self, request, out_name).run_sync()

    async def _ask_async(self, request: str, out_name: str | None) -> None:
        """The same, awaited by the cell: the kernel dispatches widget clicks meanwhile."""
        if not request:
            print("usage: %think [-o NAME] REQUEST, or %%think [-o NAME] with the request below")
            return
        await _CellRun(self, request, out_name).run_async()

    def _submit(self, request: Any) -> bool:
        """Hand a run_in_kernel request to the cell running %%think (False: none is)."""
        sink = self._cell_sink
        if sink is None:
            return False
        sink(request)
        return True

    # -- session commands -----------------------------------------------------------------------

    def _command(self, name: str, arg: str) -> None:
        from .commands import CommandError, run_command
        from .resume import notebook_key, remember_session

        runtime = self.runtime()
        fut = asyncio.run_coroutine_threadsafe(run_command(runtime, name, arg), self.loop)
        try:
            reply = fut.result()
        except (CommandError, KeyError) as e:
            msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
            display({"text/markdown": f"**Error:** {msg}", "text/plain": msg}, raw=True)
            return
        if reply.session_changed:
            remember_session(runtime.store_dir, notebook_key(), runtime.session_id)
        display({"text/markdown": reply.markdown, "text/plain": reply.markdown}, raw=True)

    @line_magic
    def think_session(self, line: str) -> None:
        """``%think_session [ID|new]``: show, resume or start the agent session."""
        self._command("think_session", line)

    @line_magic
    def think_sessions(self, line: str) -> None:
        """``%think_sessions``: list stored sessions."""
        self._command("think_sessions", line)

    @line_magic
    def think_model(self, line: str) -> None:
        """``%think_model [NAME]``: the model for this session."""
        self._command("think_model", line)

    @line_magic
    def think_instructions(self, line: str) -> None:
        """``%think_instructions [TEXT|-]``: extra instructions for this session."""
        self._command("think_instructions", line)

    @line_magic
    def think_config(self, line: str) -> None:
        """``%think_config [key=value]``: show or change settings."""
        self._command("think_config", line)

    @line_magic
    def think_status(self, line: str) -> None:
        """``%think_status``: model, endpoint, session, workspace."""
        self._command("think_status", line)

    @line_magic
    def think_approve(self, line: str) -> None:
        """``%think_approve [auto|default|strict|ask TOOL ...|allow TOOL|reset]``: approvals."""
        self._command("think_approve", line)

    @line_magic
    def think_attach(self, line: str) -> None:
        """``%think_attach [PATH|-]``: attach a workspace file or image to the next request."""
        self._command("think_attach", line)

    @line_magic
    def think_output(self, line: str) -> None:
        """``%think_output [CALL_ID]``: the whole output of a tool call."""
        self._command("think_output", line)

    @line_magic
    def think_tasks(self, line: str) -> None:
        """``%think_tasks [all]``: the task tree of the last planned request, with progress."""
        self._command("think_tasks", line)

    @line_magic
    def think_mcp(self, line: str) -> None:
        """``%think_mcp [refresh]``: MCP servers, their state and tools."""
        self._command("think_mcp", line)


class _Stopped(Exception):
    """The stop button in an awaited %think cell (shown like any stopped cell)."""

    def _render_traceback_(self) -> list[str]:
        return ["KeyboardInterrupt: the run was stopped"]


# ipykernel cancels an awaited cell on interrupt; a real KeyboardInterrupt raised in an asyncio
# task would stop the kernel's loop, so the cell ends with an Exception of the usual name.
_Stopped.__name__ = _Stopped.__qualname__ = "KeyboardInterrupt"


class _AsyncThink:
    """IPython input transformer: ``%think`` / ``%%think`` cells await the magic.

    A cell that awaits leaves the kernel's event loop free, and ipykernel 7 dispatches comm
    messages (ipywidgets clicks) while such a cell runs: the approval card works mid-run.
    """

    FORMS = ("get_ipython().run_cell_magic('think',", "get_ipython().run_line_magic('think',")

    def __call__(self, lines: list[str]) -> list[str]:
        # Only a cell that is nothing but the magic (IPython made it one statement).
        if not lines or any(line.strip() for line in lines[1:]):
            return lines
        first = lines[0]
        for form in self.FORMS:
            if first.startswith(form):
                awaited = form.replace("'think'", "'think_await'")
                return ["await " + awaited + first[len(form) :], *lines[1:]]
        return lines


def _install_async_cells(shell: Any) -> bool:
    """Make %think cells awaitable where the kernel runs cells on asyncio (ipykernel)."""
    if not getattr(shell, "autoawait", False) or getattr(shell, "kernel", None) is None:
        return False
    post = getattr(shell, "input_transformers_post", None)
    if post is None:
        return False
    if not any(isinstance(t, _AsyncThink) for t in post):
        post.append(_AsyncThink())
    return True


class _CellRun:
    """One ``%think`` in a cell: events rendered live, run_in_kernel executed here, approval
    cards shown (buttons that work while the cell runs, when the cell is awaited)."""

    def __init__(self, magics: ThinkMagics, request: str, out_name: str | None) -> None:
        from .namespace import summarize_namespace
        from .render import Transcript

        self.magics = magics
        self.request = request
        self.out_name = out_name
        shell = magics.shell
        hidden = set(getattr(shell, "user_ns_hidden", {}) or {})
        self.context = "The user's Python variables:\n" + (
            summarize_namespace(shell.user_ns, hidden) or "(none)"
        )
        self.runtime = magics.runtime()
        self.interval = float(self.runtime.config.display_interval)
        self.view = Transcript()
        self.display_id = uuid.uuid4().hex
        self.meta = {"think": {"session_id": self.runtime.session_id}}
        self.answer: str | None = None
        self.cards: dict[str, Any] = {}
        self.widgets = False
        # The transcript is first shown like any pending update, one display interval after
        # the cell starts: a run that ends sooner shows one display, not three (each display
        # message flushes stdout and stderr through ipykernel's IO thread, ~1-2 ms apiece).
        self.shown = False

    # -- rendering ---------------------------------------------------------------------------

    def show(self, final: bool = False) -> None:
        """Show the transcript display of this cell, or update it once it is shown."""
        md = self.view.render(final=final, now=time.monotonic())
        bundle = {"text/markdown": md, "text/plain": md}
        if not self.shown:
            self.shown = True
            display(bundle, raw=True, display_id=self.display_id, metadata=self.meta)
        else:
            update_display(bundle, raw=True, display_id=self.display_id, metadata=self.meta)

    def _show_first(self) -> None:
        """Show the transcript before anything that must appear below it."""
        if not self.shown:
            self.show()

    def feed(self, event: Any) -> bool:
        """Handle one item from the run; True when the transcript changed."""
        from .agent.events import ApprovalRequested, ApprovalResolved, Chat, ErrorEvent, ToolResult

        if isinstance(event, KernelExec):
            self._show_first()
            self._execute(event)
            return False
        if isinstance(event, ToolResult) and event.display:
            self._show_first()
            # Figures and screenshots from sandboxed tools, below the transcript (our
            # ``think`` metadata is not a MIME type and stays out of the notebook).
            for bundle in event.display:
                data = {k: v for k, v in bundle.items() if "/" in k}
                if data:
                    display(data, raw=True)
        if isinstance(event, ApprovalRequested):
            self._card(event.to_dict())
        elif isinstance(event, ApprovalResolved):
            card = self.cards.get(event.id)
            if card is not None:
                card.resolved(event.to_dict())
        changed = self.view.feed(event, time.monotonic())
        if isinstance(event, Chat):
            self.answer = event.content
        elif isinstance(event, ErrorEvent):
            self.answer = None
        return changed

    def _execute(self, request: KernelExec) -> None:
        try:
            request.future.set_result(execute(self.magics.shell, request.code))
        except BaseException as e:  # the future must be answered, whatever happened
            request.future.set_exception(e)
            if isinstance(e, KeyboardInterrupt):
                raise

    def _card(self, event: dict[str, Any]) -> None:
        if not self.widgets:
            return  # a blocked cell cannot receive clicks: decide in the sidebar or the API
        from .approvals.widget import ApprovalCard

        loop = self.magics.loop
        runtime = self.runtime

        def decide(frame: dict[str, Any]) -> None:
            asyncio.run_coroutine_threadsafe(runtime.resolve_approval(event["id"], frame), loop)

        card = ApprovalCard(event, decide)
        self.cards[event["id"]] = card
        self._show_first()
        display(card.widget)

    def finish(self) -> None:
        """Final render; ``-o NAME`` keeps the answer."""
        self.show(final=True)
        if self.out_name:
            value = self.answer if self.answer is not None else self.view.final_text
            self.magics.shell.user_ns[self.out_name] = value

    # -- drivers -----------------------------------------------------------------------------

    def _produce(self, put: Any) -> concurrent.futures.Future[None]:
        from .agent.events import ErrorEvent

        runtime, request, context = self.runtime, self.request, self.context

        async def produce() -> None:
            try:
                async for event in runtime.run(request, context=context):
                    put(event)
            except Exception as e:  # a bug below us: a message in the cell, not a traceback
                put(ErrorEvent(f"internal error: {type(e).__name__}: {e}", "internal"))
            finally:
                put(_DONE)

        return asyncio.run_coroutine_threadsafe(produce(), self.magics.loop)

    def run_sync(self) -> None:
        """Drive the run from a cell that blocks (no asyncio loop in this thread)."""
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.magics._cell_sink = events.put
        fut = self._produce(events.put)
        last, dirty = time.monotonic(), True  # the first display is a pending update
        try:
            while True:
                wait = max(0.0, last + self.interval - time.monotonic()) if dirty else 0.5
                try:
                    event = events.get(timeout=wait)
                except queue.Empty:
                    event = None
                if event is _DONE:
                    break
                if event is not None:
                    dirty = self.feed(event) or dirty
                now = time.monotonic()
                tick = event is None and self.view.status == "waiting"  # retry countdown
                if (dirty and now - last >= self.interval) or tick:
                    self.show()
                    last, dirty = now, False
        except KeyboardInterrupt:
            fut.cancel()  # cancels the task on the private loop
            with contextlib.suppress(Exception):
                concurrent.futures.wait([fut], INTERRUPT_GRACE)
            self.view.add_note("*Interrupted.*")
            self.show(final=True)
            raise
        finally:
            self.magics._cell_sink = None
        self.finish()

    async def run_async(self) -> None:
        """Drive the run from an awaited cell: the kernel keeps dispatching comms."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()

        def put(item: Any) -> None:
            loop.call_soon_threadsafe(events.put_nowait, item)

        self.widgets = True
        self.magics._cell_sink = put
        fut = self._produce(put)
        last, dirty = time.monotonic(), True  # the first display is a pending update
        try:
            while True:
                wait = max(0.0, last + self.interval - time.monotonic()) if dirty else 0.5
                try:
                    event = await asyncio.wait_for(events.get(), wait)
                except TimeoutError:
                    event = None
                if event is _DONE:
                    break
                if event is not None:
                    dirty = self.feed(event) or dirty
                now = time.monotonic()
                tick = event is None and self.view.status == "waiting"
                if (dirty and now - last >= self.interval) or tick:
                    self.show()
                    last, dirty = now, False
        except (asyncio.CancelledError, KeyboardInterrupt):
            fut.cancel()
            self.view.add_note("*Interrupted.*")
            self.show(final=True)
            with contextlib.suppress(Exception):
                await asyncio.to_thread(concurrent.futures.wait, [fut], INTERRUPT_GRACE)
            raise _Stopped() from None
        finally:
            self.magics._cell_sink = None
        self.finish()
