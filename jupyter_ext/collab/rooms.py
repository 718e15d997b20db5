"""Room plumbing of jupyter-collaboration: the ystore class, TCP_NODELAY, history path.

1. **Ystore.** :class:`~jupyter_ext.collab.ystore.ThinkYStore` (re-exported here: configurations
   name ``jupyter_ext.collab.rooms.ThinkYStore``) keeps the rooms' Yjs updates in the workspace's
   store folder; ``jupyter_ext.collab.ystore`` sets it up when the extension is linked.
2. **TCP_NODELAY.** The room websocket does not set it, so small Yjs updates wait for Nagle's
   algorithm and the peer's delayed ACK, which slows every human -> agent -> human round trip.
   :func:`enable_room_nodelay` points the room route at a subclass whose ``open`` sets it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from jupyter_server_ydoc.handlers import YDocWebSocketHandler

from .ystore import ThinkYStore

__all__ = ["NoDelayYDocWebSocketHandler", "ThinkYStore", "enable_room_nodelay", "history_path"]


class NoDelayYDocWebSocketHandler(YDocWebSocketHandler):
    """The room websocket with TCP_NODELAY: each Yjs update leaves at once."""

    async def open(self, room_id: str) -> None:  # type: ignore[override]
        """Disable Nagle's algorithm, then serve the room as usual."""
        self.set_nodelay(True)
        await super().open(room_id)


def _swap_rules(router: Any) -> int:
    count = 0
    for rule in getattr(router, "rules", []):
        target = rule.target
        if isinstance(target, type) and issubclass(target, YDocWebSocketHandler):
            if not issubclass(target, NoDelayYDocWebSocketHandler):
                if target is YDocWebSocketHandler:
                    rule.target = NoDelayYDocWebSocketHandler
                else:  # someone's subclass: keep it, add ours on top
                    rule.target = type(
                        f"NoDelay{target.__name__}", (NoDelayYDocWebSocketHandler, target), {}
                    )
                count += 1
        elif hasattr(target, "rules"):
            count += _swap_rules(target)
    return count


def enable_room_nodelay(web_app: Any, later: bool = False) -> int:
    """Route the collaboration room websocket through :class:`NoDelayYDocWebSocketHandler`.

    Returns how many routes were changed. With ``later=True`` it runs again once the event
    loop turns, after every extension has added its handlers (extension load order is not ours
    to choose).
    """
    count = _swap_rules(web_app.default_router) + _swap_rules(web_app.wildcard_router)
    if later:
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return count
        loop.call_soon(_swap_rules, web_app.default_router)
        loop.call_soon(_swap_rules, web_app.wildcard_router)
    return count


def history_path(ext: Any) -> Path:
    """Where agent edit versions are kept: ``history.db`` in the store folder (outside the
    workspace, next to think.db; see ``think_kernel.store.location``)."""
    return Path(ext.store_dir()) / "history.db"
