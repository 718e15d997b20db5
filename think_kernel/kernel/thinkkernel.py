"""The ``think`` Jupyter kernel: a cell is a request to the agent; events become cell output.

The kernel is thin: the agent loop lives in :class:`~think_kernel.runtime.Runtime`, built and
closed by :mod:`.lifecycle`; one cell's request in :mod:`.cellrequest` (its live output in
:mod:`.celloutput`, event -> Markdown in :mod:`.render`, the ``%think_*`` commands in
:mod:`.commands`, code cells in :mod:`.cellcode`); completion in :mod:`.completion`. This
module only turns those into Jupyter messages and owns the kernel's tasks and signals.

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
import functools
import logging
import os
import signal
from pathlib import Path
from typing import Any

from ipykernel.ipkernel import IPythonKernel
from traitlets import Type

from .. import __version__
from ..config import ThinkConfig
from ..runtime import Runtime
from ..safeoutput import safe_bundle
from . import completion
from .cellrequest import CellRequest, error_reply
from .host import ChatHost, hosts_sessions
from .lifecycle import KernelRuntime
from .link import start_link

log = logging.getLogger(__name__)

# Messages whose data reaches the page; what the model or sandboxed code wrote is in them.
DISPLAYS = frozenset({"display_data", "update_display_data", "execute_result"})
BANNER = f"""Think {__version__}: a coding agent in Jupyter.
Type a request in a cell; %%python / %%bash cells run code; %think_help lists the commands."""


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
        self.life = KernelRuntime(self.runtime_class, lambda: ThinkConfig(parent=self))
        self._run_task: asyncio.Future[Any] | None = None
        self._run_loop: asyncio.AbstractEventLoop | None = None
        self._main_loop: asyncio.AbstractEventLoop | None = None
        self._background: set[asyncio.Future[Any]] = set()
        self.host: ChatHost | None = None  # set when the link starts (a hosting chat kernel)

    @property
    def runtime(self) -> Runtime | None:
        """The runtime, once the first request (or chat) has built it."""
        return self.life.runtime

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
        # beside the kernel's start, not in a kernel_info reply.
        from ..sandbox.tiers import detect_tier

        self._track(self._main_loop.run_in_executor(None, detect_tier))
        try:
            # ipykernel ignores SIGINT between cells; a chat run (no cell) must still stop
            # on a kernel interrupt, so SIGINT cancels runs at any time.
            signal.signal(signal.SIGINT, self._on_sigint)
        except ValueError:  # not the main thread: interrupt_request still works
            log.debug("SIGINT handler not installed", exc_info=True)
        # A chat kernel of a server that shares kernels between chats hosts several sessions.
        self.host = ChatHost(self.life) if hosts_sessions(os.environ) else None
        link = self.life.link = start_link(self.ensure_runtime, host=self.host)
        if link is not None:
            link.on_run = self._chat_status
            if os.environ.get("THINK_CHAT_KERNEL"):
                self._track(asyncio.ensure_future(self.life.prepare_chat()))

    def _track(self, task: asyncio.Future[Any]) -> None:
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _chat_status(self, busy: bool) -> None:
        # A chat run has no execute_request: publish busy / idle ourselves so that the
        # server's kernel API (and its culler) see a working kernel as busy.
        state = "busy" if busy else "idle"
        self.send_iopub("status", {"execution_state": state}, {})

    async def ensure_runtime(self) -> Runtime:
        """Create and start the runtime on first use, resuming the remembered session."""
        return await self.life.ensure_runtime()

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
        if self.life.link is not None:
            loop.call_soon_threadsafe(self.life.link.cancel_runs)
        sandbox = getattr(self.runtime, "sandbox", None)
        if sandbox is not None:
            loop.call_soon_threadsafe(self._interrupt_sandbox, sandbox)

    def _interrupt_sandbox(self, sandbox: Any) -> None:
        self._track(asyncio.ensure_future(sandbox.interrupt()))

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
        send = functools.partial(self.send_iopub, parent=self.get_parent("shell"))
        cell = CellRequest(self.life, send, silent=silent, count=count)
        task = asyncio.ensure_future(cell.run(code))
        self._run_task, self._run_loop = task, asyncio.get_running_loop()
        try:
            await asyncio.wait({task})
        finally:
            self._run_task = None
        if task.cancelled():
            reply = error_reply("KeyboardInterrupt", "the run was interrupted")
        else:
            reply = task.result()
        reply.setdefault("user_expressions", {})
        reply.setdefault("payload", [])
        reply["execution_count"] = count
        return reply

    # -- completion, inspection, is_complete ----------------------------------------------------

    def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:  # type: ignore[override]
        """Complete magic names at the start of a line, else workspace paths."""
        return completion.complete(code, cursor_pos, Path.cwd())

    def do_inspect(  # type: ignore[override]
        self, code: str, cursor_pos: int, detail_level: int = 0, omit_sections: Any = ()
    ) -> dict[str, Any]:
        """Help for the ``%think_*`` command under the cursor."""
        return completion.inspect(code)

    def do_is_complete(self, code: str) -> dict[str, Any]:  # type: ignore[override]
        """Requests are always complete; ``%%python`` bodies are checked as Python."""
        return completion.is_complete(code)

    def do_history(self, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """IPython's history of requests, with the real session number for the current one."""
        reply: dict[str, Any] = super().do_history(*args, **kwargs)
        assert self.shell is not None and self.shell.history_manager is not None
        current = self.shell.history_manager.session_number
        # IPython reports the running session as 0 in ``range`` replies; clients (and
        # jupyter_kernel_test) expect the number ``tail`` gave them.
        reply["history"] = [(s or current, n, h) for s, n, h in reply.get("history", [])]
        return reply

    async def _close(self) -> None:
        if self.host is not None:
            await self.host.close()
        await self.life.close()

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:  # type: ignore[override]
        """Close the runtime (store, sandbox) before the process exits; chat runs are left
        as they are in the store (a shutdown is not a Stop)."""
        # ipykernel answers shutdown_request on its control thread; the runtime, the link and
        # their tasks belong to the main loop (awaited from here, their futures fail).
        loop = self._main_loop
        close = self._close
        if loop is not None and loop.is_running() and loop is not asyncio.get_running_loop():
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(close(), loop))
        else:
            await close()
        return super().do_shutdown(restart)
