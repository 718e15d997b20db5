"""The think kernel's one runtime, from its start to its close.

    life = KernelRuntime(runtime_class, lambda: ThinkConfig(parent=kernel))
    life.link = start_link(life.ensure_runtime)   # or None without a server
    runtime = await life.ensure_runtime()         # first use builds (or resumes) it
    await life.close()                            # at shutdown, on the kernel's loop

A notebook's kernel resumes the session it remembers for the notebook; a chat kernel serves
the sidebar session the server started it for, and may build its runtime ahead of it
(:meth:`KernelRuntime.prepare_chat`) so that the first chat does not wait.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..apps import link_items as app_items
from ..collab.linked import linked_setup
from ..config import ThinkConfig
from ..jobs import link_items
from ..runtime import Runtime
from ..schedules.notebook import KernelReminders
from ..store.location import store_dir
from .resume import notebook_key, remember_session, remembered_session

log = logging.getLogger(__name__)

LINK_WAIT = 5.0  # seconds the first request waits for the server link before going local


class KernelRuntime:
    """Builds the kernel's runtime once (under a lock), starts its reminders, closes both."""

    def __init__(self, runtime_class: type[Runtime], config: Callable[[], ThinkConfig]) -> None:
        self.runtime_class = runtime_class
        self.config = config
        self.link: Any = None  # the server link, once the kernel has started it
        self.runtime: Runtime | None = None
        self.reminders: KernelReminders | None = None
        self.session_key = notebook_key()
        self._prepared: Runtime | None = None  # a chat kernel's runtime before its session
        self._lock = asyncio.Lock()

    async def _linked_setup(self, root: Path, config: ThinkConfig) -> dict[str, Any]:
        """With a server: its store, and edits through its collaboration rooms."""
        return await linked_setup(self.link, root, config, LINK_WAIT)

    async def prepare_chat(self) -> None:
        """A chat kernel (maybe a spare of the server's pool): build the runtime, open the
        store, prepare the sandbox and start the model client before any chat arrives, so the
        first message does not wait for them. No session row is written and nothing runs for
        a session until the first chat frame binds one (``ensure_runtime``). The sandbox
        takes a uid lease, a cgroup and workspace access of its own here, and starts no
        process: its first need (a code tool, a cell, a job) starts them. No other session
        ever held that uid, and it goes with this kernel to the one session that claims it."""
        try:
            async with self._lock:
                if self.runtime is not None or self._prepared is not None:
                    return
                root = Path.cwd()
                config = self.config()
                linked = await self._linked_setup(root, config)
                runtime = self.runtime_class(config, root, workspace=linked.get("workspace"))
                runtime.linked = bool(linked.get("server"))  # it watches our subagents
                if "notebooks" in linked:
                    runtime.services.notebooks = linked["notebooks"]
                await runtime.open_store()
                await runtime.refresh_endpoint()  # the setup card's endpoint, if one is saved
                runtime.prepare_sandbox()
                runtime.prewarm_model()
                self._prepared = runtime
            await runtime.wait_sandbox()
            # Not under the lock: a chat that came meanwhile must not wait for them.
            runtime.prewarm_tools()
            self.link.push({"kind": "prepared"})
        except Exception:  # the first chat then builds it the ordinary way
            log.warning("preparing the chat runtime failed", exc_info=True)

    async def linked_setup(self, root: Path, config: ThinkConfig) -> dict[str, Any]:
        """The store and collaboration rooms a runtime built in this kernel uses."""
        return await self._linked_setup(root, config)

    async def take_prepared(self) -> Runtime | None:
        """The runtime built ahead of any session (a hosting kernel's first chat takes it)."""
        async with self._lock:
            runtime, self._prepared = self._prepared, None
            return runtime

    async def ensure_runtime(self) -> Runtime:
        """Create and start the runtime on first use, resuming the remembered session."""
        async with self._lock:
            if self.runtime is None and self._prepared is not None:
                runtime, self._prepared = self._prepared, None
                # The session comes with the first chat frame (the server claimed us for it).
                link = self.link
                runtime.session_id = (link.session_id if link else None) or runtime.session_id
                runtime.kind = "chat"  # only chat kernels prepare ahead
                await runtime.start()
                self.runtime = runtime
                await self._start_reminders(runtime)
            if self.runtime is None:
                self.runtime = await self._build()
                await self._start_reminders(self.runtime)
                if self.link is not None:
                    # A cell's run is not the server's: its events reach the tabs that
                    # watch this session (the sidebar's cards) only through the link.
                    self.link.attach(self.runtime)
            return self.runtime

    async def _build(self) -> Runtime:
        root = Path.cwd()
        config = self.config()
        linked = await self._linked_setup(root, config)  # may set the store path
        # A chat kernel serves the sidebar session it was started for (no stray
        # notebook session of its own); a notebook's kernel resumes its pointer.
        link = self.link
        chat = ""
        if os.environ.get("THINK_CHAT_KERNEL") and link is not None:
            chat = link.session_id or ""  # set by the chat frame that got us here
        chat = chat or os.environ.get("THINK_SESSION_ID", "").strip()
        sid = chat or remembered_session(store_dir(root, config.store_path), self.session_key)
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
            runtime.services.notebooks = linked["notebooks"]
        await runtime.start()
        runtime.prepare_sandbox()  # its processes start at its first need
        if not chat:
            remember_session(runtime.store_dir, self.session_key, runtime.session_id)
        return runtime

    async def _start_reminders(self, runtime: Runtime) -> None:
        """Reminders: the server fires them when there is one; else this kernel."""
        if self.link is not None:  # the server shows the jobs and keeps their chat awake
            runtime.jobs.attach(link_items(self.link.push), runtime.session_id)
            runtime.apps.attach(app_items(self.link.push))
        self.reminders = KernelReminders(runtime, self.link)
        try:
            await self.reminders.start()
        except Exception:  # reminders are a side feature: the kernel works without them
            log.exception("reminders not started")

    async def reminder_note(self) -> str:
        """Reminders of this session that fired since the last cell ("" when none)."""
        try:
            await self.ensure_runtime()  # (a failure here is the cell's to report)
            if self.reminders is None:
                return ""
            return await self.reminders.take_note() or ""
        except Exception:
            log.exception("could not read fired reminders")
            return ""

    async def close(self) -> None:
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
        link, runtime = self.link, self.runtime
        if link is None or runtime is None or not link.owned_runs():
            return
        try:
            if runtime.store is not None:
                await runtime.store.close()  # the runtime's close later finds it closed
            await link.close()
        except Exception:
            log.exception("leaving the chat runs failed")
