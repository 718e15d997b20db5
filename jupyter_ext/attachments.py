"""Checks of the ``attachments`` of a posted message: nothing a client claims is trusted.

    attachments = await checked_attachments(store, body["attachments"])   # 400 on bad input

Uploaded files (``{"kind": "image" | "file", "blob", "name"}``) must name a stored blob; its
kind, MIME type and size are read again from the stored bytes. Notebook cells
(``{"kind": "cells", "path", "cells": [{"id", "cell_type", "source"}]}``) are bounded in
number and size. A variable's summary from the sidebar's ``@name`` chip
(``{"kind": "variables", "path", "name", "text"}``) is bounded text, like cells: what the
person saw on the chip. At most ``MAX_ATTACHMENTS`` per message.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tornado import web

from think_kernel.agent.attachments import (
    MAX_ATTACHMENTS,
    MAX_CELLS,
    MAX_TEXT_CHARS,
    describe_attachment,
)

if TYPE_CHECKING:
    from think_kernel.store import Store

_BLOB = re.compile(r"^[0-9a-f]{64}$")
#: A variable's summary as the inspection renders it is far below this.
MAX_VARIABLE_CHARS = 64_000
CELL_TYPES = {"code", "markdown", "raw"}


async def checked_attachments(store: Store, raw: list[Any]) -> list[dict[str, Any]]:
    """Validated attachments to store with a message (HTTP 400 with a reason otherwise)."""
    if len(raw) > MAX_ATTACHMENTS:
        raise web.HTTPError(400, f"at most {MAX_ATTACHMENTS} attachments per message")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise web.HTTPError(400, f"attachments[{i}] must be an object")
        kind = item.get("kind")
        if kind == "cells":
            out.append(_cells(i, item))
        elif kind in ("image", "file"):
            out.append(await _upload(store, i, item))
        elif kind == "variables":
            out.append(_variables(i, item))
        else:
            raise web.HTTPError(
                400, f"attachments[{i}].kind must be image, file, cells or variables"
            )
    return out


async def _upload(store: Store, i: int, item: dict[str, Any]) -> dict[str, Any]:
    blob = item.get("blob")
    if not isinstance(blob, str) or not _BLOB.match(blob):
        raise web.HTTPError(400, f"attachments[{i}].blob must be a key from POST .../attachments")
    try:
        data = await store.load_blob(blob)
    except KeyError:
        raise web.HTTPError(400, f"attachments[{i}]: no uploaded file {blob[:12]}...") from None
    name = item.get("name")
    try:
        att = describe_attachment(name if isinstance(name, str) else "attachment", data)
    except ValueError as e:
        raise web.HTTPError(400, f"attachments[{i}]: {e}") from None
    att["blob"] = blob
    return att


def _cells(i: int, item: dict[str, Any]) -> dict[str, Any]:
    path = item.get("path") or ""
    cells = item.get("cells")
    if not isinstance(path, str) or len(path) > 4096:
        raise web.HTTPError(400, f"attachments[{i}].path must be a string")
    if not isinstance(cells, list) or not cells or len(cells) > MAX_CELLS:
        raise web.HTTPError(400, f"attachments[{i}].cells must be a list of 1 to {MAX_CELLS}")
    out, total = [], 0
    for j, cell in enumerate(cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("source", ""), str):
            raise web.HTTPError(400, f"attachments[{i}].cells[{j}] needs a string 'source'")
        kind = cell.get("cell_type") or "code"
        ident = cell.get("id") or ""
        if kind not in CELL_TYPES or not isinstance(ident, str) or len(ident) > 128:
            raise web.HTTPError(400, f"attachments[{i}].cells[{j}]: bad cell_type or id")
        source = cell.get("source") or ""
        total += len(source)
        out.append({"id": ident, "cell_type": kind, "source": source})
    if total > MAX_TEXT_CHARS:
        raise web.HTTPError(400, f"attachments[{i}]: cells over {MAX_TEXT_CHARS:,} characters")
    return {"kind": "cells", "name": path.rsplit("/", 1)[-1] or "cells", "path": path, "cells": out}


def _variables(i: int, item: dict[str, Any]) -> dict[str, Any]:
    path, name, text = item.get("path") or "", item.get("name"), item.get("text")
    if not isinstance(path, str) or len(path) > 4096:
        raise web.HTTPError(400, f"attachments[{i}].path must be a string")
    if not isinstance(name, str) or not name.isidentifier() or len(name) > 200:
        raise web.HTTPError(400, f"attachments[{i}].name must be a variable name")
    if not isinstance(text, str) or not text or len(text) > MAX_VARIABLE_CHARS:
        raise web.HTTPError(
            400, f"attachments[{i}].text must be the summary, up to {MAX_VARIABLE_CHARS:,} chars"
        )
    return {"kind": "variables", "name": name, "path": path, "text": text}
