"""The agent's file and notebook access through the collaboration rooms.

Server mode: :mod:`.access` (``LinkNotebookAccess``) and :mod:`.workspace` (``CollabWorkspace``)
over the kernel link. Standalone mode (no server): :func:`local_access`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .standalone import LocalCollabWorkspace, LocalNotebookAccess


def local_access(
    workspace_root: str | os.PathLike[str], store_dir: str | os.PathLike[str] | None = None
) -> tuple[LocalCollabWorkspace, LocalNotebookAccess]:
    """Standalone ``(workspace, notebooks)`` over local files; see :func:`.standalone.local_access`.

    ``workspace`` replaces ``LocalWorkspace`` (``workspace.for_call`` per tool call),
    ``notebooks`` goes to ``ctx.services.notebooks``; ``await notebooks.aclose()`` on close.
    History: ``<store_dir>/ydocs.db`` (default: the workspace's store folder).
    """
    # Imported here: jupyter-ydoc and jupyter_client load only when standalone mode is used.
    from .standalone import local_access as build

    return build(workspace_root, store_dir)
