"""Think for Jupyter: the server extension (durable store, REST + WebSocket API, kernel link)."""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Where jupyter_server finds the extension."""
    from .app import ThinkExtension, preload_first_kernel

    preload_first_kernel()
    return [{"module": "jupyter_ext", "app": ThinkExtension}]
