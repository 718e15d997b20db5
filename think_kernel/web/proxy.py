"""The egress proxy: every byte the browser and the search tools send goes through here.

    proxy = EgressProxy(egress)
    url = await proxy.start()            # http://127.0.0.1:PORT, given to Chromium and httpx
    ...
    await proxy.aclose()

A small HTTP/1.1 forward proxy (h11 for the framing) on loopback. ``CONNECT host:port``
(HTTPS, and every WebSocket: Chromium tunnels ``ws://`` too) opens a tunnel to an address
:class:`~think_kernel.web.egress.Egress` resolved and checked once; absolute-form requests
(``GET http://host/...``) are forwarded one upstream connection per request, so a keep-alive
connection from the browser can never carry a request to a host that was not checked.
Refused connections answer 403 with the reason (Chromium shows it for plain HTTP; for a
tunnel it reports ``ERR_TUNNEL_CONNECTION_FAILED``, and the tools read the reason from
``egress.blocked``). Chromium resolves nothing itself for proxied requests, so what it would
have resolved is irrelevant: the proxy's answer is the one used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit

import h11

from ..waits import wait_for
from .egress import Blocked, Egress

log = logging.getLogger(__name__)

_HOP_BY_HOP = {
    b"connection",
    b"proxy-connection",
    b"keep-alive",
    b"proxy-authorization",
    b"proxy-authenticate",
    b"te",
    b"trailer",
    b"upgrade",
}
_READ = 65536


def split_authority(authority: str, default_port: int) -> tuple[str, int]:
    """``host:port`` / ``[v6]:port`` / ``host`` -> (host, port); ValueError if malformed."""
    parsed = urlsplit(f"//{authority}")
    host = parsed.hostname
    port = parsed.port or default_port
    if not host:
        raise ValueError(f"no host in {authority!r}")
    return host, port


class EgressProxy:
    """HTTP and CONNECT proxy on 127.0.0.1 whose upstream connections are all checked."""

    def __init__(
        self,
        egress: Egress,
        *,
        max_response_bytes: int = 50_000_000,
        max_tunnel_bytes: int = 500_000_000,
        idle_timeout: float = 120.0,
    ) -> None:
        self.egress = egress
        self.max_response_bytes = max_response_bytes
        self.max_tunnel_bytes = max_tunnel_bytes
        self.idle_timeout = idle_timeout
        self.requests = 0
        self._server: asyncio.Server | None = None
        self._open: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self.url = ""

    async def start(self) -> str:
        """Listen on a free loopback port; return the proxy URL."""
        if self._server is None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, limit=_READ)
            port = self._server.sockets[0].getsockname()[1]
            self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def aclose(self) -> None:
        """Stop listening and drop every open connection."""
        if self._server is not None:
            self._server.close()
            self._server = None
        # Closing the sockets ends every handler by itself (Python 3.11's stream callback
        # would log a cancelled handler task as an error); cancel only what still hangs.
        for writer in self._open.values():
            writer.close()
        tasks = list(self._open)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=2.0)
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._open[task] = writer
        try:
            await self._serve(reader, writer)
        except (ConnectionError, TimeoutError, h11.ProtocolError, asyncio.IncompleteReadError):
            pass
        except Exception:  # a proxy bug must not take the kernel down; the page just fails
            log.exception("egress proxy connection failed")
        finally:
            self._open.pop(task, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _next(self, conn: h11.Connection, reader: asyncio.StreamReader) -> object:
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await wait_for(reader.read(_READ), self.idle_timeout)
            conn.receive_data(data)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_READ)
        while True:
            event = await self._next(conn, reader)
            if not isinstance(event, h11.Request):
                return  # ConnectionClosed, PAUSED or garbage: nothing more to serve
            self.requests += 1
            if event.method == b"CONNECT":
                await self._tunnel(conn, event, reader, writer)
                return
            keep = await self._forward(conn, event, reader, writer)
            if not keep or conn.our_state is h11.MUST_CLOSE:
                return
            if conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()

    def _reply(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, status: int, text: str
    ) -> None:
        body = (text + "\n").encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        with contextlib.suppress(h11.LocalProtocolError):
            writer.write(conn.send(h11.Response(status_code=status, headers=headers)))
            writer.write(conn.send(h11.Data(data=body)))
            writer.write(conn.send(h11.EndOfMessage()))

    async def _tunnel(
        self,
        conn: h11.Connection,
        request: h11.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        try:
            host, port = split_authority(request.target.decode("ascii", "replace"), 443)
        except ValueError as e:
            self._reply(conn, writer, 400, f"bad CONNECT target: {e}")
            return
        await self._next(conn, reader)  # the CONNECT's EndOfMessage
        try:
            up_reader, up_writer, _ = await self.egress.open(host, port, f"CONNECT {host}:{port}")
        except Blocked as e:
            self._reply(conn, writer, 403, str(e))
            return
        except OSError as e:
            self._reply(conn, writer, 502, str(e))
            return
        try:
            writer.write(conn.send(h11.Response(status_code=200, headers=[])))
            early, _ = conn.trailing_data
            if early:
                up_writer.write(early)
            budget = [self.max_tunnel_bytes]
            await asyncio.gather(
                self._pipe(reader, up_writer, budget), self._pipe(up_reader, writer, budget)
            )
        finally:
            up_writer.close()

    async def _pipe(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, budget: list[int]
    ) -> None:
        try:
            while True:
                data = await wait_for(src.read(_READ), self.idle_timeout)
                if not data:
                    break
                budget[0] -= len(data)
                if budget[0] < 0:
                    log.warning("egress proxy: tunnel over %d bytes closed", self.max_tunnel_bytes)
                    dst.close()
                    return
                dst.write(data)
                await dst.drain()
        except (ConnectionError, TimeoutError):
            dst.close()
            return
        with contextlib.suppress(OSError, RuntimeError):
            if dst.can_write_eof():
                dst.write_eof()

    async def _forward(
        self,
        conn: h11.Connection,
        request: h11.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Forward one absolute-form request; True if the client connection may be reused."""
        target = urlsplit(request.target.decode("ascii", "replace"))
        if target.scheme != "http" or not target.hostname:
            self._reply(conn, writer, 400, "the proxy takes absolute http:// URLs and CONNECT")
            return False
        if any(name == b"upgrade" for name, _ in request.headers):
            self._reply(conn, writer, 501, "protocol upgrades go through CONNECT")
            return False
        host = target.hostname
        try:
            port = target.port or 80
        except ValueError:
            self._reply(conn, writer, 400, "bad port")
            return False
        try:
            what = f"{request.method.decode('ascii', 'replace')} {target.geturl()}"
            up_reader, up_writer, _ = await self.egress.open(host, port, what)
        except Blocked as e:
            self._reply(conn, writer, 403, str(e))
            return False
        except OSError as e:
            self._reply(conn, writer, 502, str(e))
            return False
        try:
            return await self._exchange(conn, request, target, reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _exchange(
        self,
        conn: h11.Connection,
        request: h11.Request,
        target: object,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> bool:
        path = getattr(target, "path", "") or "/"
        query = getattr(target, "query", "")
        origin_form = (path + (f"?{query}" if query else "")).encode()
        headers = [(n, v) for n, v in request.headers if n not in _HOP_BY_HOP]
        headers.append((b"connection", b"close"))
        up = h11.Connection(h11.CLIENT)
        up_writer.write(
            up.send(h11.Request(method=request.method, target=origin_form, headers=headers))
        )
        while True:  # the request body, as the browser sends it
            event = await self._next(conn, reader)
            if isinstance(event, h11.Data):
                up_writer.write(up.send(h11.Data(data=event.data)))
                await up_writer.drain()
            elif isinstance(event, h11.EndOfMessage):
                up_writer.write(up.send(h11.EndOfMessage()))
                await up_writer.drain()
                break
            else:
                return False
        size = 0
        while True:
            event = await self._next(up, up_reader)
            if isinstance(event, h11.InformationalResponse):
                continue  # 100 Continue and friends stay between us and the upstream
            if isinstance(event, h11.Response):
                out = [(n, v) for n, v in event.headers if n not in _HOP_BY_HOP]
                head = h11.Response(status_code=event.status_code, headers=out, reason=event.reason)
                writer.write(conn.send(head))
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > self.max_response_bytes:
                    log.warning("egress proxy: response over %d bytes cut", self.max_response_bytes)
                    return False
                writer.write(conn.send(h11.Data(data=event.data)))
                await writer.drain()
            elif isinstance(event, h11.EndOfMessage):
                writer.write(conn.send(h11.EndOfMessage()))
                await writer.drain()
                return True
            else:
                return False
