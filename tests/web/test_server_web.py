"""The research flow through the Jupyter server: a chat message runs the tools in a think
kernel; the tab sees the screenshot in the tool result; the action log is served; a page the
agent opens cannot reach the very server the kernel runs under."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.server.conftest import *  # noqa: F403  (the real server, its API and tabs)
from tests.waiting import until

from .flow import TOOLS_IN_ORDER, check_actions, check_model_requests, script, web_env
from .servers import Server
from .test_ssrf import attack_routes

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def web_envs(monkeypatch: pytest.MonkeyPatch, site: Server, brave: Server) -> None:
    """Kernels the server starts get the web settings (they inherit its environment)."""
    for name, value in web_env(site, brave).items():
        monkeypatch.setenv(name, value)


async def _run(api: Any, ws: Any, content: str) -> tuple[str, Any]:
    code, s = await api("POST", "sessions", {"title": "web"})
    assert code == 201
    sid = s["id"]
    tab = await ws(sid)
    code, _ = await api("POST", f"sessions/{sid}/messages", {"content": content})
    assert code == 201
    await until(lambda: tab.of("task_complete") or tab.of("task_failed"), 150, "the run")
    assert tab.of("task_complete"), tab.of("task_failed")
    return sid, tab


async def test_research_flow_through_the_server(
    api, ws, model_env, web_envs, site: Server, jp_fetch, http_server_client, jp_base_url
) -> None:
    script(model_env, site)
    sid, tab = await _run(api, ws, "Research the test site and order a pear for Ada.")
    results = tab.of("tool_result")
    assert [r["name"] for r in results] == TOOLS_IN_ORDER
    assert all(r["ok"] for r in results), [r["output"][:200] for r in results]
    shot = results[2]
    (bundle,) = shot["display"]
    assert bundle["image/png"] and bundle["think"]["kind"] == "screenshot"
    assert bundle["think"]["url"] == site.origin + "/"
    check_model_requests(model_env)
    code, body = await api("GET", f"sessions/{sid}/actions")
    assert code == 200
    thumb = check_actions(body["actions"], site)
    assert thumb == bundle["think"]["thumbnail"]
    code, page = await api("GET", f"sessions/{sid}/messages")
    assert any(
        "Thanks Ada" in (m["content"] or "") for m in page["messages"] if m["role"] == "tool"
    )
    # After a reload the chat shows the screenshot again: the tool message names it, and the
    # attachment route serves the PNG, as an image that cannot run anything.
    (stored,) = [m for m in page["messages"] if m.get("tool_call_id") == shot["call_id"]]
    (image,) = stored["attachments"]
    assert image["kind"] == "image" and image["mime"] == "image/png"
    assert image["name"] == site.origin + "/" and image["blob"] == bundle["think"]["blob"]
    path = ["api", "think", "sessions", sid, "messages", stored["id"], "attachments", "0"]
    resp = await jp_fetch(*path)
    assert resp.code == 200 and resp.headers["Content-Type"] == "image/png"
    assert resp.body == base64.b64decode(bundle["image/png"])
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in resp.headers["Content-Security-Policy"]
    # Not from another session, not past the list, not without the token.
    code, other = await api("POST", "sessions", {"title": "other"})
    for bad in (
        ["api", "think", "sessions", other["id"], "messages", stored["id"], "attachments", "0"],
        path[:-1] + ["1"],
    ):
        with pytest.raises(HTTPClientError) as e:
            await jp_fetch(*bad)
        assert e.value.code == 404
    anonymous = await http_server_client.fetch(jp_base_url + "/".join(path), raise_error=False)
    assert anonymous.code == 403


async def test_a_page_cannot_reach_the_server_the_kernel_runs_under(
    api, ws, model_env, web_envs, jp_serverapp, brave: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = jp_serverapp.port
    targets = [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]
    attacker = Server(attack_routes(targets, 9, f"http://127.0.0.1:{port}"))
    monkeypatch.setenv("THINK_BROWSER_ALLOW", attacker.authority)
    seen: list[str] = []
    settings = jp_serverapp.web_app.settings
    original = settings["log_function"]

    def spy(handler: Any) -> None:
        seen.append(handler.request.uri)
        original(handler)

    settings["log_function"] = spy
    try:
        model_env.reply(tool_calls=[("browse_url", {"url": attacker.origin + "/attack"})])
        model_env.reply(
            tool_calls=[("interact_with_page", {"action": "wait", "selector": "#finished"})]
        )
        model_env.reply(
            tool_calls=[("browse_url", {"url": f"http://127.0.0.1:{port}/api/contents"})]
        )
        model_env.reply(text="done")
        sid, tab = await _run(api, ws, "open the page")
        results = tab.of("tool_result")
        assert [r["ok"] for r in results] == [True, True, False]
        assert "Blocked by the network guard" in results[2]["output"]
        assert f"127.0.0.1:{port}" in results[2]["output"]
        assert "/attack" in attacker.paths()  # the page was opened and its script ran
        # the page's own report: its fetches to the server failed (refused by the proxy)
        assert '"fetch 0"' in results[1]["output"] and '"fetch 1"' in results[1]["output"]
    finally:
        settings["log_function"] = original
        attacker.stop()
    assert any("/api/think/" in uri for uri in seen)  # the spy does see requests
    assert not [uri for uri in seen if "/t0/" in uri or "/t1/" in uri or "/api/contents" in uri]
