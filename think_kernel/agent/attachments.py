"""Attachments: files, images and notebook cells that go with a request.

    att = describe_attachment("plot.png", data)        # kind image / file, or ValueError
    att["blob"] = await store.save_blob(data)          # stored like any blob
    rows, loaded = await load_history(store, rows, user)

An attachment is a small dict stored on the user message (``attachments`` column):
``{"kind": "image", "name", "mime", "blob", "size"}``, ``{"kind": "file", ...}`` for text, or
``{"kind": "cells", "path", "cells": [{"id", "cell_type", "source"}]}`` inline, as is a
notebook variable's summary (``{"kind": "variables", "path", "name", "text"}``). Images are
recognised by their bytes (PNG, JPEG, GIF, WebP), never by a name or a header a client sends;
files must be UTF-8 text. The model gets images as image parts in the run that attached them
(the ``vision`` role answers), and text attachments as text.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from ..store.history import Row, StartMemo, read_only_until
from .context import split_history

if TYPE_CHECKING:
    from .stores import BlobStore

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_TEXT_CHARS = 200_000
MAX_ATTACHMENTS = 10
MAX_CELLS = 50
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime(data: bytes) -> str | None:
    """The MIME type of an image the vision models accept, from its first bytes."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def describe_attachment(name: str, data: bytes) -> dict[str, Any]:
    """The attachment record for a file's bytes (without ``blob``); ValueError says why not."""
    name = (name or "attachment").replace("\\", "/").rsplit("/", 1)[-1][:255] or "attachment"
    mime = image_mime(data)
    if mime is not None:
        if len(data) > MAX_IMAGE_BYTES:
            raise ValueError(
                f"{name} is {len(data):,} bytes; images may be up to {MAX_IMAGE_BYTES:,} bytes"
            )
        return {"kind": "image", "name": name, "mime": mime, "size": len(data)}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(
            f"{name} is neither an image (PNG, JPEG, GIF, WebP) nor UTF-8 text; put it in the "
            "workspace and ask the agent to read it"
        ) from None
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(
            f"{name} has {len(text):,} characters; attached text may be up to "
            f"{MAX_TEXT_CHARS:,}: put it in the workspace and ask the agent to read it"
        )
    return {"kind": "file", "name": name, "mime": "text/plain", "size": len(data)}


async def load_history(
    store: BlobStore, rows: list[dict[str, Any]], user: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Whole contents of the offloaded rows the model will see, and attachment data: the
    text of attached files, and ``data:`` URLs of the images of this run's request only."""
    loaded: dict[str, str] = {}
    wanted = _wanted(rows)
    if not wanted:
        return rows, loaded
    pinned, _summary, visible = split_history(rows)
    seen = {id(r) for r in visible} | ({id(pinned)} if pinned is not None else set())
    out = list(rows)
    for i in wanted:
        row = rows[i]
        if id(row) in seen:
            if row.get("content_blob") and row["role"] in ("user", "assistant", "tool"):
                row = await _whole(store, row)
            if row["role"] == "user":
                for a in row.get("attachments") or []:
                    await _load_one(store, a, row["id"] == user["id"], loaded)
        out[i] = row
    return out, loaded


#: Which rows of a conversation's start the last request found with an offloaded content or
#: attachments: a request scans only what is new.
_SCANNED: StartMemo[list[int]] = StartMemo()


def _wanted(rows: list[dict[str, Any]]) -> list[int]:
    """Positions of the rows with an offloaded content or attachments (most rows have
    neither, and a history is thousands of rows)."""
    n, found = _SCANNED.get(rows)
    wanted = (found or []) + [
        i for i in range(n, len(rows)) if rows[i].get("content_blob") or rows[i].get("attachments")
    ]
    stop = read_only_until(rows, n)  # a request's own rows are not read-only yet
    _SCANNED.put(rows, stop, [i for i in wanted if i < stop])
    return wanted


#: Offloaded rows with their whole content, by the stored row object (see _whole).
_WHOLE: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
_WHOLE_MAX = 10_000


async def _whole(store: BlobStore, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its whole content. For a read-only row of the history cache the result is
    the same read-only object at every request while the row is unchanged, so the model
    context can tell that the history's start is what it converted before."""
    hit = _WHOLE.get(id(row))
    if hit is not None and hit[0] is row:
        return hit[1]
    try:
        content = await store.message_content(row)
    except KeyError:
        return row  # the blob is gone: the model sees the preview
    if type(row) is not Row:
        return {**row, "content": content}
    whole = Row({**row, "content": content})
    if len(_WHOLE) >= _WHOLE_MAX:
        _WHOLE.clear()
    _WHOLE[id(row)] = (row, whole)  # the entry keeps ``row`` alive: its id stays its own
    return whole


async def _load_one(store: BlobStore, a: Any, current: bool, loaded: dict[str, str]) -> None:
    if not isinstance(a, dict) or not a.get("blob") or a["blob"] in loaded:
        return
    kind = a.get("kind")
    if kind == "image" and not current:
        return  # older images become a placeholder: the primary model need not see images
    try:
        data = await store.load_blob(str(a["blob"]))
    except KeyError:
        return  # the blob is gone: the model is told the attachment is unavailable
    if kind == "image":
        mime = image_mime(data) or "image/png"
        loaded[a["blob"]] = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    elif kind == "file":
        loaded[a["blob"]] = data.decode("utf-8", errors="replace")
