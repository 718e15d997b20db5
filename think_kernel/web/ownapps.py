"""The session's own live apps, as pages its browser may open: nothing else internal.

The agent checks the app it served (``serve_app``) with ``browse_url`` or ``screenshot`` on the
address the tool printed, ``/api/think/sessions/{id}/apps/{name}/``, or on ``app://{name}/``:

    url = app_page_url("app://site/about", session_id, socket_of)
    # 'http://think-app.localhost/api/think/sessions/s_1/apps/site/about'
    async with browser.use(session_id) as tab:
        await AppRoutes(session_id, socket_of, egress.note_refusal).install(tab.context)
        await tab.page.goto(url)

The browser never reaches the Jupyter server for this, and never holds its token, cookies
or XSRF token: the page's origin is a name of its own (:data:`APP_HOST`), and the session's
browser context answers every request to it from the kernel (Playwright's request
interception, installed once the session has an app), over the app's private unix socket,
which the kernel made and only its user can open. Each request is checked on its own (a
page, a redirect, a script, an image, a ``fetch``, a WebSocket): it must name an app of
*this* session that runs, else it is refused and noted with the egress guard's refusals.
Every other request of the page still goes through the egress proxy and its policy,
unchanged; the egress refuses :data:`APP_HOST` by name, so a request the interception missed
(a session without apps, a redirect) fails closed.

The app gets what the server's proxy gives it: its path below its prefix, the prefix in
``X-Forwarded-Prefix``, and answers carrying ``Content-Security-Policy: sandbox`` (so the
agent sees the page as a person does, in an opaque origin), with ``Access-Control-Allow-
Origin: *`` for the page's own reads, as at the server's keyed path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..waits import wait_for
from .netpolicy import APP_HOST, is_app_host

log = logging.getLogger(__name__)

#: The origin the session's browser sees its apps at; only its own context answers it.
APP_ORIGIN = f"http://{APP_HOST}"
#: What every app answer carries, as the server's proxy sends it (``jupyter_ext/appproxy.py``).
SANDBOX = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
#: A live app's socket path by name, for one session (``None``: no such app running).
SocketOf = Callable[[str], str | None]
#: Records a refused request with the egress guard's: (host, port, reason, request).
NoteRefusal = Callable[[str, int, str, str], None]

_APP_PATH = re.compile(
    r"^/api/think/sessions/(?P<sid>[^/?#]+)/apps/(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]{0,39})"
    r"(?P<rest>/[^?#]*)?$"
)
#: Exchanges with a session's apps at once (a browser's connections to one host): a page's
#: thousand subresources queue here instead of each holding a socket and an answer.
MAX_EXCHANGES = 6
#: WebSockets between a session's pages and its apps at once; one more is closed (1013).
MAX_SOCKETS = 16
#: What an app may send down a WebSocket before the kernel waits for the pages to take it
#: (bytes): Playwright's ``WebSocketRoute.send`` does not wait, so an app that floods would
#: otherwise pile its messages up in the Playwright driver until it runs out of memory.
WS_CREDIT = 1_000_000
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 5
_HTTP_URL = re.compile(rf"^http://{re.escape(APP_HOST)}(:80)?/", re.I)
_WS_URL = re.compile(rf"^ws://{re.escape(APP_HOST)}(:80)?/", re.I)
# The X-Forwarded ones are the kernel's to say: a page's own would reach the app beside them.
_DROP_REQUEST = frozenset({"host", "connection", "keep-alive", "proxy-authorization",
                           "proxy-connection", "te", "trailer", "transfer-encoding",
                           "upgrade", "content-length", "x-forwarded-prefix",
                           "x-forwarded-proto", "x-forwarded-host",
                           "x-forwarded-for"})  # fmt: skip
# The body reaches the browser decoded and whole, so its length and coding are recomputed.
_DROP_RESPONSE = frozenset({"connection", "keep-alive", "proxy-authenticate", "trailer",
                            "transfer-encoding", "upgrade", "content-length",
                            "content-encoding", "access-control-allow-origin",
                            "access-control-allow-credentials"})  # fmt: skip


class NotOwnApp(Exception):
    """A URL in the apps' form that is not a running app of this session; says why."""


def app_prefix(session_id: str, name: str) -> str:
    """The app's prefix, as the server's proxy serves it (without the base URL)."""
    return f"/api/think/sessions/{session_id}/apps/{name}"


def _own(path: str, session_id: str, socket_of: SocketOf) -> tuple[str, str, str]:
    """(name, path below the prefix, socket) of this session's running app; NotOwnApp."""
    m = _APP_PATH.match(path)
    if m is None:
        raise NotOwnApp(
            f"{path!r} is not a live app's address: of the Jupyter server, the browser may open "
            f"only this session's apps, /api/think/sessions/{session_id}/apps/NAME/ "
            "(or app://NAME/)"
        )
    if m["sid"] != session_id:
        raise NotOwnApp(
            f"{path!r} is an app of another session: the browser opens only this session's "
            f"apps (/api/think/sessions/{session_id}/apps/NAME/)"
        )
    sock = socket_of(m["name"])
    if sock is None:
        raise NotOwnApp(f"no app {m['name']!r} runs in this session (app_logs lists them)")
    return m["name"], m["rest"] or "/", sock


def app_page_url(url: str, session_id: str, socket_of: SocketOf) -> str | None:
    """The browser's URL for an address of one of the session's apps (the printed path,
    ``app://NAME/path``, or the apps' own origin); ``None`` for any other URL (the egress
    policy decides on it); NotOwnApp for an app address that is not a running app of ours."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme == "app":
        path = app_prefix(session_id, parts.netloc) + (parts.path or "/")
    elif url.startswith("/") and not url.startswith("//"):
        path = parts.path
    elif parts.scheme in ("http", "https") and is_app_host(parts.hostname or ""):
        path = parts.path
    else:
        return None
    # As the browser will: dot segments (``%2e`` too) resolved before the check, not after.
    path = urlsplit(urljoin(APP_ORIGIN, re.sub("%2e", ".", path, flags=re.I))).path
    name, rest, _ = _own(path, session_id, socket_of)
    query = f"?{parts.query}" if parts.query else ""
    return f"{APP_ORIGIN}{app_prefix(session_id, name)}{rest}{query}"


def app_location(value: str, prefix: str) -> str:
    """An app's redirect as the browser gets it: its own ``/x`` under its prefix (as the
    server's proxy does); anything else as sent (the browser's next request is checked)."""
    text = value.strip()
    if text.startswith("/") and not text.startswith("//") and "\\" not in text[:2]:
        return prefix + text
    return value


class _UnixResolver:
    """tornado's resolver seam: every host is the app's socket."""

    def __init__(self, path: str) -> None:
        self.path = path

    async def resolve(self, host: str, port: int, family: int = 0) -> list[tuple[int, Any]]:
        """The app's socket, whatever was asked."""
        return [(socket.AF_UNIX, self.path)]

    def close(self) -> None:
        """Nothing to release."""


class AppRoutes:
    """Answers a session's browser context its own apps' requests, from their sockets."""

    def __init__(
        self,
        session_id: str,
        socket_of: SocketOf,
        note_refusal: NoteRefusal,
        *,
        max_bytes: int = 50_000_000,
        timeout: float = 30.0,
    ) -> None:
        self.session_id = session_id
        self.socket_of = socket_of
        self.note_refusal = note_refusal
        self.max_bytes = max_bytes
        self.timeout = timeout
        self._tasks: set[asyncio.Future[Any]] = set()
        self._upstreams: set[Any] = set()  # the apps' ends of the pages' WebSockets
        self._slots = asyncio.Semaphore(MAX_EXCHANGES)
        self._sockets = 0  # the pages' WebSockets to the apps, being reached or open
        self._context: Any = None

    async def install(self, context: Any) -> None:
        """Route the context's requests to :data:`APP_HOST` here (its pages' too)."""
        self._context = context
        context.on("close", lambda _context: self.close())
        await context.route(_HTTP_URL, self._http)
        await context.route_web_socket(_WS_URL, self._websocket)

    def _check(self, url: str, what: str) -> tuple[str, str, str]:
        """(prefix, path and query below it, socket) of one request, or NotOwnApp (noted)."""
        parts = urlsplit(url)
        try:
            name, rest, sock = _own(parts.path, self.session_id, self.socket_of)
        except NotOwnApp as e:
            self.note_refusal(APP_HOST, 80, str(e), what)
            raise
        query = f"?{parts.query}" if parts.query else ""
        return app_prefix(self.session_id, name), rest + query, sock

    # ------------------------------------------------------------------ HTTP

    def close(self) -> None:
        """Close the apps' ends of the WebSockets still open (the context closed)."""
        for upstream in list(self._upstreams):
            upstream.close()
        self._upstreams.clear()

    async def _http(self, route: Any) -> None:
        try:
            await self._answer(route)
        except Exception:  # a bug here must not take the kernel down; the request just fails
            log.exception("an app request failed")
            await self._fulfil(route, status=502, body="the request to the app failed")

    async def _answer(self, route: Any) -> None:
        request = route.request
        try:
            prefix, target, sock = self._check(request.url, f"{request.method} {request.url}")
        except NotOwnApp as e:
            await self._fulfil(route, status=403, body=str(e), content_type="text/plain")
            return
        preflight = request.method == "OPTIONS" and await request.header_value(
            "access-control-request-method"
        )
        if preflight:  # the page's origin is opaque: its own reads are cross-origin
            asked = await request.header_value("access-control-request-headers")
            headers = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods":
                       preflight, "Content-Security-Policy": SANDBOX}  # fmt: skip
            if asked:
                headers["Access-Control-Allow-Headers"] = asked
            await self._fulfil(route, status=204, headers=headers, body=b"")
            return
        sent = {k: v for k, v in (await request.all_headers()).items()
                if k.lower() not in _DROP_REQUEST and not k.startswith(":")}  # fmt: skip
        method, body, url = request.method, request.post_data_buffer, request.url
        cookies: list[str] = []
        # One bound for the whole chain, as the page's load has: steps each within the
        # timeout must not keep the kernel on the app long after the page gave up.
        deadline = asyncio.get_running_loop().time() + self.timeout
        try:
            for _ in range(_MAX_REDIRECTS + 1):
                left = max(0.0, deadline - asyncio.get_running_loop().time())
                status, headers, content = await wait_for(
                    self._one(method, target, sock, prefix, sent, body), left
                )
                if "set-cookie" in headers:
                    cookies.append(headers["set-cookie"])
                where = headers.get("location")
                if status not in _REDIRECTS or not where:
                    break
                url = urljoin(url, where)
                if not is_app_host(urlsplit(url).hostname or ""):
                    break  # elsewhere: the browser follows it through the egress guard
                # The browser would follow a redirect on this name outside these routes
                # (Playwright routes only a request's first address): follow it here, checked.
                prefix, target, sock = self._check(url, f"redirect to {url}")
                if status == 303 or (status in (301, 302) and method == "POST"):
                    method, body = "GET", None
            else:
                raise ValueError(f"more than {_MAX_REDIRECTS} redirects")
        except NotOwnApp as e:
            await self._fulfil(route, status=403, body=str(e), content_type="text/plain")
            return
        except (OSError, TimeoutError, ValueError) as e:
            why = f"the app did not answer: {type(e).__name__}: {e}"
            await self._fulfil(route, status=502, body=why, content_type="text/plain")
            return
        if cookies:  # those of the redirects it took, too
            headers["set-cookie"] = "\n".join(cookies)
        await self._fulfil(route, status=status, headers=headers, body=content)

    async def _one(self, *args: Any) -> tuple[int, dict[str, str], bytes]:
        """:meth:`_exchange`, once one of the :data:`MAX_EXCHANGES` slots is free."""
        async with self._slots:
            return await self._exchange(*args)

    async def _exchange(
        self,
        method: str,
        target: str,
        sock: str,
        prefix: str,
        sent: dict[str, str],
        body: bytes | None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One request to the app over its socket: (status, headers, body)."""
        import httpx

        sent = {**sent, "Host": APP_HOST, "X-Forwarded-Prefix": prefix,
                "X-Forwarded-Proto": "http", "X-Forwarded-Host": APP_HOST}  # fmt: skip
        # Plain HTTP on a unix socket: no TLS, so no certificate store to load per request.
        transport = httpx.AsyncHTTPTransport(uds=sock, verify=False)
        client = httpx.AsyncClient(
            transport=transport, trust_env=False, follow_redirects=False, timeout=self.timeout
        )
        async with client:
            url = f"http://app{target}"
            async with client.stream(method, url, headers=sent, content=body) as answer:
                chunks: list[bytes] = []
                size = 0
                async for chunk in answer.aiter_bytes():
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise ValueError(f"its answer is over {self.max_bytes} bytes")
                    chunks.append(chunk)
                out: dict[str, str] = {}
                for key, value in answer.headers.multi_items():
                    low = key.lower()
                    if low in _DROP_RESPONSE:
                        continue
                    if low == "location":
                        value = app_location(value, prefix)
                    # Playwright takes several Set-Cookie values joined by newlines.
                    out[low] = f"{out[low]}\n{value}" if low in out else value
                policy = out.get("content-security-policy")
                out["content-security-policy"] = f"{policy}, {SANDBOX}" if policy else SANDBOX
                out["access-control-allow-origin"] = "*"
                return answer.status_code, out, b"".join(chunks)

    async def _fulfil(self, route: Any, **answer: Any) -> None:
        try:
            await route.fulfill(**answer)
        except Exception as e:  # the page went away meanwhile: nothing waits for it
            log.debug("an app answer was not delivered: %s", e)

    # ------------------------------------------------------------------ WebSocket

    async def _websocket(self, ws: Any) -> None:
        from tornado import httpclient
        from tornado.websocket import websocket_connect

        try:
            _, target, sock = self._check(ws.url, f"WebSocket {ws.url}")
        except NotOwnApp as e:
            with contextlib.suppress(Exception):  # the page may be gone already
                await ws.close(code=1008, reason=str(e)[:120])
            return
        if self._sockets >= MAX_SOCKETS:  # each would hold a connection of the kernel's
            with contextlib.suppress(Exception):
                await ws.close(code=1013, reason=f"over {MAX_SOCKETS} app WebSockets at once")
            return
        self._sockets += 1
        early: list[str | bytes] = []
        ended: list[bool] = []
        upstream: Any = None
        waiting = [0]  # what the page sent that the app has not taken yet (bytes, about)

        def end(**why: Any) -> None:
            if ended:
                return
            ended.append(True)
            self._sockets -= 1
            if upstream is not None:
                self._upstreams.discard(upstream)
                upstream.close()
            self._own(ws.close(**why))

        def send(message: str | bytes, size: int) -> None:
            try:
                sent = upstream.write_message(message, binary=isinstance(message, bytes))
            except Exception:  # the app closed meanwhile
                end()
                return
            sent.add_done_callback(lambda _f: waiting.__setitem__(0, waiting[0] - size))
            self._own(sent)

        def from_page(message: str | bytes) -> None:
            # An app that does not read would have the kernel keep every send of the page.
            size = len(message)
            if waiting[0] + size > self.max_bytes:
                end(code=1009, reason="the app does not take its WebSocket's messages")
                return
            waiting[0] += size
            if upstream is None:
                early.append(message)
            elif not ended:
                send(message, size)

        async def from_app() -> None:
            # Read by read_message, not a callback: tornado reads the app's socket no faster
            # than this loop takes its messages, so the app's flood waits in the app.
            given = 0
            while not ended:
                message = await upstream.read_message()
                if message is None:
                    end()
                    return
                with contextlib.suppress(Exception):  # the page closed meanwhile
                    ws.send(message)
                given += len(message)
                if given >= WS_CREDIT:
                    given = 0
                    if not await self._taken():
                        end(code=1011, reason="the page does not take its WebSocket's messages")

        def closed(_code: int | None, _reason: str | None) -> None:
            end()

        ws.on_message(from_page)
        ws.on_close(closed)
        request = httpclient.HTTPRequest(f"ws://app{target}", connect_timeout=self.timeout,
                                         headers={"Host": APP_HOST})  # fmt: skip
        try:
            upstream = await websocket_connect(
                request,
                subprotocols=list(ws.protocols or []) or None,
                resolver=_UnixResolver(sock),  # type: ignore[arg-type]
            )
        except Exception as e:
            log.info("an app WebSocket was refused: %s", e)
            end(code=1011, reason="the app did not accept the WebSocket")
            return
        if ended:  # the page closed it while the app was being reached
            upstream.close()
            return
        self._upstreams.add(upstream)
        for message in early:
            send(message, len(message))
        early.clear()
        self._own(from_app())

    async def _taken(self) -> bool:
        """Wait until the context's pages took what was sent them (a round trip through
        each, queued behind those sends); False if they do not within the timeout."""
        pages = list(self._context.pages) if self._context is not None else []
        try:
            await wait_for(asyncio.gather(*(p.evaluate("0") for p in pages)), self.timeout)
        except TimeoutError:
            return False
        except Exception:  # a page went away: what it was sent went with it
            pass
        return True

    def _own(self, future: Any) -> None:
        """Keep a send or a close until it is done; a failure means the other side went."""
        fut = asyncio.ensure_future(future)
        self._tasks.add(fut)

        def done(f: asyncio.Future[Any]) -> None:
            self._tasks.discard(f)
            if not f.cancelled():
                f.exception()  # retrieved: a closed socket is not an error worth a log

        fut.add_done_callback(done)
