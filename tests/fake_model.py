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

A reply can also be an HTTP error (``error=429``), a stream cut mid-way (``cut=True``), an
error event after the text (``stream_error="overloaded"``, as vLLM sends one), a slow
stream (``delay`` seconds between chunks), a slow first byte (``first_delay``) or one that
hangs until released (``hang=True``).
When the script is empty the ``default`` reply is used.

Like a real endpoint it reports usage when the request asks for it
(``stream_options.include_usage``), counting tokens its own way (:func:`count_tokens`: a
token per four bytes of text, 765 per image), and refuses a request over ``context_window``
tokens with OpenAI's context-length error. Internal calls of the agent (the
``X-Think-Purpose`` header says ``compaction``, ``tool_summary`` or ``title``) do not take
scripted replies: ``internal(body)`` answers them (default: a short canned text) and they are
recorded in ``internal_requests``, so scripts of the main loop stay as they were.
``answer(purpose, **reply)`` gives every internal call of one purpose the same standing
reply (inline completions: ``answer("complete", text="upby('a')")``); ``closed`` counts the
requests whose client went away before the answer ended (a cancelled completion).

Concurrent conversations (subagents) arrive in no fixed order: a conversation gets
its own script with ``reply_for(key, ...)``, served to the requests whose first user message
contains ``key`` (the main script serves the rest). ``barrier="name", parties=2`` holds a
reply until that many requests reached the barrier (a 503 after ``barrier_timeout`` s: the
requests did not overlap). ``spans`` records each step request's key, start and end.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable
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
    stream_error: str = ""  # an SSE error object after the text, then the end of the stream
    newline: str = "\n"  # SSE line ending: "\r\n" and "\r" are allowed too
    together: bool = False  # all events in one write (a burst that arrives in one read)
    delay: float = 0.0
    hang: bool = False
    first_delay: float = 0.0  # seconds before the response starts (a slow first byte)
    chunk_size: int = 4
    tokens: list[str] | None = None
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    barrier: str = ""  # wait for ``parties`` requests at this barrier before answering
    parties: int = 2


IMAGE_TOKENS = 765


def count_text(text: str) -> int:
    """The fake's tokenizer: a token per four bytes (the usual rule of thumb, deliberately
    not the agent's own estimator, so its calibration is exercised)."""
    return (len(text.encode("utf-8")) + 3) // 4


def count_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens of a request, as this fake endpoint counts them."""
    total = 3
    for m in body.get("messages") or []:
        total += 4
        content = m.get("content")
        if isinstance(content, str):
            total += count_text(content)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "image_url":
                    total += IMAGE_TOKENS
                else:
                    total += count_text(str(part.get("text") or ""))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            total += 3 + count_text(fn.get("name", "")) + count_text(fn.get("arguments", ""))
    if body.get("tools"):
        total += count_text(json.dumps(body["tools"]))
    return total


class FakeModel:
    """The server. ``api_key``: if set, other bearer tokens get 401. ``models``: if set,
    other model names get 404 (model_not_found)."""

    def __init__(self, api_key: str | None = None, models: set[str] | None = None) -> None:
        self.api_key = api_key
        self.models = models
        self.listed = ["fake-model", "fake-model-large"]  # GET /v1/models when models is None
        self.script: list[Reply] = []
        self.default = Reply(text="(fake model: script exhausted)")
        self.requests: list[dict[str, Any]] = []
        self.internal_requests: list[dict[str, Any]] = []
        self.internal: Callable[[dict[str, Any]], Reply] = lambda body: Reply(
            text=f"(fake {body.get('_purpose', 'internal')} answer)"
        )
        self.answers: dict[str, Reply] = {}
        self.closed = 0
        self.context_window: int | None = None
        self.reject_stream_options = False
        self.headers: list[dict[str, str]] = []
        self.connections: set[Any] = set()  # client (host, port) of each chat request
        self.first_token_at: list[float] = []
        self.conversations: dict[str, list[Reply]] = {}
        self.spans: list[dict[str, Any]] = []
        self.barrier_timeout = 20.0
        self._barriers: dict[str, int] = {}
        self.release = threading.Event()
        self._cond = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """Base URL to give the openai client (``.../v1``)."""
        scheme = "https" if getattr(self, "tls", False) else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        """Forget the script, the recorded requests and every setting (shared fakes)."""
        with self._cond:
            self.script.clear()
            self.requests.clear()
            self.internal_requests.clear()
            self.first_token_at.clear()
            self.headers.clear()
            self.connections.clear()
            self.conversations.clear()
            self.spans.clear()
            self._barriers.clear()
            self.answers.clear()
            self.closed = 0
        self.context_window = None
        self.reject_stream_options = False
        self.internal = lambda body: Reply(text=f"(fake {body.get('_purpose')} answer)")

    def reply(self, **kwargs: Any) -> FakeModel:
        """Append one scripted reply (see :class:`Reply` for the fields)."""
        with self._cond:
            self.script.append(Reply(**kwargs))
        return self

    def answer(self, purpose: str, **kwargs: Any) -> FakeModel:
        """Answer every internal call of ``purpose`` (``X-Think-Purpose``) with this reply."""
        with self._cond:
            self.answers[purpose] = Reply(**kwargs)
        return self

    def client_closed(self) -> None:
        """Count a request whose client went away mid-answer, and wake waiters."""
        with self._cond:
            self.closed += 1
            self._cond.notify_all()

    def reply_for(self, key: str, **kwargs: Any) -> FakeModel:
        """Append a reply to the script of the conversation whose first user message
        contains ``key``."""
        with self._cond:
            self.conversations.setdefault(key, []).append(Reply(**kwargs))
        return self

    def conversation_of(self, body: dict[str, Any] | None) -> str:
        """The scripted conversation a request belongs to ("" for the main script)."""
        if not body or not self.conversations:
            return ""
        first = next((m for m in body.get("messages") or [] if m.get("role") == "user"), None)
        content = (first or {}).get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text") or "") for p in content)
        text = str(content or "")
        return next((k for k in self.conversations if k in text), "")

    def next_reply(self, body: dict[str, Any] | None = None) -> Reply:
        """Pop the next scripted reply of the request's conversation (or the default)."""
        key = self.conversation_of(body)
        with self._cond:
            script = self.conversations[key] if key else self.script
            return script.pop(0) if script else self.default

    async def at_barrier(self, name: str, parties: int) -> bool:
        """Count this request at a barrier and wait for the others (False: timed out)."""
        with self._cond:
            self._barriers[name] = self._barriers.get(name, 0) + 1
        deadline = time.monotonic() + self.barrier_timeout
        while self._barriers.get(name, 0) < parties:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    def record(self, body: dict[str, Any], internal: bool = False) -> None:
        """Remember a request and wake waiters."""
        with self._cond:
            (self.internal_requests if internal else self.requests).append(body)
            self._cond.notify_all()

    def wait_for_requests(self, n: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Block until at least ``n`` requests arrived; return them."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.requests) >= n, timeout)
            if not ok:
                raise TimeoutError(f"expected {n} model requests, got {len(self.requests)}")
            return list(self.requests)

    def start(self, ssl_context: Any = None) -> FakeModel:
        """Start serving on a free loopback port (returns self); over TLS with an
        ``ssl.SSLContext`` (the URL then starts ``https://``)."""
        self.tls = ssl_context is not None
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self.port = sockets[0].getsockname()[1]
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            app = tornado.web.Application(
                [
                    (r"/v1/chat/completions", _Handler, {"fm": self}),
                    (r"/v1/models", _Models, {"fm": self}),
                ]
            )
            server = tornado.httpserver.HTTPServer(app, ssl_options=ssl_context)
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


def _usage(model: str, prompt: int, completion: int, r: Reply) -> bytes:
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": r.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": r.reasoning_tokens},
        },
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or []


class _Models(tornado.web.RequestHandler):
    """``GET /v1/models``: the ``models`` it accepts (or ``listed``), as OpenAI lists them."""

    def initialize(self, fm: FakeModel) -> None:
        self.fm = fm

    def get(self) -> None:
        self.fm.headers.append(dict(self.request.headers))
        self.set_header("Content-Type", "application/json")
        auth = self.request.headers.get("Authorization", "")
        if self.fm.api_key and auth != f"Bearer {self.fm.api_key}":
            self.set_status(401)
            err = {"message": "Incorrect API key provided", "code": "invalid_api_key"}
            self.finish(json.dumps({"error": err}))
            return
        names = sorted(self.fm.models) if self.fm.models is not None else self.fm.listed
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "fake"} for n in names]
        self.finish(json.dumps({"object": "list", "data": data}))


class _Handler(tornado.web.RequestHandler):
    def initialize(self, fm: FakeModel) -> None:
        self.fm = fm

    def on_connection_close(self) -> None:
        self.fm.client_closed()

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
        purpose = self.request.headers.get("X-Think-Purpose", "step")
        internal = purpose != "step"
        if internal:
            body["_purpose"] = purpose
        self.fm.headers.append(dict(self.request.headers))
        stream = self.request.connection.stream  # type: ignore[union-attr]
        self.fm.connections.add(stream.socket.getpeername())
        self.fm.record(body, internal)
        auth = self.request.headers.get("Authorization", "")
        if self.fm.api_key and auth != f"Bearer {self.fm.api_key}":
            return self._error(401, "Incorrect API key provided", "invalid_api_key")
        model = body.get("model", "")
        if self.fm.models is not None and model not in self.fm.models:
            return self._error(404, f"The model `{model}` does not exist", "model_not_found")
        if self.fm.reject_stream_options and "stream_options" in body:
            return self._error(
                400, "Unrecognized request argument supplied: stream_options", "bad_param"
            )
        prompt = count_tokens(body)
        window = self.fm.context_window
        if window is not None and prompt > window:
            return self._error(
                400,
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the "
                "messages.",
                "context_length_exceeded",
            )
        if internal:
            r = self.fm.answers.get(purpose) or self.fm.internal(body)
        else:
            r = self.fm.next_reply(body)
        span = {"key": self.fm.conversation_of(body), "start": time.time(), "end": None}
        if not internal:
            self.fm.spans.append(span)
        if r.barrier and not await self.fm.at_barrier(r.barrier, r.parties):
            return self._error(503, f"barrier {r.barrier!r}: the others never came", "barrier")
        if r.first_delay:
            await asyncio.sleep(r.first_delay)
        if r.error:
            return self._error(r.error, r.error_message or f"scripted error {r.error}", "scripted")
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        # Real model servers (uvicorn, OpenAI's edge) disable Nagle; without this, small SSE
        # writes wait on delayed ACKs and add ~40 ms that no real endpoint has.
        self.request.connection.stream.set_nodelay(True)  # type: ignore[union-attr]
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        try:
            await self._stream(model, r, prompt if usage else None)
        except tornado.iostream.StreamClosedError:
            return
        finally:
            span["end"] = time.time()

    async def _send(self, data: bytes, r: Reply, first: list[bool]) -> None:
        if first[0]:
            first[0] = False
            self.fm.first_token_at.append(time.time())
        if r.newline != "\n":
            data = data.replace(b"\n", r.newline.encode())
        self.write(data)
        if not r.together:
            await self.flush()
        if r.delay:
            await asyncio.sleep(r.delay)

    async def _stream(self, model: str, r: Reply, prompt: int | None) -> None:
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
        if r.stream_error:
            err = {"error": {"message": r.stream_error, "type": "server_error", "code": None}}
            self.write(b"data: " + json.dumps(err).encode() + b"\n\n")
            self.finish()
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
        if prompt is not None:
            out = count_text(r.text) + count_text(r.reasoning)
            out += sum(count_text(n) + count_text(json.dumps(a)) for n, a in r.tool_calls)
            await self._send(_usage(model, prompt, out + r.reasoning_tokens, r), r, first)
        self.write(b"data: [DONE]\n\n".replace(b"\n", r.newline.encode()))
        self.finish()
