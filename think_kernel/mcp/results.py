"""An MCP ``CallToolResult`` as a Think tool output (pure).

Text blocks are what the model reads; images become display bundles for the cell and the
sidebar (and a line of text saying they are there); embedded resources give their text, links
their URI; ``structuredContent`` is shown as JSON when the server sent no text.
"""

from __future__ import annotations

import json
from typing import Any

from ..tools.base import ToolOutput

MAX_IMAGE_CHARS = 8 * 1024 * 1024  # base64 characters of one image the cell is shown


def to_output(result: Any, server: str, tool: str) -> ToolOutput:
    """The ToolOutput of a ``CallToolResult``; ``is_error`` results are failed outputs."""
    texts: list[str] = []
    display: list[dict[str, Any]] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(str(block.text))
        elif kind in ("image", "audio"):
            mime = str(getattr(block, "mime_type", "") or f"{kind}/*")
            data = str(getattr(block, "data", "") or "")
            texts.append(f"[{kind} {mime}, {len(data) * 3 // 4:,} bytes]")
            shown = mime in ("image/png", "image/jpeg") and len(data) <= MAX_IMAGE_CHARS
            if kind == "image" and shown:
                display.append({mime: data})
        elif kind == "resource":
            res = block.resource
            text = getattr(res, "text", None)
            texts.append(text if isinstance(text, str) else f"[resource {res.uri}, binary]")
        elif kind == "resource_link":
            texts.append(f"[resource {getattr(block, 'uri', '')}]")
    structured = getattr(result, "structured_content", None)
    if not texts and structured is not None:
        texts.append(json.dumps(structured, indent=1, default=str))
    text = "\n".join(texts) if texts else "(no output)"
    if getattr(result, "is_error", False):
        said = f"MCP server {server!r} says {tool} failed: {text}"
        return ToolOutput(text=f"Error: {said}", ok=False, error=said[:2000], display=display)
    return ToolOutput(text=text, display=display)
