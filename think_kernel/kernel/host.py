"""A chat kernel that hosts several sidebar sessions: one runtime per session, in one process.

    host = ChatHost(life)                        # life: the kernel's KernelRuntime
    link = start_link(kernel.ensure_runtime, host=host)
    runtime = await host.runtime("s_1")          # built on the session's first frame
    await host.release("s_1")                    # the session hibernates: runtime, sandbox go
    await host.close()                           # at shutdown

A kernel is ~50 MB before it does anything, so one kernel per idle chat can never cost a few
MB. A host shares that process between the chats the server assigns to it
(``c.ThinkExtension.sessions_per_kernel``), while everything that makes a session its own
stays per session: its runtime (store rows, tools, model client, approvals, jobs,
reminders), its sandbox (started on first use, under a uid and limits of its own) and its
runs (the link cancels a run by id, never by interrupting the process). Think notebooks
keep one kernel each; only the server's chat kernels become hosts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..apps import link_items as app_items
from ..jobs import link_items
from ..schedules.notebook import KernelReminders

if TYPE_CHECKING:
    from ..runtime import Runtime
    from .lifecycle import KernelRuntime

log = logging.getLogger(__name__)
#: Environment variable the server sets on chat kernels that may host several sessions.
SESSIONS_ENV = "THINK_CHAT_SESSIONS"


def hosts_sessions(environ: Any) -> bool:
    """Whether the server started this kernel to host several chat sessions."""
    try:
        return bool(environ.get("THINK_CHAT_KERNEL")) and int(environ.get(SESSIONS_ENV, 1)) > 1
    except ValueError:
        return False


class ChatHost:
    """The runtimes of the chat sessions one kernel serves, by session id."""

    def __init__(self, life: KernelRuntime) -> None:
        self.life = life
        self.runtimes: dict[str, Runtime] = {}
        self._reminders: dict[str, KernelReminders] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def runtime(self, session_id: str) -> Runtime:
        """The session's runtime: built (or taken from the prepared one) on first use."""
        if not session_id:
            raise ValueError("a hosting kernel serves chat sessions only: no session id given")
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            runtime = self.runtimes.get(session_id)
            if runtime is not None:
                return runtime
            runtime = await self.life.take_prepared()
            if runtime is not None:
                # The spare's runtime (store open, model client warm) goes to its first chat.
                runtime.session_id, runtime.kind = session_id, "chat"
                await runtime.start()
            else:
                runtime = await self._build(session_id)
            self.runtimes[session_id] = runtime
            await self._start_reminders(runtime)
            return runtime

    def all(self) -> list[Runtime]:
        """Every runtime this host holds now."""
        return list(self.runtimes.values())

    async def _build(self, session_id: str) -> Runtime:
        life = self.life
        root = Path.cwd()
        config = life.config()
        linked = await life.linked_setup(root, config)
        runtime = life.runtime_class(
            config, root, session_id=session_id, workspace=linked.get("workspace"), kind="chat"
        )
        runtime.linked = bool(linked.get("server"))
        if "notebooks" in linked:
            runtime.services.notebooks = linked["notebooks"]
        await runtime.start()
        # Its sandbox's uid, cgroup and workspace access are taken now, in the background,
        # and no process starts: its first tool call then waits for the start alone, and a
        # chat that only talks costs its runtime objects.
        runtime.prepare_sandbox()
        return runtime

    async def _start_reminders(self, runtime: Runtime) -> None:
        link = self.life.link
        if link is not None:  # the server shows the jobs and keeps their chat awake
            runtime.jobs.attach(link_items(link.push), runtime.session_id)
            runtime.apps.attach(app_items(link.push))
        reminders = KernelReminders(runtime, link)
        self._reminders[runtime.session_id] = reminders
        try:
            await reminders.start()
        except Exception:  # reminders are a side feature: the session works without them
            log.exception("reminders not started")

    async def release(self, session_id: str) -> bool:
        """Close the session's runtime and sandbox (it hibernates); False if it had none."""
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            runtime = self.runtimes.pop(session_id, None)
            reminders = self._reminders.pop(session_id, None)
            if runtime is None:
                return False
            link = self.life.link
            if link is not None:
                link.detach(runtime)
            await self._close(runtime, reminders)
        # The lock stays: a chat frame that waits on it builds the session's next runtime.
        return True

    async def close(self) -> None:
        """At shutdown: leave the chat runs as a crash would, then close every runtime."""
        link = self.life.link
        if link is not None and link.owned_runs():
            # As KernelRuntime._leave_chat_runs: the store stops taking this process's
            # writes before the runs are cancelled, so no end is recorded for them.
            for runtime in self.runtimes.values():
                if runtime.store is not None:
                    with contextlib.suppress(Exception):
                        await runtime.store.close()
            with contextlib.suppress(Exception):
                await link.close()
        runtimes, self.runtimes = self.runtimes, {}
        for sid, runtime in runtimes.items():
            await self._close(runtime, self._reminders.pop(sid, None))

    @staticmethod
    async def _close(runtime: Runtime, reminders: KernelReminders | None) -> None:
        if reminders is not None:
            try:
                await reminders.close()
            except Exception:
                log.exception("closing reminders failed")
        try:
            await runtime.close()
        except Exception:
            log.exception("closing the runtime of %s failed", runtime.session_id)
