"""Local HTTP servers for the web tests: a small site, a hit recorder, fake Brave and SearXNG.

They are real HTTP servers on loopback ports (threads, so sync and async tests and kernels in
other processes can all use them). The browser reaches the site only because each test
allowlists it explicitly; the recorder stands in for anything the browser must never reach
and remembers every request that arrived.
"""

from __future__ import annotations

import html
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Route = Callable[["Request"], tuple[int, dict[str, str], bytes]]


class Request:
    """What a handler sees: method, path, query, headers, body."""

    def __init__(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        parts = urlsplit(handler.path)
        self.method = handler.command
        self.path = parts.path
        self.query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self.headers = {k.lower(): v for k, v in handler.headers.items()}
        self.body = body
        self.raw_path = handler.path


class Server:
    """A threaded HTTP server with routes; ``hits`` records every request (path, headers)."""

    def __init__(self, routes: dict[str, Route] | None = None, host: str = "127.0.0.1") -> None:
        self.routes = dict(routes or {})
        self.hits: list[Request] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, as real servers do

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                req = Request(self, self.rfile.read(length) if length else b"")
                with outer._lock:
                    outer.hits.append(req)
                route = outer.routes.get(req.path) or outer.routes.get("*")
                if route is None:
                    status, headers, body = 404, {"Content-Type": "text/plain"}, b"not found"
                else:
                    status, headers, body = route(req)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_POST = do_HEAD = _serve

            def log_message(self, *args: Any) -> None:
                pass

        family_host = host
        if ":" in host:
            import socket

            class V6(ThreadingHTTPServer):
                address_family = socket.AF_INET6

            self.httpd: ThreadingHTTPServer = V6((family_host, 0), Handler)
        else:
            self.httpd = ThreadingHTTPServer((family_host, 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.host = host
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def authority(self) -> str:
        """``127.0.0.1:PORT``, the form THINK_BROWSER_ALLOW takes."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def paths(self) -> list[str]:
        """Paths requested so far."""
        with self._lock:
            return [h.path for h in self.hits]

    def stop(self) -> None:
        """Shut the server down."""
        self.httpd.shutdown()
        self.httpd.server_close()


def page(title: str, body: str, head: str = "") -> tuple[int, dict[str, str], bytes]:
    """An HTML 200 response."""
    doc = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>{head}</head>"
        f"<body>{body}</body></html>"
    )
    return 200, {"Content-Type": "text/html; charset=utf-8"}, doc.encode()


PRICES = [("Apples", "1.20", "kg"), ("Pears", "2.50", "kg"), ("Cherries", "7.00", "box")]


def site_routes() -> dict[str, Route]:
    """The test site: an index, a form and its result, a table, products, a redirector."""

    def index(req: Request) -> tuple[int, dict[str, str], bytes]:
        return page(
            "Think test site",
            "<nav><a href='/form'>Form</a> <a href='/table'>Prices</a></nav>"
            "<main><h1>Welcome to the test site</h1>"
            "<p>This page exists so the browser tools have something real to read. "
            "It has a form, a table of prices and a list of products.</p>"
            "<p>The magic word is <b>xylophone</b>.</p>"
            "<div id='banner' style='background:#c00;color:#fff;padding:20px'>Red banner</div>"
            "<a href='/table' target='_blank' id='popup'>Prices in a new window</a>"
            "</main>",
        )

    def form(req: Request) -> tuple[int, dict[str, str], bytes]:
        return page(
            "Order form",
            "<h1>Order</h1><form action='/result' method='get'>"
            "<label for='name'>Your name</label> <input id='name' name='name'>"
            "<label for='fruit'>Fruit</label> <select id='fruit' name='fruit'>"
            "<option value='apple'>Apple</option><option value='pear'>Pear</option>"
            "<option value='cherry'>Cherry</option></select>"
            "<button type='submit' id='go'>Send order</button></form>",
        )

    def result(req: Request) -> tuple[int, dict[str, str], bytes]:
        name = html.escape(req.query.get("name", ""))
        fruit = html.escape(req.query.get("fruit", ""))
        return page(
            "Order received", f"<h1 id='done'>Thanks {name}, one {fruit} is on its way</h1>"
        )

    def table(req: Request) -> tuple[int, dict[str, str], bytes]:
        rows = "".join(f"<tr><td>{a}</td><td>{b}</td><td>{c}</td></tr>" for a, b, c in PRICES)
        products = "".join(
            f"<div class='product'><span class='name'>{a}</span>"
            f"<a class='more' href='/item/{a.lower()}'>more</a></div>"
            for a, _, _ in PRICES
        )
        return page(
            "Prices",
            "<h1>Prices</h1><table id='prices'><thead><tr><th>Item</th><th>Price</th>"
            f"<th>Unit</th></tr></thead><tbody>{rows}</tbody></table>{products}",
        )

    def redirect(req: Request) -> tuple[int, dict[str, str], bytes]:
        return 302, {"Location": req.query.get("to", "/")}, b""

    def cookie(req: Request) -> tuple[int, dict[str, str], bytes]:
        status, headers, body = page(
            "Cookie", f"<p>cookie: {html.escape(req.headers.get('cookie', ''))}</p>"
        )
        if req.query.get("set"):
            headers["Set-Cookie"] = f"who={req.query['set']}; Path=/"
        return status, headers, body

    def download(req: Request) -> tuple[int, dict[str, str], bytes]:
        headers = {"Content-Type": "application/octet-stream"}
        headers["Content-Disposition"] = "attachment; filename=data.bin"
        return 200, headers, b"\0" * 1000

    def big(req: Request) -> tuple[int, dict[str, str], bytes]:
        words = " ".join(f"word{i}" for i in range(20_000))
        return page("Big", f"<p>{words}</p>")

    def slow(req: Request) -> tuple[int, dict[str, str], bytes]:
        time.sleep(float(req.query.get("s", "3")))
        return page("Slow", "<p>finally</p>")

    return {
        "/": index,
        "/cookie": cookie,
        "/download": download,
        "/big": big,
        "/slow": slow,
        "/form": form,
        "/result": result,
        "/table": table,
        "/redirect": redirect,
    }


def brave_routes(results: int = 3) -> dict[str, Route]:
    """A fake Brave Search API under ``/res/v1``: web and news, key checked."""

    def web(req: Request) -> tuple[int, dict[str, str], bytes]:
        if req.headers.get("x-subscription-token") != "test-brave-key":
            return 401, {"Content-Type": "application/json"}, b'{"error": "bad token"}'
        q = req.query.get("q", "")
        n = min(int(req.query.get("count", "10")), results)
        items = [
            {
                "title": f"Result {i} for <strong>{html.escape(q)}</strong>",
                "url": f"https://example.org/{i}",
                "description": f"Snippet {i} about <strong>{html.escape(q)}</strong> &amp; more",
                "age": f"{i} days ago",
            }
            for i in range(1, n + 1)
        ]
        body = {"type": "search", "query": {"original": q}, "web": {"results": items}}
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    def news(req: Request) -> tuple[int, dict[str, str], bytes]:
        if req.headers.get("x-subscription-token") != "test-brave-key":
            return 401, {"Content-Type": "application/json"}, b'{"error": "bad token"}'
        q = req.query.get("q", "")
        items = [
            {
                "title": f"News about {q}",
                "url": "https://news.example.org/a",
                "description": "Fresh news",
                "age": "3 hours ago",
            }
        ]
        return 200, {"Content-Type": "application/json"}, json.dumps({"results": items}).encode()

    return {"/res/v1/web/search": web, "/res/v1/news/search": news}


def searxng_routes() -> dict[str, Route]:
    """A fake SearXNG ``/search?format=json``."""

    def search(req: Request) -> tuple[int, dict[str, str], bytes]:
        if req.query.get("format") != "json":
            return 403, {"Content-Type": "text/plain"}, b"Forbidden"
        q = req.query.get("q", "")
        items = [
            {"title": f"SearX {i}: {q}", "url": f"https://searx.example/{i}", "content": "c"}
            for i in range(1, 6)
        ]
        items[0]["publishedDate"] = "2026-11-20T10:00:00"
        return 200, {"Content-Type": "application/json"}, json.dumps({"results": items}).encode()

    return {"/search": search}
