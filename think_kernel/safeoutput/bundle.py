"""MIME bundles from the model or sandboxed code, reduced to what cannot script the page.

    safe_bundle({"text/html": "<b>hi</b>", "text/plain": "hi"})
    # {"application/vnd.think.untrusted+json": {"data": {...the original...}}, "text/plain": "hi"}

Plain text, PNG / JPEG / GIF and sanitised Markdown pass (:func:`safe_markdown`). Anything else
(HTML, JavaScript, SVG, LaTeX, JSON, widget views...) travels whole inside
:data:`UNTRUSTED_MIME`, which the lab extension renders in a sandboxed frame with no access to
the page, next to a text/plain fallback for other frontends. That MIME type is what a saved
notebook keeps, so reopening it later renders through the same frame.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .markdown import safe_markdown

UNTRUSTED_MIME = "application/vnd.think.untrusted+json"
INERT_IMAGES = ("image/png", "image/jpeg", "image/gif")
PASSING = frozenset({"text/plain", "text/markdown", UNTRUSTED_MIME, *INERT_IMAGES})
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")


def safe_bundle(data: dict[str, Any]) -> dict[str, Any]:
    """The bundle to publish for ``data`` (a MIME type -> value mapping we did not write)."""
    data = {k: v for k, v in data.items() if isinstance(k, str) and "/" in k}
    bad = [k for k in data if k not in PASSING or not _inert_value(k, data[k])]
    if not bad:
        out = _jsonable(data)
        if "text/markdown" in out:
            out["text/markdown"] = safe_markdown(out["text/markdown"])
        return out
    plain = data.get("text/plain")
    if not isinstance(plain, str):
        plain = f"[{', '.join(sorted(bad))} output: shown in a sandboxed frame in JupyterLab]"
    return {UNTRUSTED_MIME: {"data": _jsonable(data)}, "text/plain": plain}


def safe_text_bundle(markdown: str, plain: str | None = None) -> dict[str, Any]:
    """A Markdown display of text we did not write (answers, notes, tool output)."""
    return {
        "text/markdown": safe_markdown(markdown),
        "text/plain": markdown if plain is None else plain,
    }


def scriptable(data: dict[str, Any]) -> list[str]:
    """The MIME types in a published bundle that JupyterLab could run as code or HTML."""
    out = [k for k in data if k not in PASSING]
    md = data.get("text/markdown")
    if isinstance(md, str) and safe_markdown(md) != md:
        out.append("text/markdown (unsanitised)")
    return out


def _inert_value(mime: str, value: Any) -> bool:
    if mime == UNTRUSTED_MIME:  # already wrapped: the frame renders anything in it safely
        return isinstance(value, dict) and isinstance(value.get("data"), dict)
    if not isinstance(value, str):
        return False
    if mime in INERT_IMAGES:
        return bool(_BASE64.match(value))
    return True


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    """The bundle as JSON values (what nbformat can save); the rest as their text."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        try:
            json.dumps(value)
            out[key] = value
        except (TypeError, ValueError):
            out[key] = str(value)
    return out
