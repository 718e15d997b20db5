"""A scripted OpenAI-compatible chat-completions server: the only fake in our tests.

It speaks real HTTP and streams real SSE, so the ``openai`` SDK and everything above it run as
in production. It runs on its own thread and event loop, so kernels in other processes and
async or sync tests can all use it.

    fm = FakeModel().start()
    fm.reply(tool_calls=[("write_file", {"path": "a.py", "content": "print(1)\\n"})])
    fm.reply(text="Done.")
    ... point OPENAI_BASE_URL at fm.url ...
    fm.requests[0]["messages"]  # what the model was sent
    fm.stop()

A reply can also be an HTTP error (``error=429``), a stream cut mid-way (``cut=True``), a slow
stream (``delay`` seconds between chunks), a slow first byte (``first_delay``) or one that
hangs until released (``hang=True``).
When the script is empty the ``default`` reply is used.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web


@dataclass
class Reply:
    """One scripted answer of the model."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    error: int = 0
    error_message: str = ""
    cut: bool = False
    delay: float = 0.0
    hang: bool = False
    first_delay: float = 0.0  # seconds before the response starts (a slow first byte)
    chunk_size: int = 4
    tokens: list[str] | None = None


class FakeModel:
    """The server. ``api_key``: if set, other bearer tokens get 401. ``models``: if set,
    other model names get 404 (model_not_found)."""

    def __init__(self, api_key: str | None = None, models: set[str] | None = None) -> None:
        self.api_key = api_key
        self.models = models
        self.script: list[Reply] = []
        self.default = Reply(text="(fake model: script exhausted)")
        self.requests: list[dict[str, Any]] = []
        self.first_token_at: list[float] = []
        self.release = threading.Event()
        self._cond = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """Base URL to give the openai client (``.../v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def reply(self, **kwargs: Any) -> FakeModel:
        """Append one scripted reply (see :class:`Reply` for the fields)."""
        with self._cond:
            self.script.append(Reply(**kwargs))
        return self

    def next_reply(self) -> Reply:
        """Pop the next scripted reply (or the default)."""
        with self._cond:
            return self.script.pop(0) if self.script else self.default

    def record(self, body: dict[str, Any]) -> None:
        """Remember a request and wake waiters."""
        with self._cond:
            self.requests.append(body)
            self._cond.notify_all()

    def wait_for_requests(self, n: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Block until at least ``n`` requests arrived; return them."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.requests) >= n, timeout)
            if not ok:
                raise TimeoutError(f"expected {n} model requests, got {len(self.requests)}")
            return list(self.requests)

    def start(self) -> FakeModel:
        """Start serving on a free loopback port (returns self)."""
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self.port = sockets[0].getsockname()[1]
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            app = tornado.web.Application([(r"/v1/chat/completions", _Handler, {"fm": self})])
            server = tornado.httpserver.HTTPServer(app)
            server.add_sockets(sockets)
            loop.call_soon(ready.set)
            loop.run_forever()
            server.stop()
            loop.close()

        self._thread = threading.Thread(target=serve, name="fake-model", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        """Stop the server thread."""
        self.release.set()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or []


class _Handler(tornado.web.RequestHandler):
    def initialize(self, fm: FakeModel) -> None:
        self.fm = fm

    def _error(self, status: int, message: str, code: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        err = {"message": message, "type": "invalid_request_error", "code": code}
        self.finish(json.dumps({"error": err}))

    async def post(self) -> None:
        try:
            body = json.loads(self.request.body)
        except json.JSONDecodeError:
            return self._error(400, "invalid JSON body", "bad_json")
        self.fm.record(body)
        auth = self.request.headers.get("Authorization", "")
        if self.fm.api_key and auth != f"Bearer {self.fm.api_key}":
            return self._error(401, "Incorrect API key provided", "invalid_api_key")
        model = body.get("model", "")
        if self.fm.models is not None and model not in self.fm.models:
            return self._error(404, f"The model `{model}` does not exist", "model_not_found")
        r = self.fm.next_reply()
        if r.first_delay:
            await asyncio.sleep(r.first_delay)
        if r.error:
            return self._error(r.error, r.error_message or f"scripted error {r.error}", "scripted")
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        # Real model servers (uvicorn, OpenAI's edge) disable Nagle; without this, small SSE
        # writes wait on delayed ACKs and add ~40 ms that no real endpoint has.
        self.request.connection.stream.set_nodelay(True)  # type: ignore[union-attr]
        try:
            await self._stream(model, r)
        except tornado.iostream.StreamClosedError:
            return

    async def _send(self, data: bytes, r: Reply, first: list[bool]) -> None:
        if first[0]:
            first[0] = False
            self.fm.first_token_at.append(time.time())
        self.write(data)
        await self.flush()
        if r.delay:
            await asyncio.sleep(r.delay)

    async def _stream(self, model: str, r: Reply) -> None:
        first = [True]
        await self._send(_chunk(model, {"role": "assistant", "content": ""}), r, [False])
        for piece in _pieces(r.reasoning, r.chunk_size):
            await self._send(_chunk(model, {"reasoning_content": piece}), r, first)
        tokens = r.tokens if r.tokens is not None else _pieces(r.text, r.chunk_size)
        for i, piece in enumerate(tokens):
            await self._send(_chunk(model, {"content": piece}), r, first)
            if r.cut and i >= len(tokens) // 2:
                # Drop the connection mid-stream, as a crashed proxy would.
                self.request.connection.stream.close()  # type: ignore[union-attr]
                return
        if r.hang:
            await asyncio.to_thread(self.fm.release.wait)
        for index, (name, args) in enumerate(r.tool_calls):
            call_id = f"call_{uuid.uuid4().hex[:8]}"
            arg_text = args if isinstance(args, str) else json.dumps(args)
            head = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            await self._send(_chunk(model, {"tool_calls": [head]}), r, first)
            for piece in _pieces(arg_text, 16):
                delta = {"index": index, "function": {"arguments": piece}}
                await self._send(_chunk(model, {"tool_calls": [delta]}), r, first)
        if r.cut:
            self.request.connection.stream.close()  # type: ignore[union-attr]
            return
        finish = "tool_calls" if r.tool_calls else "stop"
        await self._send(_chunk(model, {}, finish), r, first)
        self.write(b"data: [DONE]\n\n")
        self.finish()
