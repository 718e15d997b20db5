"""The live app proxy: ``/api/think/sessions/{id}/apps/{name}/<path>`` (HTTP and WebSocket)
to the app's private unix socket, behind jupyter_server's authentication and authorisation.

As jupyter-server-proxy does for its unix-socket servers, tornado's own HTTP and WebSocket
clients reach the socket through a resolver that maps every host to it
(:class:`UnixResolver`): whatever a request's path, Host header or absolute URL says, it can
only ever reach that one app. What the app gets and sends is filtered:

- the request loses what would let the app act as the person on the Jupyter server: the
  ``Authorization`` header, the ``token`` query argument, the XSRF header and Jupyter's
  cookies (login, ``_xsrf``, the person cookie, JupyterHub's);
- the response may not set those cookies, and carries ``Content-Security-Policy: sandbox``
  (:data:`SANDBOX`): the browser runs the app in an opaque origin, even opened on its own,
  so its scripts cannot read JupyterLab's cookies, storage or DOM, nor call the server's API
  with the person's credentials;
- nor may it act on the server's whole origin: its cookies are scoped to its own prefix (a
  ``Path=/`` cookie bomb would make every Jupyter request too large), headers that reach
  the origin (``Clear-Site-Data`` would log the person out, ``Service-Worker-Allowed``,
  ``Access-Control-Allow-Credentials``) are dropped, and a redirect stays on the app (its
  ``/x`` is its prefix's, another site's address is refused, not an open redirect).

The app sees its path without the prefix (``/``, ``/static/app.js``), and the prefix in the
``X-Forwarded-Prefix`` header; links in its pages must be relative.

In the browser the app's page has an opaque origin, so the page's own requests (its scripts,
images, fetches, WebSocket) carry no login cookie and an ``Origin: null``. JupyterLab
therefore opens the app at a capability path, ``.../apps/{name}/@{key}/``: ``key`` is an HMAC
of the session and app name under the server's cookie secret (:func:`capability`), handed
out only to people the ``think`` authoriser lets list the session's apps. Its relative links
keep the key, and a request with the right key is let through without a cookie, from any
origin: the key opens this one app and nothing else (not another app, not the server's
API), and ``Referrer-Policy: no-referrer`` keeps it out of requests the page makes
elsewhere.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from jupyter_core.utils import ensure_async
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import httpclient, httputil, netutil, web
from tornado.websocket import WebSocketClientConnection, WebSocketHandler, websocket_connect

from .base import AUTH_RESOURCE, services_or_503

if TYPE_CHECKING:
    from .services import Services, Startup

#: The policy every proxied response carries: an opaque origin for the app's documents.
SANDBOX = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
#: Cookies of the Jupyter server (and JupyterHub, and Think): never sent to an app, never
#: set by one.
_SERVER_COOKIE = re.compile(r"^(_xsrf|username-.*|jupyterhub.*|jupyter-person-.*)$", re.I)
#: Request headers an app never gets: credentials and the hop-by-hop ones.
_DROP_REQUEST = frozenset(
    {"authorization", "cookie", "x-xsrftoken", "x-xsrf-token", "connection", "keep-alive",
     "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding",
     "upgrade", "content-length"}
)  # fmt: skip
_DROP_WEBSOCKET = frozenset({"sec-websocket-key", "sec-websocket-version",
                             "sec-websocket-extensions", "sec-websocket-protocol"})  # fmt: skip
_DROP_RESPONSE = frozenset({"connection", "keep-alive", "proxy-authenticate", "trailer",
                            "transfer-encoding", "upgrade", "clear-site-data",
                            "service-worker-allowed", "access-control-allow-credentials",
                            "referrer-policy"})  # fmt: skip
_CONNECT_TIMEOUT = 10.0
_REQUEST_TIMEOUT = 24 * 3600.0  # a stream (server-sent events) may stay open for long
_MAX_BODY = 1 << 40


class UnixResolver(netutil.Resolver):
    """Resolves every host to one unix socket (the app's)."""

    def initialize(self, path: str) -> None:  # type: ignore[override]
        """Remember the socket."""
        self.path = path

    async def resolve(  # type: ignore[override]
        self, host: str, port: int, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[tuple[int, Any]]:
        """The app's socket, whatever was asked."""
        return [(socket.AF_UNIX, self.path)]


class AppClients:
    """One HTTP client per app socket (its connections are reused)."""

    def __init__(self) -> None:
        self._clients: dict[str, httpclient.AsyncHTTPClient] = {}

    def get(self, path: str) -> httpclient.AsyncHTTPClient:
        """The client for the socket at ``path``."""
        client = self._clients.get(path)
        if client is None:
            client = httpclient.AsyncHTTPClient(
                force_instance=True, resolver=UnixResolver(path=path), max_clients=64,
                max_body_size=_MAX_BODY,
            )  # fmt: skip
            self._clients[path] = client
        return client

    def forget(self, keep: set[str]) -> None:
        """Close the clients of sockets not in ``keep`` (apps that ended)."""
        for path in [p for p in self._clients if p not in keep]:
            self._clients.pop(path).close()


def is_server_cookie(name: str, login: str) -> bool:
    """Whether ``name`` is one of the server's cookies (``login``: its login cookie's name,
    which a deployment may configure)."""
    name = name.strip()
    return bool(_SERVER_COOKIE.match(name)) or name.lower() == login.lower()


def without_server_cookies(header: str, login: str = "") -> str:
    """A Cookie header without the Jupyter server's cookies."""
    kept = []
    for part in header.split(";"):
        name = part.split("=", 1)[0].strip()
        if name and not is_server_cookie(name, login):
            kept.append(part.strip())
    return "; ".join(kept)


def scoped_cookie(value: str, prefix: str) -> str:
    """A Set-Cookie value for the app's prefix only: no Domain, its own Path."""
    name, *attrs = value.split(";")
    kept = [a for a in attrs if a.split("=", 1)[0].strip().lower() not in ("path", "domain")]
    return ";".join([name, *kept, f" Path={prefix}/"])


def app_location(value: str, prefix: str) -> str | None:
    """Where an app's redirect may send the browser: relative, or its own ``/x`` under its
    prefix; ``None`` for another site (browsers read ``/\\host`` as ``//host``)."""
    url = urlsplit(value.strip().replace("\\", "/"))
    if url.scheme or url.netloc:
        return None
    return prefix + value.strip() if value.strip().startswith("/") else value


def capability(secret: bytes, session_id: str, name: str) -> str:
    """The key of an app's capability path (43 URL-safe characters)."""
    mac = hmac.new(secret, f"think-app\0{session_id}\0{name}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")


def open_path(secret: bytes, session_id: str, name: str) -> str:
    """The path (below the server's base URL) a browser opens the app at, key included."""
    return f"api/think/sessions/{session_id}/apps/{name}/@{capability(secret, session_id, name)}/"


class AppProxy(WebSocketHandler, ExtensionHandlerMixin, JupyterHandler):  # type: ignore[misc]
    """One request (or WebSocket) to a session's live app."""

    SUPPORTED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")  # type: ignore[assignment]
    auth_resource = AUTH_RESOURCE

    svc: Services

    def initialize(self, name: str, startup: Startup) -> None:  # type: ignore[override]
        """Receive the extension's start handle."""
        super().initialize(name)
        self.startup = startup
        self.socket_path = ""
        self.prefix = ""
        self.upstream: WebSocketClientConnection | None = None
        self._status: tuple[int, str] | None = None
        self._app_headers = httputil.HTTPHeaders()
        self._started = False
        self.by_key = False  # let through by the app's capability key
        self._refused = False

    async def prepare(self) -> None:  # type: ignore[override]
        """Authenticate (403, never a login redirect), authorise on ``think``, find the app.
        A request at the app's capability path is let through by its key alone."""
        sid, name = self.path_kwargs["session_id"], self.path_kwargs["name"]
        key = self.path_kwargs.get("key")
        if key is not None:
            if not self.check_host():  # as every Jupyter handler: no DNS rebinding
                raise web.HTTPError(403)
            secret = self.settings.get("cookie_secret") or b""
            self.by_key = bool(secret) and hmac.compare_digest(key, capability(secret, sid, name))
            if not self.by_key:
                raise web.HTTPError(403, "not a key of this app")
        else:
            await self._authorise()
        self.svc = await services_or_503(self.startup)
        if await self.svc.store.get_session(sid) is None:
            raise web.HTTPError(404, f"no session {sid!r}")
        row = self.svc.apps.row(sid, name)
        if row is None or row.get("state") not in ("starting", "running"):
            state = row.get("state") if row is not None else None
            why = f"app {name!r} is {state}" if state else f"no app {name!r} in this session"
            raise web.HTTPError(404, why)
        self.socket_path = str(row.get("socket") or "")
        marker = f"/sessions/{sid}/apps/{name}" + (f"/@{key}" if key is not None else "")
        self.prefix = self.request.path[: self.request.path.index(marker) + len(marker)]

    async def _authorise(self) -> None:
        """The person's login, and the ``think`` right the method needs (403 otherwise)."""
        await JupyterHandler.prepare(self, _redirect_to_login=False)
        user = self.current_user
        if user is None:
            raise web.HTTPError(403)
        read = self.request.method in ("GET", "HEAD", "OPTIONS")
        action = "read" if read else "write"
        if not await ensure_async(self.authorizer.is_authorized(self, user, action,
                                                                AUTH_RESOURCE)):  # fmt: skip
            raise web.HTTPError(403, f"not authorised to {action} think sessions")

    def check_xsrf_cookie(self) -> None:
        """The app checks its own forms: its pages cannot hold the server's XSRF token."""

    def check_origin(self, origin: str | None = None) -> bool:
        """A WebSocket from the server's own origin (or with no Origin: a script); at the
        capability path from any origin (the app's page is opaque: ``Origin: null``), since
        the key, not a cookie, is what lets it in."""
        return self.by_key or JupyterHandler.check_origin(self)

    def compute_etag(self) -> None:
        """The app's own ETag, if any (tornado would answer 304 for it)."""
        return None

    # ------------------------------------------------------------------ what goes to the app

    def upstream_path(self) -> str:
        """The path (and query) the app sees: below its prefix, without ``token``."""
        tail = self.request.path[len(self.prefix) :] or "/"
        query = self.request.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(k == "token" for k, _ in pairs):
                query = urlencode([(k, v) for k, v in pairs if k != "token"])
        return f"{tail}?{query}" if query else tail

    def upstream_headers(self, websocket: bool = False) -> httputil.HTTPHeaders:
        """The request's headers for the app: no credentials, no hop-by-hop ones."""
        out = httputil.HTTPHeaders()
        drop = _DROP_REQUEST | (_DROP_WEBSOCKET if websocket else frozenset())
        for key, value in self.request.headers.get_all():
            if key.lower() not in drop:
                out.add(key, value)
        login = self.identity_provider.get_cookie_name(self)
        cookies = without_server_cookies(self.request.headers.get("Cookie", ""), login)
        if cookies:
            out["Cookie"] = cookies
        out["X-Forwarded-Prefix"] = self.prefix
        out["X-Forwarded-Proto"] = self.request.protocol
        out["X-Forwarded-Host"] = self.request.host
        out["X-Forwarded-For"] = self.request.remote_ip or ""
        return out

    # ------------------------------------------------------------------ HTTP

    async def get(self, *args: Any, **kwargs: Any) -> None:
        """A WebSocket upgrade, or an HTTP GET."""
        if kwargs.get("path") is None:
            return self._to_slash()
        if self.request.headers.get("Upgrade", "").lower() == "websocket":
            await WebSocketHandler.get(self, *args, **kwargs)
            return
        await self.proxy()

    async def head(self, *args: Any, **kwargs: Any) -> None:
        """Proxied."""
        await self.proxy()

    async def post(self, *args: Any, **kwargs: Any) -> None:
        """Proxied."""
        await self.proxy()

    async def put(self, *args: Any, **kwargs: Any) -> None:
        """Proxied."""
        await self.proxy()

    async def patch(self, *args: Any, **kwargs: Any) -> None:
        """Proxied."""
        await self.proxy()

    async def delete(self, *args: Any, **kwargs: Any) -> None:
        """Proxied."""
        await self.proxy()

    async def options(self, *args: Any, **kwargs: Any) -> None:
        """Proxied; at the keyed path a CORS preflight is answered here (see ``_begin``)."""
        method = self.request.headers.get("Access-Control-Request-Method")
        if self.by_key and method:
            self.set_status(204)
            self.set_header("Content-Security-Policy", f"frame-ancestors 'self'; {SANDBOX}")
            self.set_header("Access-Control-Allow-Origin", "*")
            self.set_header("Access-Control-Allow-Methods", method)
            asked = self.request.headers.get("Access-Control-Request-Headers")
            if asked:
                self.set_header("Access-Control-Allow-Headers", asked)
            self.set_header("Access-Control-Max-Age", "600")
            self.finish()
            return
        await self.proxy()

    def _to_slash(self) -> None:
        """``.../apps/NAME`` -> ``.../apps/NAME/``: its relative links need the slash."""
        query = f"?{self.request.query}" if self.request.query else ""
        self.redirect(self.request.path + "/" + query, permanent=False)

    async def proxy(self) -> None:
        """Send the request to the app; stream its answer back."""
        method = self.request.method or "GET"
        body = self.request.body if method not in ("GET", "HEAD") else None
        request = httpclient.HTTPRequest(
            url=f"http://app{self.upstream_path()}",
            method=method,
            headers=self.upstream_headers(),
            body=body if body or method in ("POST", "PUT", "PATCH") else None,
            follow_redirects=False,
            decompress_response=False,
            allow_nonstandard_methods=True,
            connect_timeout=_CONNECT_TIMEOUT,
            request_timeout=_REQUEST_TIMEOUT,
            header_callback=self._on_header,
            streaming_callback=self._on_chunk,
        )
        try:
            response = await self.svc.apps.clients.get(self.socket_path).fetch(
                request, raise_error=False
            )
        except Exception as e:  # the app went away, or its answer was not HTTP
            if self._started:
                self.finish()
                return
            raise web.HTTPError(502, f"the app did not answer: {e}") from None
        if not self._started:  # an answer without a body never reached the chunk callback
            if response.code >= 599:
                raise web.HTTPError(502, f"the app did not answer: {response.error}")
            self._begin()
        self.finish()

    def _on_header(self, line: str) -> None:
        if self._status is None or self._status[0] < 200:
            if line.startswith("HTTP/"):
                start = httputil.parse_response_start_line(line.strip())
                self._status = (start.code, start.reason)
                self._app_headers = httputil.HTTPHeaders()
            return
        if line.strip():
            self._app_headers.parse_line(line)

    def _begin(self) -> None:
        """The app's status and headers, filtered, and the sandbox policy."""
        if self._started:
            return
        self._started = True
        code, reason = self._status or (502, "Bad Gateway")
        self.set_status(code, reason)
        # Ours, then the app's own policies: a browser enforces every one.
        self.set_header("Content-Security-Policy", f"frame-ancestors 'self'; {SANDBOX}")
        self.set_header("Referrer-Policy", "no-referrer")  # the key stays out of Referer
        seen = {"content-security-policy"}
        if self.by_key:
            # The page's own fetches come from its opaque origin (``Origin: null``): a
            # cross-origin read, which CORS must allow. No cookie is involved (the key is the
            # credential), so ``*`` lets the page read its own app and nothing more.
            self.set_header("Access-Control-Allow-Origin", "*")
            seen.add("access-control-allow-origin")
        login = self.identity_provider.get_cookie_name(self)
        for key, value in self._app_headers.get_all():
            low = key.lower()
            if low in _DROP_RESPONSE or (self.by_key and low == "access-control-allow-origin"):
                continue
            if low == "set-cookie":
                if is_server_cookie(value.split("=", 1)[0], login):
                    continue
                value = scoped_cookie(value, self.prefix)
            if low == "location":
                where = app_location(value, self.prefix)
                if where is None:
                    self._refuse(f"the app redirected to another site: {value[:200]!r}")
                    return
                value = where
            if low not in seen:
                self.clear_header(key)
                seen.add(low)
            self.add_header(key, value)

    def _refuse(self, why: str) -> None:
        """Answer 502 instead of the app's response (its body is dropped)."""
        self._refused = True
        self.log.warning("Think: app %s refused: %s", self.prefix, why)
        self.clear()
        self.set_status(502)
        self.set_header("Content-Security-Policy", f"frame-ancestors 'self'; {SANDBOX}")
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.write(why)

    def _on_chunk(self, chunk: bytes) -> None:
        self._begin()
        if self._refused:
            return
        self.write(chunk)
        self.flush()

    # ------------------------------------------------------------------ WebSocket

    def select_subprotocol(self, subprotocols: list[str]) -> str | None:
        """The client's first subprotocol (the app gets them all)."""
        return subprotocols[0] if subprotocols else None

    async def open(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Connect to the app's WebSocket at the same path."""
        protocols = [p.strip() for p in
                     self.request.headers.get("Sec-WebSocket-Protocol", "").split(",")
                     if p.strip()]  # fmt: skip
        request = httpclient.HTTPRequest(
            url=f"ws://app{self.upstream_path()}",
            headers=self.upstream_headers(websocket=True),
            connect_timeout=_CONNECT_TIMEOUT,
        )
        try:
            self.upstream = await websocket_connect(
                request, on_message_callback=self._from_app, subprotocols=protocols or None,
                resolver=UnixResolver(path=self.socket_path),
            )  # fmt: skip
        except Exception as e:
            self.log.info("Think: app WebSocket refused: %s", e)
            self.close(1011, "the app did not accept the WebSocket")

    def _from_app(self, message: str | bytes | None) -> None:
        if message is None:
            self.close()
            return
        try:
            self.write_message(message, binary=isinstance(message, bytes))
        except Exception:  # the browser side closed meanwhile
            self.close()

    async def on_message(self, message: str | bytes) -> None:
        """A message for the app."""
        if self.upstream is not None:
            try:
                await self.upstream.write_message(message, binary=isinstance(message, bytes))
            except Exception:
                self.close()

    def on_close(self) -> None:
        """The browser went: close the app's side too."""
        if self.upstream is not None:
            self.upstream.close()
            self.upstream = None


def proxy_routes(s: str) -> list[str]:
    """The proxy's URL patterns under the session prefix ``s`` (the second redirects to
    the first: an app's relative links need the slash)."""
    name = r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.\-]{0,39})"
    key = r"@(?P<key>[A-Za-z0-9_\-]{43})"
    return [
        rf"{s}/apps/{name}/{key}/(?P<path>.*)",
        rf"{s}/apps/{name}/{key}",
        rf"{s}/apps/{name}/(?P<path>.*)",
        rf"{s}/apps/{name}",
    ]
