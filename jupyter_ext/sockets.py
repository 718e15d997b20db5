"""Writing to a WebSocket whose peer may be gone (a tab closed or reloaded).

    if not write_text(handler, text):
        ...  # closed: forget the client

Tornado's ``write_message`` raises at once on a socket it knows is closed, but a write that
the peer's close cuts short fails later, in a future nobody awaits; asyncio then logs "Task
exception was never retrieved" with a traceback for an ordinary closed tab. The error is read
here instead.
"""

from __future__ import annotations

import asyncio

from tornado.websocket import WebSocketClosedError, WebSocketHandler


def write_text(handler: WebSocketHandler, text: str) -> bool:
    """Queue a text frame; False when the socket is already closed."""
    try:
        fut = handler.write_message(text)
    except WebSocketClosedError:
        return False
    fut.add_done_callback(_read_error)
    return True


def _read_error(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled():
        fut.exception()  # the peer went away mid-write: the close handler does the rest
