"""Collaboration access for a kernel linked to its server, rooted at the notebook's folder.

    workspace, notebooks = linked_access(Path.cwd(), link)

The server edits paths relative to its root; the agent's workspace is the notebook's folder.
:class:`PrefixedLink` puts the folder in front of every ``doc.*`` path, so the
tools keep workspace-relative paths and still cannot reach outside the workspace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..waits import wait_for
from .access import Link, LinkNotebookAccess
from .workspace import CollabWorkspace

log = logging.getLogger(__name__)


class PrefixedLink:
    """A Link whose ``path`` parameters are relative to a folder under the server root."""

    def __init__(self, link: Link, prefix: str) -> None:
        self.link = link
        self.prefix = prefix.strip("/")
        # Unanswered items (a hold's start and end, see CollabWorkspace) go through, where
        # the link can send them, with their path moved like a request's.
        inner = getattr(link, "push", None)
        self._inner_push: Callable[[dict[str, Any]], None] | None = (
            inner if callable(inner) else None
        )
        self.push = self._push if self._inner_push is not None else None

    @property
    def rooms_open(self) -> bool | None:
        """The link's knowledge of open rooms (None: it has none)."""
        return getattr(self.link, "rooms_open", None)

    def _push(self, item: dict[str, Any]) -> None:
        assert self._inner_push is not None
        self._inner_push(self._moved(item))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Forward the request with the path moved under the prefix."""
        return await self.link.request(method, self._moved(params or {}))

    def _moved(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.prefix and isinstance(params.get("path"), str):
            params = {**params, "path": f"{self.prefix}/{params['path'].lstrip('/')}"}
        if self.prefix and isinstance(params.get("paths"), list):
            paths = [f"{self.prefix}/{str(p).lstrip('/')}" for p in params["paths"]]
            params = {**params, "paths": paths}
        return params


def linked_access(root: Path, link: Any) -> tuple[CollabWorkspace, LinkNotebookAccess] | None:
    """Room-backed workspace and notebook access, or None if ``root`` is outside the server's."""
    server_root = getattr(link, "root_dir", None)
    if not server_root:
        return None
    root, base = Path(root).resolve(), Path(server_root).resolve()
    if root != base and base not in root.parents:
        return None
    prefix = root.relative_to(base).as_posix()
    routed = PrefixedLink(link, "" if prefix == "." else prefix)
    return CollabWorkspace(root, routed), LinkNotebookAccess(routed)


async def linked_setup(link: Any, root: Path, config: Any, wait: float) -> dict[str, Any]:
    """With a server link: its store (set on ``config`` unless one is configured) and edits
    through its collaboration rooms: ``{"server": True, "workspace": ..., "notebooks": ...}``
    (``server`` alone when ``root`` lies outside the server's root: the caller works on local
    files, the server still watches its subagents); ``{}`` when there is no link or it does
    not come up within ``wait`` seconds."""
    if link is None:
        return {}
    try:
        await wait_for(link.connected.wait(), wait)
    except TimeoutError:
        log.warning("no link to the server after %s s; working on local files", wait)
        return {}
    if link.store_path and not config.store_path:
        config.store_path = link.store_path
    access = linked_access(root, link)
    if access is None:
        return {"server": True}
    return {"server": True, "workspace": access[0], "notebooks": access[1]}
