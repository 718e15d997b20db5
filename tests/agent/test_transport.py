"""The model client's HTTP (one ``httpx.AsyncClient``), against real sockets: endpoints that
gzip, chunk, redirect, stall, cut, close kept-alive connections, answer garbage or
``Retry-After``; a refused local endpoint (no retry); a consumer that stops mid-stream; a proxy
variable."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.fake_model import FakeModel
from think_kernel.agent.model import ModelError, OpenAIModel
from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from .conftest import collect

MESSAGES = [{"role": "user", "content": "hi"}]
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


def sse(*texts: str) -> bytes:
    """A whole completion stream: one text chunk per text, a finish, [DONE]."""
    out = b""
    for t in texts:
        chunk = {"choices": [{"index": 0, "delta": {"content": t}}]}
        out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return out + b"data: " + json.dumps(done).encode() + b"\n\ndata: [DONE]\n\n"


class Raw:
    """A TCP server on 127.0.0.1 whose bytes each test writes; ``requests`` holds (connection
    number, request head, body) of every request read with ``read_request``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[tuple[int, str, bytes]] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Raw:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer, self.connections)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def read_request(self, reader: asyncio.StreamReader, n: int) -> tuple[str, bytes]:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        length = 0
        for line in head.split("\r\n"):
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1])
        body = await reader.readexactly(length)
        self.requests.append((n, head, body))
        return head, body


def answer(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def text_of(model: OpenAIModel, messages: Any = None) -> str:
    chunks = [c async for c in model.stream(messages or MESSAGES, [], "m")]
    return "".join(c.text for c in chunks if c.kind == "text")


async def test_gzip_and_chunked_event_stream() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await raw.read_request(reader, n)
        data = gzip.compress(sse("Hello", ", ", "world"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")  # fmt: skip
        for i in range(0, len(data), 7):  # many small chunks, each flushed
            piece = data[i : i + 7]
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await reader.read()  # until the client closes

    async with Raw(handler) as raw:
        model = OpenAIModel("k", raw.url + "/v1")
        try:
            assert await text_of(model) == "Hello, world"
        finally:
            await model.aclose()
        head = raw.requests[0][1]
        assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
        assert "accept-encoding: gzip, deflate" in head.lower()
        assert "authorization: bearer k" in head.lower()


async def test_a_kept_alive_connection_the_server_closed_is_replaced() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await raw.read_request(reader, n)
        writer.write(answer(sse(f"conn{n}"), "Content-Type: text/event-stream"))
        await writer.drain()
        if n == 1:
            await answered.wait()  # then close while the connection is idle in the pool
            writer.close()
            await writer.wait_closed()
            closed.set()
            return
        await reader.read()

    answered, closed = asyncio.Event(), asyncio.Event()
    async with Raw(handler) as raw:
        model = OpenAIModel("k", raw.url)
        try:
            assert await text_of(model) == "conn1"
            answered.set()
            await asyncio.wait_for(closed.wait(), 10)
            assert await text_of(model) == "conn2"  # not sent on the closed one
        finally:
            await model.aclose()
        assert [r[0] for r in raw.requests] == [1, 2]


async def test_redirects_keep_the_request_and_drop_the_key_off_origin() -> None:
    async def other(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await far.read_request(reader, n)
        writer.write(answer(sse("far"), "Content-Type: text/event-stream"))
        await writer.drain()
        await reader.read()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            head, _ = await raw.read_request(reader, n)
            if head.startswith("POST /old/"):
                writer.write(answer(b"moved", "Location: /new/chat/completions",
                                    status="307 Temporary Redirect"))  # fmt: skip
            elif head.startswith("POST /away/"):
                writer.write(answer(b"", f"Location: {far.url}/v1/chat/completions",
                                    status="308 Permanent Redirect"))  # fmt: skip
            elif head.startswith("POST /see/"):
                writer.write(answer(b"", "Location: /got", status="303 See Other"))
            else:
                writer.write(answer(sse("here"), "Content-Type: text/event-stream"))
            await writer.drain()

    async with Raw(other) as far, Raw(handler) as raw:
        for path, text in (("/old", "here"), ("/away", "far"), ("/see", "here")):
            model = OpenAIModel("k", raw.url + path)
            try:
                assert await text_of(model) == text
            finally:
                await model.aclose()
        heads = [(h.split("\r\n")[0], h.lower(), b) for _, h, b in raw.requests]
        assert heads[1][0] == "POST /new/chat/completions HTTP/1.1"
        assert heads[1][2] == heads[0][2] and b'"messages"' in heads[1][2]  # same body
        assert "authorization: bearer k" in heads[1][1]  # same origin: the key goes along
        far_head = far.requests[0][1].lower()
        assert far_head.startswith("post /v1/chat/completions")
        assert "authorization" not in far_head  # another origin: no key
        assert heads[-1][0] == "GET /got HTTP/1.1" and heads[-1][2] == b""


async def test_stalls_cuts_garbage_and_refusals_are_classified() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        head, _ = await raw.read_request(reader, n)
        if "stall" in head:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")  # fmt: skip
            await writer.drain()
            await asyncio.sleep(5)
        elif "cut" in head:
            body = sse("partial")
            writer.write(answer(body)[: -len(body) // 2])  # Content-Length promised more
        else:
            writer.write(b"SSH-2.0-OpenSSH\r\nnot http at all\r\n\r\n")
        await writer.drain()

    async with Raw(handler) as raw:
        for path, code in (("/stall", "timeout"), ("/cut", None), ("/garbage", "connection")):
            # Only the stall may run into the timeout (a loaded machine must not turn the
            # others into timeouts).
            model = OpenAIModel("k", raw.url + path, timeout=0.3 if code == "timeout" else 20)
            with pytest.raises(ModelError) as info:
                try:
                    await text_of(model)
                finally:
                    await model.aclose()
            assert info.value.transient, (path, info.value)
            if code:
                assert info.value.code == code, (path, info.value.code, info.value)
            else:  # the body ended early: the connection broke, or the stream was cut
                assert info.value.code in ("connection", "stream_cut"), info.value


async def test_a_consumer_that_stops_mid_stream_closes_the_connection(
    fake_model: FakeModel,
) -> None:
    model = OpenAIModel("k", fake_model.url)
    try:
        fake_model.reply(tokens=[f"t{i} " for i in range(50)], delay=0.01)
        stream = model.stream(MESSAGES, [], "m")
        async for chunk in stream:
            if chunk.kind == "text":
                break  # Stop: the rest of the answer is not wanted
        await stream.aclose()  # type: ignore[attr-defined]
        fake_model.reply(text="next")
        assert await text_of(model) == "next"
        # The half-read connection was not reused for the next request.
        assert len(fake_model.connections) == 2, fake_model.connections
    finally:
        await model.aclose()


async def test_big_bodies_and_concurrent_requests(fake_model: FakeModel) -> None:
    model = OpenAIModel("k", fake_model.url)
    big = "x" * (6 << 20)
    try:
        fake_model.reply(text="big")
        assert await text_of(model, [{"role": "user", "content": big}]) == "big"
        assert fake_model.requests[-1]["messages"][0]["content"] == big
        for i in range(12):
            fake_model.reply(tokens=[f"a{i}", "b"], delay=0.02)
        texts = await asyncio.gather(*(text_of(model) for _ in range(12)))
        assert sorted(texts) == sorted(f"a{i}b" for i in range(12))
        assert len(fake_model.connections) <= 13  # the pool's, not one per request
    finally:
        await model.aclose()


async def test_a_proxy_variable_sends_the_request_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await raw.read_request(reader, n)
        writer.write(answer(sse("via proxy"), "Content-Type: text/event-stream"))
        await writer.drain()
        await reader.read()

    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with Raw(proxy) as raw:
        monkeypatch.setenv("HTTP_PROXY", raw.url)
        model = OpenAIModel("k", "http://model.invalid/v1")
        try:
            assert await text_of(model) == "via proxy"
        finally:
            await model.aclose()
        # A proxy gets the absolute URL in the request line.
        assert raw.requests[0][1].startswith("POST http://model.invalid/v1/chat/completions ")


async def test_what_cannot_be_sent_fails_at_once_and_sends_nothing(
    fake_model: FakeModel,
) -> None:
    port = urlsplit(fake_model.url).port
    for key, url, says in (
        ("sk-abc\r\nX-Injected: 1", fake_model.url, "cannot be sent"),
        ("sk-\u00e9\u4e2d", fake_model.url, "cannot be sent"),
        ("k", f"localhost:{port}/v1", "'http://' or 'https://'"),  # no scheme
    ):
        model = OpenAIModel(key, url)
        with pytest.raises(ModelError) as info:
            try:
                await text_of(model)
            finally:
                await model.aclose()
        assert not info.value.transient and says in str(info.value), info.value
    assert fake_model.requests == []


def free_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_refused_local_endpoint_fails_at_once_with_the_hint(tmp_path: Any) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    model = OpenAIModel("k", url)
    with pytest.raises(ModelError) as info:
        try:
            await text_of(model)
        finally:
            await model.aclose()
    err = info.value
    assert err.code == "connection" and not err.transient
    assert "is the server running and the URL right?" in str(err) and url in str(err)
    # Through the loop, with its default backoff (2, 4 and 8 s): no retry, no wait.
    (tmp_path / "ws").mkdir()
    rt = Runtime(ThinkConfig(base_url=url, api_key="k"), tmp_path / "ws", extensions=[])
    await rt.start()
    try:
        start = time.monotonic()
        events = await collect(rt, "hi")
        took = time.monotonic() - start
    finally:
        await rt.close()
    assert took < 1.0, took
    assert not [e for e in events if e["type"] == "status" and e["status"] == "waiting"]
    errors = [e for e in events if e["type"] == "error"]
    assert errors and errors[0]["code"] == "connection" and not errors[0]["retryable"]
    assert "is the server running" in errors[0]["message"]


async def test_retry_after_is_read_from_429_and_503_answers() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            head, _ = await raw.read_request(reader, n)
            if len(raw.requests) == 1:
                writer.write(answer(b'{"error": {"message": "slow down"}}', "Retry-After: 7",
                                    status="429 Too Many Requests"))  # fmt: skip
            elif len(raw.requests) == 2:
                writer.write(answer(b"busy", "retry-after-ms: 1500",
                                    status="503 Service Unavailable"))  # fmt: skip
            else:
                writer.write(answer(b"busy", "Retry-After: 86400", status="502 Bad Gateway"))
            await writer.drain()

    async with Raw(handler) as raw:
        model = OpenAIModel("k", raw.url)
        try:
            waits = []
            for _ in range(3):
                with pytest.raises(ModelError) as info:
                    await text_of(model)
                assert info.value.transient
                waits.append(info.value.retry_after)
        finally:
            await model.aclose()
    assert waits == [7.0, 1.5, 60.0]  # a day is capped at MAX_RETRY_AFTER


async def test_the_loop_waits_as_long_as_retry_after_asks(tmp_path: Any) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            await raw.read_request(reader, n)
            arrived.append(time.monotonic())
            if len(arrived) == 1:
                writer.write(answer(b"{}", "retry-after-ms: 250", status="429 Too Many Requests"))
            else:
                writer.write(answer(sse("after the wait"), "Content-Type: text/event-stream"))
            await writer.drain()

    arrived: list[float] = []
    async with Raw(handler) as raw:
        cfg = ThinkConfig(base_url=raw.url, api_key="k", retry_delays=[0.01])
        (tmp_path / "ws").mkdir()
        rt = Runtime(cfg, tmp_path / "ws", extensions=[])
        await rt.start()
        try:
            events = await collect(rt, "hi")
        finally:
            await rt.close()
    waits = [e["detail"] for e in events if e["type"] == "status" and e["status"] == "waiting"]
    assert len(waits) == 1 and "429" in waits[0] and "retry 1/1 in 0.25 s" in waits[0]
    assert arrived[1] - arrived[0] >= 0.25
    assert [e["content"] for e in events if e["type"] == "chat"] == ["after the wait"]
