"""The base of the Store's parts (records, tasks, schedules, ...): the connection and the
statement helpers that :class:`~think_kernel.store.store.Store` provides to each of them.

    class TasksMixin(StorePart):
        async def list_tasks(self, sid: str) -> list[dict[str, Any]]:
            return await self._all("SELECT * FROM tasks WHERE session_id = ?", (sid,))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .loopdb import LoopConnection


class StorePart:
    """What every part of the Store relies on (declared for the type checker only)."""

    db: LoopConnection

    if TYPE_CHECKING:  # provided by Store

        async def _one(self, sql: str, params: Iterable[Any] = ()) -> dict[str, Any] | None: ...
        async def _all(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]: ...
        async def _write(
            self, sql: str, params: Iterable[Any] = (), many: bool = False, rowid: bool = False
        ) -> int: ...
