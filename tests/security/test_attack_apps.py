"""Attack class: a live app (agent-built, so possibly hostile) against the person's Jupyter
origin. A real server, chat kernel and sandbox, the model scripted: the agent serves an app
whose answers try to act on the Jupyter origin (clear its cookies and storage, allow service
workers, open it to other sites, plant cookies that every Jupyter request would carry,
redirect the person elsewhere, flood the proxy), and the person's credentials under a login
cookie name the server was configured with must not reach it. Each attack must leave the
server answering and the app's ordinary answer served."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest, HTTPResponse
from tornado.websocket import websocket_connect

from tests.server.conftest import *  # noqa: F403  (a real server: jp_*, think, api, ws)
from tests.server.conftest import TOKEN, WSClient, write_kernelspec
from tests.waiting import until

# Starts real processes (kernels, sandboxes, servers): the slow layer.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

LOGIN_COOKIE = "corp-login"

#: ``app.py``: each path answers one hostile response (stdlib only, served on its fd).
APP = r"""
import http.server, json
import think_app

BIG = "x" * 3000


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?", 1)[0]
        headers = []
        code, body = 200, json.dumps({"path": self.path, "headers": dict(self.headers.items())})
        if path == "/hostile":
            headers = [("Clear-Site-Data", '"cookies", "storage", "executionContexts"'),
                       ("Service-Worker-Allowed", "/"),
                       ("Access-Control-Allow-Origin", "https://evil.example"),
                       ("Access-Control-Allow-Credentials", "true"),
                       ("Set-Cookie", "CORP-LOGIN=forged; Path=/"),
                       ("Set-Cookie", "theme=dark; Path=/; Domain=127.0.0.1"),
                       ("Set-Cookie", "late=1; path=/api; PATH=/")]
            headers += [("Set-Cookie", f"bomb{i}={BIG}; Path=/") for i in range(3)]
        elif path == "/away":
            code, headers = 302, [("Location", "https://evil.example/login")]
        elif path == "/away2":
            code, headers = 302, [("Location", "//evil.example/login")]
        elif path == "/home":
            code, headers = 302, [("Location", "/inside")]
        elif path == "/notmod":
            code, body = 304, ""
        elif path == "/flood":
            headers = [(f"X-Flood-{i}", "y" * 4000) for i in range(64)]
        data = body.encode()
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass


print("app starting", flush=True)
think_app.serve(Handler)
"""


@pytest.fixture
def think_config() -> dict[str, Any]:
    """One chat per kernel, no spare kernels."""
    return {"heartbeat_interval": 0.2, "stale_timeout": 3.0, "retry_delays": [0.2, 0.4],
            "kernel_pool_size": 0}  # fmt: skip


@pytest.fixture
def jp_server_config(jp_data_dir, think_config) -> dict[str, Any]:  # noqa: F811
    """The server's login cookie under a name a deployment chose."""
    write_kernelspec(jp_data_dir)
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}, "token": TOKEN,
                      "allow_root": True},
        "IdentityProvider": {"token": TOKEN, "cookie_name": LOGIN_COOKIE},
        "ThinkExtension": think_config,
    }  # fmt: skip


def chat_text(tab: WSClient, text: str) -> bool:
    """Whether the tab saw the assistant say ``text``."""
    return any(f.get("type") == "chat" and text in json.dumps(f) for f in tab.frames)


async def test_a_hostile_app_cannot_act_on_the_jupyter_origin(
    model_env, api, ws, think, jp_http_port, jp_base_url
) -> None:
    client = AsyncHTTPClient(force_instance=True)

    async def raw(path: str, **kw: Any) -> HTTPResponse:
        headers = {"Authorization": f"token {TOKEN}", **kw.pop("headers", {})}
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}{path}"
        return await client.fetch(url, headers=headers, raise_error=False,
                                  follow_redirects=False, **kw)  # fmt: skip

    model_env.reply(tool_calls=[("bash", {"command": f"cat > app.py <<'PYEOF'\n{APP}\nPYEOF"})])
    model_env.reply(tool_calls=[("serve_app", {"command": "python app.py", "name": "web"})])
    model_env.reply(text="Served.")
    _, s = await api("POST", "sessions", {"title": "hostile app"})
    sid = s["id"]
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "make me a page"})
    await until(lambda: chat_text(tab, "Served."), 90, "the app served")
    base = f"api/think/sessions/{sid}/apps/web"
    prefix = f"{jp_base_url}{base}"
    try:
        # The login cookie, under the name this server gives it, never reaches the app.
        r = await raw(f"{base}/echo", headers={"Cookie": f"{LOGIN_COOKIE}=login-secret; a=1"})
        assert r.code == 200, r.body
        seen = json.loads(r.body)["headers"]
        assert "login-secret" not in json.dumps(seen) and seen.get("Cookie") == "a=1", seen

        # No header that acts on the whole origin; cookies only for the app's own path.
        r = await raw(f"{base}/hostile")
        assert r.code == 200
        assert "sandbox allow-scripts" in r.headers["Content-Security-Policy"]
        for header in ("Clear-Site-Data", "Service-Worker-Allowed",
                       "Access-Control-Allow-Credentials"):  # fmt: skip
            assert header not in r.headers, (header, r.headers.get(header))
        # (the server sets its own login and XSRF cookies on a token's request; the app may not)
        cookies = r.headers.get_list("Set-Cookie")
        assert not [c for c in cookies if "forged" in c], cookies
        login = next(c.split(";")[0] for c in cookies if c.startswith(f"{LOGIN_COOKIE}="))
        mine = ("theme=", "late=", "bomb")
        cookies = [c for c in cookies if c.startswith(mine)]
        assert len(cookies) == 5, cookies
        for c in cookies:
            attrs = [a.strip().lower() for a in c.split(";")[1:]]
            paths = [a for a in attrs if a.startswith("path=")]
            assert paths == [f"path={prefix}/".lower()], c
            assert not [a for a in attrs if a.startswith("domain=")], c

        # Redirects stay on the app: its own paths under its prefix, never another site.
        r = await raw(f"{base}/home")
        assert r.code == 302 and r.headers["Location"] == f"{prefix}/inside", r.headers
        for away in ("away", "away2"):
            r = await raw(f"{base}/{away}")
            assert "evil.example" not in r.headers.get("Location", ""), r.headers
            assert r.code == 502, (away, r.code)

        # Every answer carries the sandbox policy: HEAD, 304.
        for method, path in (("HEAD", "hostile"), ("GET", "notmod")):
            r = await raw(f"{base}/{path}", method=method)
            assert r.code in (200, 304, 501), (path, r.code)  # 501: no do_HEAD in the app
            assert "sandbox allow-scripts" in r.headers["Content-Security-Policy"], path

        # A WebSocket from another site's page, carrying the person's login cookie, is
        # refused (cross-site WebSocket hijacking); another session has no such app.
        url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}{base}/ws"
        foreign = {"Cookie": login, "Origin": "https://evil.example"}
        r = await raw(f"{base}/echo", headers={"Authorization": "", "Cookie": login})
        assert r.code == 200, r.code  # the cookie alone lets the person in
        with pytest.raises(HTTPClientError, match="403"):
            await websocket_connect(HTTPRequest(url, headers=foreign))
        _, other = await api("POST", "sessions", {"title": "other"})
        r = await raw(f"api/think/sessions/{other['id']}/apps/web/echo")
        assert r.code == 404, r.code

        # A flood of headers is refused, and the server keeps answering.
        r = await raw(f"{base}/flood")
        assert r.code == 502, r.code
        code, _ = await api("GET", f"sessions/{sid}/apps")
        assert code == 200
        assert (await raw(f"{base}/echo")).code == 200
    finally:
        client.close()
