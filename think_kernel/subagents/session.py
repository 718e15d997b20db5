"""A runtime's subagents: made once its store is open, and what a dead kernel left running
in a session recovered once per session.

    delegation = SessionSubagents(runtime, TasksConfig(config=cfg), emit=..., durable=...)
    subagents = delegation.start(store)        # with the store (idempotent)
    delegation.fresh(session_id)               # a session made just now: nothing to recover
    await delegation.recover(session_id)       # before the session's first request
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..tasks.board import TaskBoard
from ..tasks.config import TasksConfig
from .manager import Subagents
from .runner import Host

if TYPE_CHECKING:
    from ..agent.events import Event
    from ..store import Store

log = logging.getLogger(__name__)


class SessionSubagents:
    """The task board and subagents of one runtime, and which sessions were recovered."""

    def __init__(
        self,
        host: Host,
        config: TasksConfig,
        *,
        emit: Callable[[Event], Any],
        durable: Callable[[], bool],
    ) -> None:
        self.host = host
        self.config = config
        self.emit = emit
        #: Whether a server watches these subagents through durable schedules.
        self.durable = durable
        self.manager: Subagents | None = None
        self._recovered: set[str] = set()

    def start(self, store: Store) -> Subagents:
        """The subagents, made with ``store`` the first time."""
        if self.manager is None:
            board = TaskBoard(store, self.emit, self.config.limits)
            self.manager = Subagents(
                self.host, board, self.config, emit=self.emit, durable=self.durable
            )
        return self.manager

    def fresh(self, session_id: str) -> None:
        """``session_id`` was made just now: no dead kernel left anything in it."""
        self._recovered.add(session_id)

    async def recover(self, session_id: str) -> None:
        """Once per session (``start`` first): end what a dead kernel left running in it,
        reported to the model and to the watchers. Done at the first request, not at start:
        then the watchers (the server link's sink) are listening."""
        assert self.manager is not None, "start() first"
        if session_id in self._recovered:
            return
        self._recovered.add(session_id)
        try:
            await self.manager.recover(session_id)
        except Exception:  # best effort: the server's durable checks find them too
            log.exception("recovering subagents failed")

    async def close(self) -> None:
        """Stop every subagent (before the sandbox: their workers close first)."""
        if self.manager is not None:
            await self.manager.close()
