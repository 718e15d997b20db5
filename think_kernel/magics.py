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

_DONE = object()
INTERRUPT_GRACE = 5.0


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
        self._runtime_future: concurrent.futures.Future[Any] | None = None
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
        from .config import ThinkConfig
        from .resume import notebook_key, remember_session, remembered_session
        from .runtime import Runtime
        from .store.location import store_dir

        root = Path(os.getcwd())
        key = notebook_key()
        config = ThinkConfig(parent=self.shell)
        sid = remembered_session(store_dir(root, config.store_path), key)
        runtime = Runtime(
            config,
            root,
            session_id=sid,
            kind="magic",
            session_path=os.environ.get("JPY_SESSION_NAME", "").strip(),
        )
        await runtime.start()
        remember_session(runtime.store_dir, key, runtime.session_id)
        self._runtime = runtime
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

    def _ask(self, request: str, out_name: str | None) -> None:
        if not request:
            print("usage: %think [-o NAME] REQUEST, or %%think [-o NAME] with the request below")
            return
        from .agent.events import Chat, ErrorEvent
        from .namespace import summarize_namespace
        from .render import Transcript

        hidden = set(getattr(self.shell, "user_ns_hidden", {}) or {})
        context = "The user's Python variables:\n" + (
            summarize_namespace(self.shell.user_ns, hidden) or "(none)"
        )
        runtime = self.runtime()
        interval = float(runtime.config.display_interval)
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()

        async def produce() -> None:
            try:
                async for event in runtime.run(request, context=context):
                    events.put(event)
            except Exception as e:  # a bug below us: a message in the cell, not a traceback
                events.put(ErrorEvent(f"internal error: {type(e).__name__}: {e}", "internal"))
            finally:
                events.put(_DONE)

        view = Transcript()
        display_id = uuid.uuid4().hex
        meta = {"think": {"session_id": runtime.session_id}}

        def show(final: bool = False, first: bool = False) -> None:
            md = view.render(final=final, now=time.monotonic())
            bundle = {"text/markdown": md, "text/plain": md}
            if first:
                display(bundle, raw=True, display_id=display_id, metadata=meta)
            else:
                update_display(bundle, raw=True, display_id=display_id, metadata=meta)

        fut = asyncio.run_coroutine_threadsafe(produce(), self.loop)
        show(first=True)
        last, dirty, answer = 0.0, False, None
        try:
            while True:
                wait = max(0.0, last + interval - time.monotonic()) if dirty else 0.5
                try:
                    event = events.get(timeout=wait)
                except queue.Empty:
                    event = None
                if event is _DONE:
                    break
                if event is not None:
                    dirty = view.feed(event, time.monotonic()) or dirty
                    if isinstance(event, Chat):
                        answer = event.content
                    elif isinstance(event, ErrorEvent):
                        answer = None
                now = time.monotonic()
                tick = event is None and view.status == "waiting"  # retry countdown
                if (dirty and now - last >= interval) or tick:
                    show()
                    last, dirty = now, False
        except KeyboardInterrupt:
            fut.cancel()  # cancels the task on the private loop
            with contextlib.suppress(Exception):
                concurrent.futures.wait([fut], INTERRUPT_GRACE)
            view.add_note("*Interrupted.*")
            show(final=True)
            raise
        show(final=True)
        if out_name:
            self.shell.user_ns[out_name] = answer if answer is not None else view.final_text
        return None

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
    def think_attach(self, line: str) -> None:
        """``%think_attach [PATH|-]``: attach a workspace file or image to the next request."""
        self._command("think_attach", line)

    @line_magic
    def think_output(self, line: str) -> None:
        """``%think_output [CALL_ID]``: the whole output of a tool call."""
        self._command("think_output", line)
