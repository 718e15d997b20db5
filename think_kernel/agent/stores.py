"""What the agent loop needs of a store: three small protocols, one per kind of record.

The loop records a conversation (:class:`MessageStore`), keeps large contents and images aside
(:class:`BlobStore`) and logs what it did (:class:`RunLog`). ``think_kernel.store.Store`` is all
three (a subagent's ``FacetStore`` too), and so is anything else with these methods:

    agent = Agent(model, tools, store, system="...", model_name="m")  # store: AgentStore
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class MessageStore(Protocol):
    """The messages of a conversation, in order.

    ``rows = await store.get_messages(sid, statuses=("complete",))``, then
    ``row = await store.add_message(sid, "assistant", "", status="streaming")`` and
    ``await store.update_message(row["id"], content=text, status="complete")``.
    """

    async def get_messages(
        self,
        session_id: str,
        before: int | None = None,
        limit: int | None = None,
        statuses: Iterable[str] | None = None,
        facet: str | None = None,
    ) -> list[dict[str, Any]]:
        """Messages in order (``statuses`` filters them)."""
        ...

    async def get_message(self, message_id: str) -> dict[str, Any] | None:
        """One message, or None."""
        ...

    async def add_message(
        self, session_id: str, role: str, content: str = "", **fields: Any
    ) -> dict[str, Any]:
        """Append a message; returns its row."""
        ...

    async def update_message(self, message_id: str, **fields: Any) -> None:
        """Change fields of a message."""
        ...


class BlobStore(Protocol):
    """Contents kept beside the rows: ``key = await store.save_blob(data)``."""

    async def save_blob(self, data: bytes) -> str:
        """Keep bytes; returns their key."""
        ...

    async def load_blob(self, key: str) -> bytes:
        """The bytes of a key ``save_blob`` returned."""
        ...

    async def message_content(self, message: dict[str, Any]) -> str:
        """A message's whole content (its row may hold a preview of it)."""
        ...


class RunLog(Protocol):
    """What a run did: model calls' usage, tool calls, and the approvals they waited for."""

    async def add_usage(
        self,
        session_id: str,
        *,
        role: str,
        model: str,
        purpose: str = "step",
        message_id: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        tokens_cached: int = 0,
        tokens_reasoning: int = 0,
        cost: float | None = None,
        estimated: bool = False,
    ) -> int:
        """Record one model call."""
        ...

    async def log_action(self, **row: Any) -> str:
        """Append one action-log row; returns its id."""
        ...

    async def approval_for_call(self, session_id: str, call_id: str) -> dict[str, Any] | None:
        """The approval a tool call waited for, or None."""
        ...


class AgentStore(MessageStore, BlobStore, RunLog, Protocol):
    """Everything the loop records: what :class:`~think_kernel.agent.loop.Agent` takes."""
