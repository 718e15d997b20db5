"""``%think`` / ``%%think`` for any IPython kernel (``%load_ext think_kernel``).

    %think -o answer what columns does df have?
    %%think
    plot the distribution of df.price and save it as price.png

The agent sees a compact summary of the notebook's variables (:mod:`think_kernel.kernel.namespace`).
It runs on a private asyncio loop in a daemon thread (IPython runs magics synchronously, and the
kernel's own loop is blocked while a cell runs); the cell's thread renders its events as a live
Markdown display, batched like the think kernel's (:mod:`.cellrun`). Ctrl-C / the stop
button raise KeyboardInterrupt in the cell's thread: we cancel the run on the private loop, show
"Interrupted." and re-raise, so the kernel aborts queued cells and stays alive.

Loading is cheap: heavy modules (the runtime, the model client and ``httpx``) are imported on
the private thread right after ``%load_ext`` returns, so the first ``%think`` usually finds them
warm.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display

from ..heap import old_objects_frozen
from ..safeoutput import safe_bundle
from .cellrun import CellRun
from .userkernel import make_run_in_kernel

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
        with old_objects_frozen():  # the user's heap is not walked again by each pass
            from ..collab.linked import linked_setup
            from ..config import ThinkConfig
            from ..runtime import Runtime
            from ..store.location import store_dir
            from .link import start_link
            from .resume import notebook_key, own_notebook, remember_session, remembered_session

        root = Path(os.getcwd())
        key = notebook_key()
        config = ThinkConfig(parent=self.shell)
        # With a Jupyter server (the kernel was started by one), the agent edits through its
        # collaboration rooms, like a think kernel: the notebook this cell runs in changes
        # live in the open tab, never behind its back on disk. Approvals decided
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
            runtime.services.notebooks = linked["notebooks"]
        runtime.tools.add(make_run_in_kernel(self._submit))
        await runtime.start()
        remember_session(runtime.store_dir, key, runtime.session_id)
        self._runtime = runtime
        # The model client's first request would load its HTTP backend: load it now, on
        # this loop, while the user types the first %%think.
        asyncio.get_running_loop().call_soon(runtime.prewarm_model)
        if self._link is not None:
            await self._link.runtime()  # its events reach the server (the sidebar) from now
            # A reminder set here wakes the server's scheduler at once; without a
            # server, %%think reminders wait for one (no run can start in this kernel alone).
            from ..schedules.notebook import KernelReminders

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
        CellRun(self, request, out_name).run_sync()

    async def _ask_async(self, request: str, out_name: str | None) -> None:
        """The same, awaited by the cell: the kernel dispatches widget clicks meanwhile."""
        if not request:
            print("usage: %think [-o NAME] REQUEST, or %%think [-o NAME] with the request below")
            return
        await CellRun(self, request, out_name).run_async()

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
            display(
                safe_bundle({"text/markdown": f"**Error:** {msg}", "text/plain": msg}), raw=True
            )
            return
        if reply.session_changed:
            remember_session(runtime.store_dir, notebook_key(), runtime.session_id)
        display(
            safe_bundle({"text/markdown": reply.markdown, "text/plain": reply.markdown}), raw=True
        )

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

    @line_magic
    def think_checkpoints(self, line: str) -> None:
        """``%think_checkpoints``: the checkpoints of this session, one per request."""
        self._command("think_checkpoints", line)

    @line_magic
    def think_rewind(self, line: str) -> None:
        """``%think_rewind [N|ID] [--files|--conversation|--both]``: back to before a request."""
        self._command("think_rewind", line)

    @line_magic
    def think_agent(self, line: str) -> None:
        """``%think_agent [NAME|default]``: this session's agent type."""
        self._command("think_agent", line)

    @line_magic
    def think_memory(self, line: str) -> None:
        """``%think_memory [undo [ID]|search WORDS]``: your memory file and its undo."""
        self._command("think_memory", line)


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
