"""Room plumbing of jupyter-collaboration: where the ystore lives, TCP_NODELAY, history path.

1. **Ystore location.** ``YDocExtension.get_document`` builds its ystore as
   ``ystore_class(path=..., log=...)`` *without* the server config (jupyter_server_ydoc 3.0.4,
   ``app.py``), so ``SQLiteYStore.db_path`` is ignored and rooms created server side write
   ``.jupyter_ystore.db`` into the server's working directory. :class:`ThinkYStore` computes its
   default path itself, so it is right whichever way the room is created:
   ``<jupyter data dir>/think/ystore.db`` (next to the file id database, whose ids key the
   ystore), configurable with ``ThinkYStore.db_path``. Enable it with
   ``YDocExtension.ystore_class = "jupyter_ext.rooms.ThinkYStore"`` (our
   ``jupyter_server_config.d`` file does).
2. **TCP_NODELAY.** The room websocket does not set it, so small Yjs updates wait for Nagle's
   algorithm: a human -> agent -> human round trip takes ~44 ms instead of ~8 ms.
   :func:`enable_room_nodelay` points the room route at a subclass whose ``open`` sets it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from jupyter_server_ydoc.handlers import YDocWebSocketHandler
from jupyter_server_ydoc.stores import SQLiteYStore
from traitlets import Unicode, default
from traitlets.config import Application


class ThinkYStore(SQLiteYStore):
    """The collaboration ystore at a known, absolute, configurable path (not the cwd)."""

    db_path = Unicode(
        config=True,
        help="""Path of the Yjs update store of the collaboration rooms. Default:
        '<jupyter data dir>/think/ystore.db' (absolute, so the server's working directory
        never matters). A relative path is taken relative to the jupyter data dir.""",
    )

    @default("db_path")
    def _default_db_path(self) -> str:
        return str(Path(jupyter_data_dir()) / "think" / "ystore.db")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("config") is None and Application.initialized():
            # get_document() passes no config; take the running server's (traitlets' usual
            # way to reach the application config), so both room paths use one database.
            kwargs["config"] = Application.instance().config
        super().__init__(*args, **kwargs)
        path = Path(os.path.expanduser(self.db_path))
        if not path.is_absolute():
            path = Path(jupyter_data_dir()) / path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db_path = str(path)


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
