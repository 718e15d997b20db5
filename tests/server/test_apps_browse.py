"""The agent looks at the app it serves, through a real server, chat kernel, sandbox and
headless Chromium, the model scripted: ``browse_url`` on the address ``serve_app`` printed
reads the page (and the page's own WebSocket), ``screenshot`` of ``app://NAME/`` is an image
of it; another session's app, the server's API, the server's port, a listener of this
machine, and an app page's redirect or loads to them stay refused, and none of them is
reached."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.waiting import until
from tests.web.own_app import own_app
from tests.web.servers import Server

from .conftest import TOKEN, WSClient

pytestmark = pytest.mark.timeout(240)
MARKER = "agent-checks-its-app-7731"


@pytest.fixture
def think_config() -> dict[str, Any]:
    """Both chats in one kernel process: the case where only the session tells them apart."""
    return {"heartbeat_interval": 0.2, "stale_timeout": 3.0, "retry_delays": [0.2, 0.4],
            "kernel_pool_size": 0, "sessions_per_kernel": 2}  # fmt: skip


@pytest.fixture
def listener() -> Iterator[Server]:
    """A service of this machine on 127.0.0.1, which no page may reach."""
    s = Server({"*": lambda req: (200, {"Content-Type": "text/plain"}, b"HOST SECRET")})
    yield s
    s.stop()


def write(source: str, file: str) -> str:
    """The agent's bash command that writes an app."""
    return f"cat > {file} <<'PYEOF'\n{source}\nPYEOF"


async def turn(api: Any, ws: Any, sid: str, content: str) -> WSClient:
    """One user message of the session, run to its end."""
    tab = await ws(sid)
    code, _ = await api("POST", f"sessions/{sid}/messages", {"content": content})
    assert code == 201
    await until(lambda: tab.of("task_complete") or tab.of("task_failed"), 200, "the run")
    assert tab.of("task_complete"), tab.of("task_failed")
    return tab


async def test_the_agent_browses_and_screenshots_its_own_app_and_nothing_else(
    model_env, api, ws, think, jp_serverapp, listener: Server
) -> None:
    _, other = await api("POST", "sessions", {"title": "another chat"})
    _, mine = await api("POST", "sessions", {"title": "my chat"})
    b, a = other["id"], mine["id"]
    # Another chat serves an app of the same name first.
    model_env.reply(tool_calls=[("bash", {"command": write(own_app("other-secret"), "b.py")})])
    model_env.reply(tool_calls=[("serve_app", {"command": "python b.py", "name": "web"})])
    model_env.reply(text="B served.")
    await turn(api, ws, b, "serve yours")

    port = jp_serverapp.port
    server = f"http://127.0.0.1:{port}"
    own = f"/api/think/sessions/{a}/apps/web/"
    model_env.reply(tool_calls=[("bash", {"command": write(own_app(MARKER), "a.py")})])
    model_env.reply(tool_calls=[("serve_app", {"command": "python a.py", "name": "web"})])
    model_env.reply(tool_calls=[("browse_url", {"url": own})])
    model_env.reply(tool_calls=[("interact_with_page", {"action": "wait",
                                                        "text": "echo: ping"})])  # fmt: skip
    for args in (
        {"url": own + "headers"},
        {"url": f"/api/think/sessions/{b}/apps/web/"},
        {"url": "/api/think/sessions"},
        {"url": server + "/"},
        {"url": f"http://127.0.0.1:{listener.port}/"},
        {"url": own + f"redirect?to={server}/api/think/sessions"},
        {"url": own + f"leak?src={server}/api/contents"},
    ):
        model_env.reply(tool_calls=[("browse_url", args)])
    model_env.reply(tool_calls=[("screenshot", {"url": "app://web/"})])
    model_env.reply(text="Checked.")

    seen: list[str] = []
    settings = jp_serverapp.web_app.settings
    original = settings["log_function"]

    def spy(handler: Any) -> None:
        seen.append(handler.request.uri)
        original(handler)

    settings["log_function"] = spy
    try:
        tab = await turn(api, ws, a, "serve an app and check it")
    finally:
        settings["log_function"] = original

    results = {r["call_id"]: r for r in tab.of("tool_result")}.values()
    browsed = [r for r in results if r["name"] == "browse_url"]
    (shot,) = [r for r in results if r["name"] == "screenshot"]
    (served,) = [r for r in results if r["name"] == "serve_app"]
    # The serve_app result says how to look at the app.
    assert "browse_url" in served["output"] and "app://web/" in served["output"], served
    # Its own app: the page, and what its script got back from the app's WebSocket.
    (waited,) = [r for r in results if r["name"] == "interact_with_page"]
    assert waited["ok"] and "echo: ping" in waited["output"], waited["output"]
    page = browsed[0]
    assert page["ok"] and MARKER in page["output"], page["output"]
    assert "other-secret" not in page["output"]
    # What the app got: no credential of the person's (the browser holds none).
    headers = browsed[1]["output"]
    assert "X-Forwarded-Prefix" in headers and TOKEN not in headers, headers
    assert "Cookie" not in headers and "Authorization" not in headers, headers
    # Another session's app, the server's API and port, a listener: refused, none reached.
    for refused, why in zip(browsed[2:6], ("another session", "not a live app", "loopback",
                                           "loopback"), strict=True):  # fmt: skip
        assert not refused["ok"] and why in refused["output"], refused["output"]
        assert "other-secret" not in refused["output"] and "HOST SECRET" not in refused["output"]
    # The app's page leads elsewhere: its redirect is refused, its loads are.
    redirect, leak = browsed[6:]
    assert not redirect["ok"] and f"127.0.0.1:{port}" in redirect["output"], redirect["output"]
    assert "leak page" in leak["output"] and "Blocked by the network guard" in leak["output"]
    assert f"127.0.0.1:{port}" in leak["output"], leak["output"]
    # The screenshot is an image of the app, shown in the chat.
    (bundle,) = shot["display"]
    assert bundle["image/png"] and bundle["think"]["url"].endswith(own), bundle["think"]
    # Nothing reached the server but the tabs' and kernels' own traffic; nor the listener.
    assert any("/api/think/" in uri for uri in seen)  # the spy does see requests
    reached = [u for u in seen if "/apps/" in u or "/api/contents" in u or u.endswith(
        "/api/think/sessions")]  # fmt: skip
    assert not reached, reached
    assert not listener.hits
    # The model read the page as any browsed page's text.
    sent = json.dumps(model_env.requests[-1]["messages"])
    assert MARKER in sent and f"URL: http://think-app.localhost{own}" in sent
