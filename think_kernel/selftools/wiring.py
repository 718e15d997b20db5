"""Building a session's :class:`~.library.SelfTools` and its hook before each model step.

runtime.selftools = open_selftools(root, config, runtime.tools)
agent = Agent(..., before_step=step_hook(runtime.selftools, runtime))
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .config import SelfToolsConfig
from .library import SelfTools

if TYPE_CHECKING:
    from ..agent.events import Event
    from ..config import ThinkConfig
    from ..store import Store
    from ..tools.base import ToolRegistry


class Session(Protocol):
    """What the hook reads of the session it runs in (the runtime is one)."""

    store: Store | None
    session_id: str
    current_message_id: str


def open_selftools(root: Path, config: ThinkConfig, registry: ToolRegistry) -> SelfTools:
    """The self-written tools of the workspace at ``root``, kept in ``registry``."""
    return SelfTools(
        root,
        SelfToolsConfig(config=config.config),
        registry,
        trusted=lambda: bool(config.trust_workspace_tools),
    )


def step_hook(tools: SelfTools, session: Session) -> Callable[[], AsyncIterator[Event]]:
    """The agent loop's ``before_step``: refresh the tools, yield the approvals it asks."""

    async def before_step() -> AsyncIterator[Event]:
        if session.store is None:
            return
        for event in await tools.refresh(
            session.store, session.session_id, session.current_message_id
        ):
            yield event

    return before_step
