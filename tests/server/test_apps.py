"""Live apps on a real server, chat kernel and sandbox, the model scripted: the agent writes
a plain ``http.server`` app with a WebSocket echo and serves it; the server's proxy answers
it, authenticated (403 without the token, 403 for a person the authoriser refuses); the app
never sees the person's credentials and cannot reach the internet or the Jupyter server;
path tricks reach only the app; the agent's edit restarts it; a person's Stop ends it; a
crash is told once in the chat."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPRequest, HTTPResponse
from tornado.websocket import websocket_connect

from tests.apps.app_source import app_source
from tests.waiting import until

from .conftest import TOKEN, WSClient

pytestmark = pytest.mark.timeout(180)


def chat_text(tab: WSClient, text: str) -> bool:
    """Whether the tab saw the assistant say ``text``."""
    return any(f.get("type") == "chat" and text in json.dumps(f) for f in tab.frames)


@pytest.fixture(params=[1, 2], ids=["own-kernel", "hosted"])
def think_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A chat's own kernel, and a kernel that hosts several chats (each its own runtime)."""
    return {"heartbeat_interval": 0.2, "stale_timeout": 3.0, "retry_delays": [0.2, 0.4],
            "kernel_pool_size": 0, "sessions_per_kernel": request.param}  # fmt: skip


def write(message: str) -> str:
    """The agent's bash command that writes the app (saying ``message``)."""
    return f"cat > app.py <<'PYEOF'\n{app_source(message)}\nPYEOF"


@pytest.fixture
def raw(jp_http_port: int, jp_base_url: str):
    """``await raw(path, headers=..., token=True)``: a request to the server as it is sent
    (no escaping of the path, no auth header unless asked); never raises on an answer."""
    client = AsyncHTTPClient(force_instance=True)

    async def fetch(path: str, token: bool = True, **kw: Any) -> HTTPResponse:
        headers = dict(kw.pop("headers", {}))
        if token:
            headers.setdefault("Authorization", f"token {TOKEN}")
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}{path.lstrip('/')}"
        return await client.fetch(url, headers=headers, raise_error=False,
                                  follow_redirects=False, **kw)  # fmt: skip

    yield fetch
    client.close()


async def test_an_app_served_by_the_agent_is_reachable_only_through_the_proxy(
    model_env, api, ws, think, raw, jp_serverapp, jp_http_port, jp_base_url
) -> None:
    model_env.reply(tool_calls=[("bash", {"command": write("v1")})])
    model_env.reply(tool_calls=[("serve_app", {"command": "python app.py", "name": "web",
                                               "restart_on_change": True})])  # fmt: skip
    model_env.reply(text="Served.")
    _, s = await api("POST", "sessions", {"title": "apps"})
    sid = s["id"]
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "make me a page"})
    await until(lambda: chat_text(tab, "Served."), 90, "the app served")
    served = json.dumps(model_env.requests[-1]["messages"][-1])
    base = f"api/think/sessions/{sid}/apps/web/"
    assert f"/{base}" in served and "is running" in served, served

    # Listed, and the tab was told (without the socket's path).
    _, body = await api("GET", f"sessions/{sid}/apps")
    [row] = body["apps"]
    assert row["name"] == "web" and row["state"] == "running" and row["url"] == f"/{base}"
    assert "socket" not in row and "app starting" in row["log_tail"]
    frames = await until(lambda: [f for f in tab.of("apps") if f["apps"]], 10, "an apps frame")
    assert "socket" not in frames[-1]["apps"][0]

    # The proxy: the app's answer, in a sandbox, without the person's credentials.
    r = await raw(base + "echo?token=" + TOKEN + "&x=1",
                  headers={"Cookie": "_xsrf=xsrf-secret; username-127-0-0-1-8888=login-secret;"
                                     " mine=1", "X-XSRFToken": "xsrf-secret"})  # fmt: skip
    assert r.code == 200, r.body
    seen = json.loads(r.body)
    assert seen["message"] == "v1" and seen["path"] == "/echo?x=1", seen
    sent = json.dumps(seen["headers"])
    for secret in (TOKEN, "xsrf-secret", "login-secret"):
        assert secret not in sent, sent
    assert seen["headers"]["Cookie"] == "mine=1"
    assert seen["headers"]["X-Forwarded-Prefix"] == f"{jp_base_url}{base}".rstrip("/")
    assert "sandbox allow-scripts" in r.headers["Content-Security-Policy"]
    r = await raw(base.rstrip("/"))
    assert r.code == 302 and r.headers["Location"].endswith(f"/{base}")
    r = await raw(base + "form", method="POST", body=b"a=1&b=2")  # the app checks its forms
    assert r.code == 200 and r.body == b"a=1&b=2"

    # Without the token, or as a person the authoriser refuses: 403, never the app.
    r = await raw(base, token=False)
    assert r.code == 403 and b"v1" not in r.body
    refused = type(jp_serverapp.authorizer)

    class OtherPerson(refused):  # type: ignore[misc,valid-type]
        def is_authorized(self, handler, user, action, resource):
            return resource != "think"

    original = jp_serverapp.web_app.settings["authorizer"]
    jp_serverapp.web_app.settings["authorizer"] = OtherPerson(parent=jp_serverapp)
    try:
        r = await raw(base)
        assert r.code == 403 and b"v1" not in r.body
    finally:
        jp_serverapp.web_app.settings["authorizer"] = original

    # Its WebSocket, through the proxy.
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}{base}ws"
    conn = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {TOKEN}"}))
    await conn.write_message("hello")
    assert await conn.read_message() == "echo: hello"
    conn.close()
    with pytest.raises(Exception, match="403"):
        await websocket_connect(url)  # no token

    # The capability path, which an app's page (an opaque origin: no login cookie, Origin
    # null) loads its own scripts, images and WebSocket through: the key alone lets it in,
    # for this app only.
    key_path = row["open_url"]
    assert key_path.startswith(base + "@") and key_path.endswith("/"), key_path
    assert frames[-1]["apps"][0]["open_url"] == key_path
    r = await raw(key_path + "echo", token=False)
    assert r.code == 200, r.body
    assert json.loads(r.body)["headers"]["X-Forwarded-Prefix"] == (
        f"{jp_base_url}{key_path}".rstrip("/")
    )
    assert r.headers["Referrer-Policy"] == "no-referrer"  # the key stays out of Referer
    # The page's fetch of its own data is a cross-origin read (its origin is opaque): CORS
    # lets it, with no cookie involved; a preflight is answered at the proxy.
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    r = await raw(key_path + "echo", token=False, method="OPTIONS", headers={
        "Origin": "null", "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "content-type"})  # fmt: skip
    assert r.code == 204 and r.headers["Access-Control-Allow-Origin"] == "*"
    assert r.headers["Access-Control-Allow-Methods"] == "PUT"
    assert r.headers["Access-Control-Allow-Headers"] == "content-type"
    key = key_path.rstrip("/").rsplit("@", 1)[1]
    bad = key[:-1] + ("A" if key[-1] != "A" else "B")
    for wrong in (f"{base}@{bad}/echo", f"api/think/sessions/{sid}/apps/other/@{key}/echo"):
        r = await raw(wrong, token=False)
        assert r.code == 403 and b"v1" not in r.body, wrong
    key_ws = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}{key_path}ws"
    conn = await websocket_connect(HTTPRequest(key_ws, headers={"Origin": "null"}))
    await conn.write_message("from the page")
    assert await conn.read_message() == "echo: from the page"
    conn.close()
    with pytest.raises(Exception, match="403"):  # without the key, a page's socket needs more
        await websocket_connect(HTTPRequest(url, headers={"Origin": "null"}))

    # No way out: not the internet, not the Jupyter server's port.
    for host, port in (("1.1.1.1", 80), ("127.0.0.1", jp_http_port)):
        r = await raw(f"{base}reach?host={host}&port={port}")
        assert r.code == 200 and r.body.startswith(b"blocked"), (host, r.body)

    # Path tricks reach the app (which echoes what it got), never another route or port.
    for trick in ("..%2F..%2F..%2Fapi%2Fcontents", "%2e%2e/%2e%2e/%2e%2e/api/contents",
                  f"http://127.0.0.1:{jp_http_port}/api/contents", "//evil/x"):  # fmt: skip
        r = await raw(base + trick, headers={"Host": "127.0.0.1:22"})
        assert r.code in (200, 403), (trick, r.code)  # 403: Jupyter refuses a foreign Host
        if r.code == 200:
            assert json.loads(r.body)["message"] == "v1", (trick, r.body)
    r = await raw(base + "..%2F..%2F..%2Fapi%2Fcontents")
    assert json.loads(r.body)["path"] == "/..%2F..%2F..%2Fapi%2Fcontents"

    # The agent edits the app: it restarts (restart_on_change) and shows the change.
    model_env.reply(tool_calls=[("bash", {"command": write("v2")})])
    model_env.reply(text="Changed.")
    await api("POST", f"sessions/{sid}/messages", {"content": "change it"})
    await until(lambda: chat_text(tab, "Changed."), 60, "the edit")

    async def shows_v2() -> bool:
        r = await raw(base)
        return r.code == 200 and json.loads(r.body)["message"] == "v2"

    await until(shows_v2, 60, "the restarted app", every=0.1)
    _, body = await api("GET", f"sessions/{sid}/apps")
    assert body["apps"][0]["restarts"] == 1

    # A person's Stop ends it: the proxy no longer reaches it.
    code, body = await api("POST", f"sessions/{sid}/apps", {"action": "stop", "name": "web"})
    assert code == 200 and body["stopped"] == ["web"] and body["apps"][0]["state"] == "stopped"
    r = await raw(base)
    assert r.code == 404
    _, body = await api("GET", f"sessions/{sid}/apps")
    assert body["apps"][0]["state"] == "stopped"
    # ... and Restart brings it back.
    code, row = await api("POST", f"sessions/{sid}/apps", {"action": "restart", "name": "web"})
    assert code == 200 and row["state"] == "running", row
    assert (await raw(base)).code == 200

    # It crashes (the agent kills it): the chat is told once, in a message that starts a run.
    model_env.reply(tool_calls=[("bash", {"command": "pkill -f '^python app[.]py'"})])
    model_env.reply(text="Killed it.")
    model_env.reply(text="It crashed; I will look.")
    await api("POST", f"sessions/{sid}/messages", {"content": "kill it"})
    await until(lambda: chat_text(tab, "It crashed; I will look."), 60, "the crash's run")
    _, page = await api("GET", f"sessions/{sid}/messages")
    told = [m for m in page["messages"] if "crashed" in (m["content"] or "")
            and m["role"] == "user"]  # fmt: skip
    assert len(told) == 1 and told[0]["content"].startswith("The live app 'web' crashed"), told
    _, body = await api("GET", f"sessions/{sid}/apps")
    assert body["apps"][0]["state"] == "crashed"


async def test_an_app_that_binds_its_own_port_is_reached_through_the_proxy(
    model_env, api, ws, think, raw
) -> None:
    page = "cat > index.html <<'EOF'\n<p>served from a port</p>\nEOF"
    model_env.reply(tool_calls=[("bash", {"command": page})])
    model_env.reply(tool_calls=[("serve_app", {"command": "python -m http.server $PORT",
                                               "name": "files", "port": 8000})])  # fmt: skip
    model_env.reply(text="Served.")
    _, s = await api("POST", "sessions", {"title": "port app"})
    sid = s["id"]
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "serve the folder"})
    await until(lambda: chat_text(tab, "Served."), 90, "the app served")
    served = json.dumps(model_env.requests[-1]["messages"][-1])
    assert "is running" in served, served
    _, body = await api("GET", f"sessions/{sid}/apps")
    [row] = body["apps"]
    assert row["state"] == "running" and row["port"] == 8000, row
    r = await raw(f"api/think/sessions/{sid}/apps/files/index.html")
    assert r.code == 200 and b"served from a port" in r.body, r.body
