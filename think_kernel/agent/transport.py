"""The model endpoint's HTTP/1.1 client: h11 on an asyncio protocol (issue 17).

    client = HTTPClient(timeout=120.0, tls=tls_context())
    response = await client.send("POST", url, headers, body)   # redirects followed
    if response.status_code >= 400:
        text = await response.aread()
    async for data in response.aiter_bytes():   # everything one network read brought
        ...
    await response.aclose()   # a body read to its end gives its connection back to the pool
    await client.aclose()

What the model client needs of HTTP, as ``httpx`` did it: keep-alive connections (a pool per
origin), TLS with the given context (SNI, certificate and hostname checked), sized and chunked
bodies, gzip and deflate bodies, redirects (``Authorization`` dropped when one leaves the
origin; 301 and 302 after a POST and 303 become a GET), and one timeout that applies to the
connect, to each write and to each read. What it leaves to ``httpx``: proxies (``OpenAIModel``
uses ``httpx`` when a proxy variable is set), HTTP/2, cookies.

Why not ``httpx``: importing it takes ~50-110 ms and its first client 30-170 ms more
(``httpcore`` imports ``trio`` when it is installed, and ``anyio``'s backend at the first
request), most of a first ``%%think``'s budget; and each request makes ~3,300 Python calls in
it, about a millisecond of every warm cell.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import h11

from ..waits import wait_for

MAX_REDIRECTS = 20  # as httpx
MAX_IDLE = 8  # idle connections kept per origin
HIGH_WATER = 1 << 20  # bytes read ahead of the consumer before the socket is paused

Origin = tuple[str, str, int]


class TransportError(ConnectionError):
    """The endpoint could not be reached, closed the connection, or broke HTTP."""


class TransportTimeout(TimeoutError):
    """The connect, a write or a read took longer than the client's timeout."""


class TooManyRedirects(Exception):
    """More than MAX_REDIRECTS redirects (not worth a retry)."""


class InvalidRequest(ValueError):
    """A request that cannot be sent (a URL without http(s):// or a host, a header with a
    line break or non-ASCII text): nothing is sent, and a retry would not help."""


def _split(url: str) -> tuple[Origin, str, str]:
    """(scheme, host, port), the Host header and the request target of ``url``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise InvalidRequest(f"invalid URL {url!r}: {e}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest(f"the URL {url!r} needs http:// or https:// and a host")
    port = port or (443 if scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.netloc.rpartition("@")[2]
    if not host.isascii():  # an internationalised name: its ASCII (IDNA) form on the wire
        name = parts.hostname.encode("idna").decode("ascii")
        host = name + (f":{parts.port}" if parts.port else "")
    return (scheme, parts.hostname, port), host, target


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection and its h11 state; bytes read wait in ``buffer`` until the
    request that owns the connection asks for them."""

    def __init__(self, origin: Origin, loop: asyncio.AbstractEventLoop) -> None:
        self.origin = origin
        self.loop = loop
        self.h11 = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.lost: BaseException | None = None
        self.closed = False
        self.busy = True  # owned by a request (False while idle in the pool)
        self.got = 0  # bytes received since a request took the connection
        self.stale = False  # the server wrote or closed while we were idle
        self.paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.got += len(data)
        if not self.busy:
            self.stale = True
        if len(self.buffer) > HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self.stale = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = self.eof = self.stale = True
        self.lost = exc
        self._wake()
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = self.loop.create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- used by the client -------------------------------------------------------------------

    def reusable(self) -> bool:
        return not (self.stale or self.closed) and self.h11.our_state is h11.IDLE

    async def _wait(self, fut: asyncio.Future[None], timeout: float, what: str) -> None:
        timer = self.loop.call_later(timeout, _expire, fut, what, timeout)
        try:
            await fut
        finally:
            timer.cancel()

    async def write(self, chunks: list[bytes], timeout: float) -> None:
        if self.closed or self.transport is None:
            raise TransportError("the connection was closed before the request was sent")
        self.transport.writelines(chunks)
        if self._drained is not None:
            await self._wait(self._drained, timeout, "room to write")
            if self.closed:
                raise TransportError("the connection was closed while the request was sent")

    async def read(self, timeout: float) -> bytes:
        """What arrived since the last read (waiting up to ``timeout``); b"" at EOF."""
        while not self.buffer and not self.eof:
            self._waiter = self.loop.create_future()
            await self._wait(self._waiter, timeout, "answer")
        if self.buffer:
            data = bytes(self.buffer)
            self.buffer.clear()
            if self.paused and self.transport is not None and not self.closed:
                self.paused = False
                self.transport.resume_reading()
            return data
        if self.lost is not None:
            raise TransportError(f"the connection broke: {self.lost}") from self.lost
        return b""

    def poll(self) -> Any:
        """The next h11 event from what was read so far (``h11.NEED_DATA`` if none)."""
        try:
            return self.h11.next_event()
        except h11.RemoteProtocolError as e:
            raise TransportError(f"the endpoint broke HTTP/1.1: {e}") from None

    async def next_event(self, timeout: float) -> Any:
        """The next h11 event, reading from the network as needed."""
        while (event := self.poll()) is h11.NEED_DATA:
            self.h11.receive_data(await self.read(timeout))
        return event

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _expire(fut: asyncio.Future[None], what: str, timeout: float) -> None:
    if not fut.done():
        fut.set_exception(TransportTimeout(f"no {what} from the endpoint within {timeout:g} s"))


class _Decoder:
    """Content-Encoding gzip / deflate (raw or zlib-wrapped), or none."""

    def __init__(self, encoding: str) -> None:
        self.name = encoding
        self.z: Any = None
        if encoding in ("gzip", "x-gzip"):
            self.z = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self.z = zlib.decompressobj()
        elif encoding not in ("", "identity"):
            raise TransportError(f"the endpoint answered with an unsupported encoding {encoding!r}")
        self.first = True

    def feed(self, data: bytes) -> bytes:
        if self.z is None:
            return data
        try:
            return self.z.decompress(data)
        except zlib.error:
            if self.name == "deflate" and self.first:  # raw deflate, as some servers send
                self.z = zlib.decompressobj(-zlib.MAX_WBITS)
                self.first = False
                return self.z.decompress(data)
            raise TransportError(f"the endpoint's {self.name} body is corrupt") from None
        finally:
            self.first = False

    def flush(self) -> bytes:
        return self.z.flush() if self.z is not None else b""


class Response:
    """A streamed answer: the status and headers are read, the body is read as it is asked."""

    def __init__(
        self,
        client: HTTPClient,
        conn: _Connection,
        head: h11.Response,
        timeout: float,
    ) -> None:
        self.status_code = head.status_code
        self.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in head.headers}
        self._client = client
        self._conn: _Connection | None = conn
        self._timeout = timeout
        self._decoder = _Decoder(self.headers.get("content-encoding", "").strip().lower())

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The (decoded) body: everything each network read completed, in one piece."""
        conn = self._conn
        if conn is None:
            return
        while True:
            data = []
            event: Any = await conn.next_event(self._timeout)
            # Drain what is already here without reading again: one piece per read.
            while isinstance(event, h11.Data):
                data.append(event.data)
                event = conn.poll()
            if data:
                out = self._decoder.feed(b"".join(data))
                if out:
                    yield out
            if isinstance(event, h11.EndOfMessage):
                tail = self._decoder.flush()
                self._finished()
                if tail:
                    yield tail
                return
            if isinstance(event, h11.ConnectionClosed):
                raise TransportError("the endpoint closed the connection mid-answer")

    async def aread(self) -> bytes:
        """The whole (decoded) body."""
        return b"".join([data async for data in self.aiter_bytes()])

    def _finished(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._client._release(conn)

    async def aclose(self) -> None:
        """Give the connection back (body read to its end) or close it (anything else)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class HTTPClient:
    """Keep-alive HTTP/1.1 (see the module docstring). One per event loop."""

    def __init__(self, timeout: float, tls: ssl.SSLContext | None = None) -> None:
        self.timeout = timeout
        self.tls = tls
        self._idle: dict[Origin, list[_Connection]] = {}

    async def send(
        self, method: str, url: str, headers: dict[str, str], content: bytes = b""
    ) -> Response:
        """Send one request and read the answer's head, following redirects."""
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._send_once(method, url, headers, content)
            location = response.headers.get("location")
            if response.status_code not in (301, 302, 303, 307, 308) or not location:
                return response
            await response.aread()  # short; the connection goes back to the pool
            new = urljoin(url, location)
            if _split(new)[0] != _split(url)[0]:
                headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            if (response.status_code == 303 and method != "HEAD") or (
                response.status_code in (301, 302) and method == "POST"
            ):
                method, content = "GET", b""
                headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            url = new
        raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects, the last to {url}")

    async def _send_once(
        self, method: str, url: str, headers: dict[str, str], content: bytes
    ) -> Response:
        origin, host, target = _split(url)
        fields = [("Host", host), *headers.items()]
        if content or method in ("POST", "PUT", "PATCH"):
            fields.append(("Content-Length", str(len(content))))
        if not any(k.lower() == "accept-encoding" for k in headers):
            fields.append(("Accept-Encoding", "gzip, deflate"))
        # A kept-alive connection the server has just closed fails before any answer: then
        # (once, and only for a reused one) the request goes again on a new connection.
        for attempt in (0, 1):
            conn, reused = await self._connection(origin, fresh=attempt > 0)
            try:
                try:
                    chunks = [conn.h11.send(h11.Request(method=method, target=target,
                                                        headers=fields))]  # fmt: skip
                    if content:
                        chunks += conn.h11.send_with_data_passthrough(h11.Data(data=content)) or []
                    chunks.append(conn.h11.send(h11.EndOfMessage()))
                except (h11.LocalProtocolError, UnicodeEncodeError) as e:
                    raise InvalidRequest(f"the request cannot be sent: {e}") from None
                await conn.write([c for c in chunks if c], self.timeout)
                event = await conn.next_event(self.timeout)
                while isinstance(event, h11.InformationalResponse):  # 100 Continue
                    event = await conn.next_event(self.timeout)
                if not isinstance(event, h11.Response):
                    raise TransportError("the endpoint closed the connection without answering")
            except TransportError:
                conn.close()
                if reused and attempt == 0 and not conn.got:
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            try:
                return Response(self, conn, event, self.timeout)
            except TransportError:  # an encoding we cannot read
                conn.close()
                raise
        raise AssertionError("unreachable")

    async def _connection(self, origin: Origin, fresh: bool) -> tuple[_Connection, bool]:
        loop = asyncio.get_running_loop()
        idle = self._idle.get(origin, [])
        while idle and not fresh:
            conn = idle.pop()
            if conn.loop is loop and conn.reusable():
                conn.busy, conn.got = True, 0
                return conn, True
            conn.close()
        scheme, host, port = origin
        tls = None
        if scheme == "https":
            tls = self.tls or ssl.create_default_context()
        conn = _Connection(origin, loop)
        try:
            await wait_for(
                loop.create_connection(
                    lambda: conn, host, port, ssl=tls, server_hostname=host if tls else None
                ),
                self.timeout,
            )
        except TimeoutError:
            raise TransportTimeout(
                f"could not connect to {host}:{port} within {self.timeout:g} s"
            ) from None
        except OSError as e:
            raise TransportError(str(e) or type(e).__name__) from e
        return conn, False

    def _release(self, conn: _Connection) -> None:
        """A request is over with ``conn``: keep it for the next one, if it can be."""
        h = conn.h11
        if h.our_state is h11.DONE and h.their_state is h11.DONE and not conn.closed:
            h.start_next_cycle()
            conn.busy = False
            idle = self._idle.setdefault(conn.origin, [])
            if len(idle) < MAX_IDLE:
                idle.append(conn)
                return
        conn.close()

    async def aclose(self) -> None:
        """Close the idle connections (those in use close with their responses)."""
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
