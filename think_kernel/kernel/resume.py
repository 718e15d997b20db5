"""Which agent session a kernel resumes: stable across kernel restarts.

A kernel cannot read the notebook it serves, so the notebook metadata is out of reach at start.
Instead each workspace's store folder (outside the workspace, see
:mod:`think_kernel.store.location`) keeps a small pointer file, ``kernel-sessions.json``, that
maps a notebook to its session id:

- ``THINK_SESSION`` (set by whoever starts the kernel, e.g. the server extension for a chat
  session) wins;
- else the notebook path jupyter_server gives kernels in ``JPY_SESSION_NAME`` is the key;
- else (nbclient, ``jupyter console``, tests) the key is ``"<default>"``: the folder's last
  session.

``%think_session new`` / ``%think_session ID`` update the pointer, so a restarted kernel resumes
the history the user chose. Every cell output also carries ``{"think": {"session_id": ...}}`` in
its metadata, so a saved notebook records which session produced it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ..safefs import SafeRoot

POINTER_FILE = "kernel-sessions.json"
DEFAULT_KEY = "<default>"


def notebook_key(prefix: str = "") -> str:
    """The pointer key for this process: the notebook path from jupyter_server, else default."""
    name = os.environ.get("JPY_SESSION_NAME", "").strip()
    return f"{prefix}{name or DEFAULT_KEY}"


def _read(store_dir: Path) -> dict[str, str]:
    try:
        data = json.loads((Path(store_dir) / POINTER_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def remembered_session(store_dir: Path, key: str) -> str | None:
    """The session id to resume: ``THINK_SESSION``, else the pointer for ``key``, else None."""
    explicit = os.environ.get("THINK_SESSION", "").strip()
    if explicit:
        return explicit
    return _read(store_dir).get(key)


def remember_session(store_dir: Path, key: str, session_id: str) -> None:
    """Record ``session_id`` for ``key`` (atomic replace; failures only cost the resume)."""
    data = _read(store_dir)
    if data.get(key) == session_id:
        return
    data[key] = session_id
    with contextlib.suppress(OSError):
        SafeRoot(store_dir).write_bytes(
            POINTER_FILE, json.dumps(data, indent=1, sort_keys=True).encode("utf-8")
        )


def own_notebook(root: Path, server_root: str | None = None) -> str:
    """The notebook this kernel serves, relative to ``root`` (the agent's workspace), or ""
    when it is unknown or outside the workspace. jupyter_server gives it in
    ``JPY_SESSION_NAME``: an absolute path, or an API path relative to the server root."""
    name = os.environ.get("JPY_SESSION_NAME", "").strip()
    if not name:
        return ""
    path = Path(name)
    if not path.is_absolute():
        if server_root:
            path = Path(server_root) / path
        elif (Path(root) / path.name).is_file():
            path = Path(root) / path.name  # the kernel starts in the notebook's folder
        else:
            return ""
    try:
        return path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return ""
