"""Serve one tornado request with an ASGI application (the MCP SDK's streamable-HTTP
transport), so the endpoint keeps jupyter_server's authentication, authorisation, origin and
XSRF checks, which ran in the handler before this is called.

    await serve_asgi(handler, app, gone)   # gone: an asyncio.Event set when the client leaves

The body was read (and bounded) by tornado already: ``receive`` hands it over once, then
waits for the client to go away (``http.disconnect``), which ends a response stream. Response
bodies with ``more_body`` are flushed as they come (Server-Sent Events); tornado frames the
response itself (chunked or a length), so framing headers of the application are dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler

log = logging.getLogger(__name__)
Message = MutableMapping[str, Any]
App = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[Message]],
        Callable[[Message], Awaitable[None]],
    ],
    Awaitable[None],
]
FRAMING = {"content-length", "transfer-encoding", "connection", "keep-alive"}


def scope_of(handler: RequestHandler, path: str) -> dict[str, Any]:
    """The ASGI HTTP scope of the handler's request (``path`` as the application sees it)."""
    req = handler.request
    host, _, port = (req.host or "localhost").rpartition(":")
    server = (host, int(port)) if port.isdigit() else (req.host or "localhost", 80)
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": req.version.split("/")[-1] if req.version else "1.1",
        "method": req.method or "GET",
        "scheme": req.protocol,
        "path": path,
        "raw_path": path.encode("utf-8"),
        "root_path": "",
        "query_string": (req.query or "").encode("latin-1"),
        "headers": [
            (k.lower().encode("latin-1"), v.encode("latin-1", "replace"))
            for k, v in req.headers.get_all()
        ],
        "client": (req.remote_ip or "", 0),
        "server": server,
    }


async def serve_asgi(handler: RequestHandler, app: App, gone: asyncio.Event, path: str) -> bool:
    """Run ``app`` for the handler's request; False if it never started a response."""
    body = handler.request.body or b""
    delivered = False
    started = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal started
        kind = message.get("type")
        if kind == "http.response.start":
            started = True
            handler.set_status(int(message["status"]))
            handler.clear_header("Content-Type")
            for raw_name, raw_value in message.get("headers") or []:
                name = raw_name.decode("latin-1")
                if name.lower() not in FRAMING:
                    handler.add_header(name, raw_value.decode("latin-1"))
        elif kind == "http.response.body":
            chunk = message.get("body") or b""
            if gone.is_set():
                raise OSError("the client went away")
            if chunk:
                handler.write(chunk)
            if message.get("more_body"):
                try:
                    await handler.flush()
                except StreamClosedError:
                    gone.set()
                    raise OSError("the client went away") from None

    await app(scope_of(handler, path), receive, send)
    return started
