"""A subagent's view of the parent's store and sandbox: its own conversation and worker.

    store = FacetStore(parent_store, "subagent:t_1a2b", task_id="t_1a2b")
    await store.add_message(session_id, "user", "...")   # stored with facet subagent:t_1a2b
    await store.get_messages(session_id)                  # only that conversation
    await store.log_action(...)                           # the parent's log, tagged t_1a2b

    worker = SandboxWorker(sandbox, "t_1a2b")
    await worker.run_python("x = 1")   # its own warm Python worker in the session's sandbox

Both share what they wrap (the SQLite connection; the session's launcher, uid and limits),
so the loop and the tools run unchanged for a subagent.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from ..store import Store

#: The task the subagent running in this context works on ("" for the parent). Set in the
#: subagent's own asyncio task, so whatever it starts (tool calls, the loopback server of its
#: sandboxed processes) inherits it: their calls back into the agent are tagged with it.
WORKING_ON: ContextVar[str] = ContextVar("think_subagent_task", default="")


def facet_of(task_id: str) -> str:
    """The facet of a subagent's messages (``GET .../messages?facet=...``)."""
    return f"subagent:{task_id}"


class FacetStore(Store):
    """The parent's store (same connection) with one subagent's messages and log tags."""

    def __init__(self, base: Store, task_id: str) -> None:
        super().__init__(base.db, base.path, base.blob_threshold, base.reasoning_limit)
        self.task_id = task_id
        self.facet = facet_of(task_id)
        self.history = base.history

    async def add_message(
        self, session_id: str, role: str, content: str = "", **fields: Any
    ) -> dict[str, Any]:
        """Append a message of the subagent's conversation."""
        fields.setdefault("facet", self.facet)
        return await super().add_message(session_id, role, content, **fields)

    async def get_messages(
        self,
        session_id: str,
        before: int | None = None,
        limit: int | None = None,
        statuses: Iterable[str] | None = None,
        facet: str | None = None,
    ) -> list[dict[str, Any]]:
        """The subagent's conversation (never the parent's)."""
        return await super().get_messages(session_id, before, limit, statuses, facet or self.facet)

    async def log_action(self, **row: Any) -> str:
        """An action-log row of the parent's session, tagged with the subagent's task."""
        row.setdefault("task_id", self.task_id)
        return await super().log_action(**row)

    async def close(self) -> None:
        """Nothing: the connection is the parent's."""


class SandboxWorker:
    """The session's sandbox with a warm Python worker (and processes) of one subagent."""

    def __init__(self, sandbox: Any, key: str) -> None:
        self.sandbox = sandbox
        self.key = key

    @property
    def config(self) -> Any:
        """The session sandbox's settings (timeouts, limits)."""
        return self.sandbox.config

    @property
    def tier(self) -> Any:
        """The session sandbox's tier."""
        return self.sandbox.tier

    async def run_python(self, code: str, **kwargs: Any) -> Any:
        """Python in this subagent's warm worker (or a fresh process)."""
        return await self.sandbox.run_python(code, worker=self.key, **kwargs)

    async def run_bash(self, command: str, **kwargs: Any) -> Any:
        """A bash command, counted as this subagent's process."""
        return await self.sandbox.run_bash(command, worker=self.key, **kwargs)

    async def interrupt(self) -> None:
        """Kill this subagent's running processes only."""
        await self.sandbox.interrupt(worker=self.key)

    async def close(self) -> None:
        """Kill its processes and its warm worker (the session sandbox stays)."""
        await self.sandbox.close_worker(self.key)
