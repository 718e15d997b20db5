"""Where the server keeps what sandboxed code must not reach: the link-safe contents manager,
and jupyter-collaboration's session file and Yjs history outside the workspace.

    install(serverapp, store_dir, root)   # when the extension links (before collaboration)
    check(serverapp, store_dir, log)      # when it loads: warn about a link-following save
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from jupyter_server.services.contents.filecheckpoints import FileCheckpoints
from jupyter_server.services.contents.fileio import FileManagerMixin

from .contents import ThinkCheckpoints, ThinkContentsManager
from .ystore import place_ystore

SESSION_FILE = "collaboration_sessions.json"


def install(serverapp: Any, store_dir: Path, root: str) -> None:
    """Install the link-safe contents manager (unless another one is configured) and keep
    jupyter-collaboration's session file and history out of the workspace."""
    configured = serverapp.config.get("ServerApp", {})
    if "contents_manager_class" not in configured:
        serverapp.contents_manager_class = ThinkContentsManager
    ydoc = serverapp.config.get("YDocExtension", {})
    if not ydoc.get("session_store_path"):
        serverapp.config.YDocExtension.session_store_path = str(store_dir / SESSION_FILE)
    # The rooms' Yjs history too (linked before jupyter_server_ydoc, which copies this).
    place_ystore(serverapp, store_dir, root)


def check(serverapp: Any, store_dir: Path, log: logging.Logger) -> None:
    """Warn when saves may follow links planted by sandboxed code."""
    cm = serverapp.contents_manager
    if isinstance(cm, FileManagerMixin) and not isinstance(cm, ThinkContentsManager):
        log.warning(
            "Think: the contents manager %s follows symbolic links when it saves; code "
            "the agent runs can plant links in the workspace and have a save write "
            "outside it with this server's rights. Use jupyter_ext.collab.contents."
            "ThinkContentsManager (or a subclass) as ServerApp.contents_manager_class.",
            type(cm).__name__,
        )
    checkpoints = getattr(cm, "checkpoints", None)
    if isinstance(checkpoints, FileCheckpoints) and not isinstance(checkpoints, ThinkCheckpoints):
        log.warning(
            "Think: the checkpoints class %s follows symbolic links; use "
            "jupyter_ext.collab.contents.ThinkCheckpoints.",
            type(checkpoints).__name__,
        )
    settings = serverapp.web_app.settings
    if not settings.get("collaborative_session_store_path"):
        settings["collaborative_session_store_path"] = str(store_dir / SESSION_FILE)
