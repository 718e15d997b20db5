"""The setup card's routes: a fresh server without a model, an endpoint saved
from the browser, its models listed server-side, and running kernels that use it at their
next request, without a restart. The key never comes back to the browser."""

from __future__ import annotations

import json

import pytest

from tests.fake_model import FakeModel
from tests.waiting import until

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def no_model_env(monkeypatch, tmp_path):
    """A server (and the kernels it starts) with no endpoint in the environment or config."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THINK_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "no-config"))


@pytest.fixture
def keyed_model():
    """A fake endpoint that wants a key and serves two models."""
    fm = FakeModel(api_key="sk-test-0123456789abcd", models={"fake-a", "fake-b"}).start()
    try:
        yield fm
    finally:
        fm.stop()


async def test_a_fresh_server_says_no_model(api, no_model_env):
    code, ep = await api("GET", "model")
    assert code == 200
    assert ep["configured"] is False and ep["source"] == "" and ep["api_key_set"] is False


async def test_test_connection_lists_models_and_explains_failures(api, no_model_env, keyed_model):
    url = keyed_model.url
    code, r = await api("POST", "model/test", {"base_url": url, "api_key": keyed_model.api_key})
    assert code == 200 and r == {"ok": True, "models": ["fake-a", "fake-b"]}
    _, r = await api("POST", "model/test", {"base_url": url, "api_key": "sk-wrong-key-xxxx"})
    assert r["ok"] is False and "refused the key" in r["error"]
    _, r = await api("POST", "model/test", {"base_url": url.removesuffix("/v1")})
    assert r["ok"] is False and "/v1" in r["error"]
    _, r = await api("POST", "model/test", {"base_url": "http://127.0.0.1:9/v1"})
    assert r["ok"] is False and "cannot connect" in r["error"]
    for bad in ("ftp://x/v1", "localhost:11434", "http://user:pw@host/v1"):
        code, _ = await api("POST", "model/test", {"base_url": bad})
        assert code == 400, bad


async def test_the_saved_key_never_goes_back_nor_elsewhere(api, no_model_env, keyed_model):
    key, url = keyed_model.api_key, keyed_model.url
    code, ep = await api("PUT", "model", {"base_url": url, "api_key": key, "model": "fake-a"})
    assert code == 200 and ep["configured"] and ep["source"] == "saved"
    assert ep["model"] == "fake-a" and ep["api_key_hint"] == "…abcd"
    for method, path in (("GET", "model"), ("PUT", "model")):
        body = {"base_url": url, "model": "fake-b"} if method == "PUT" else None
        code, ep = await api(method, path, body)
        assert code == 200 and key not in json.dumps(ep)
    assert ep["api_key_set"] and ep["model"] == "fake-b"  # an omitted key keeps the saved one
    # The test route uses the saved key for the saved URL only.
    _, r = await api("POST", "model/test", {"base_url": url})
    assert r["ok"], r
    other = FakeModel().start()
    try:
        await api("POST", "model/test", {"base_url": other.url})
        assert all(key not in json.dumps(h) for h in other.headers), "the key went elsewhere"
        # Saving another URL without a key drops the old key instead of carrying it over.
        _, ep = await api("PUT", "model", {"base_url": other.url, "model": "fake-model"})
        assert ep["api_key_set"] is False and ep["base_url"] == other.url
    finally:
        other.stop()
    code, ep = await api("DELETE", "model")
    assert code == 200 and ep["configured"] is False
    for body in ({"base_url": url}, {"model": "m"}, {"base_url": "nope", "model": "m"}):
        code, _ = await api("PUT", "model", body)
        assert code == 400, body


async def test_zero_to_answer_and_a_change_without_restart(api, ws, think, no_model_env):
    first = FakeModel().start()
    second = FakeModel(api_key="sk-second-000000000000", models={"big"}).start()
    try:
        _, s = await api("POST", "sessions", {"title": "first chat"})
        sid = s["id"]
        tab = await ws(sid)
        # No model: the run ends with an error that says what to do.
        await api("POST", f"sessions/{sid}/messages", {"content": "hello?"})
        await until(lambda: tab.of("error"), 60, "the not-configured error")
        err = tab.of("error")[0]
        assert err["code"] == "not_configured" and "Set up a model" in err["message"]
        assert "restart the kernel" not in err["message"]
        await until(lambda: tab.of("task_complete") or tab.of("task_failed"), 30, "run end")
        # The setup card saves an endpoint; the same kernel answers the next message.
        first.reply(text="First answer.")
        code, _ = await api("PUT", "model", {"base_url": first.url, "model": "fake-model"})
        assert code == 200
        kernels = dict(think.services.chats.kernels)
        await api("POST", f"sessions/{sid}/messages", {"content": "hello again"})
        await until(lambda: len(tab.of("chat")) >= 1, 60, "the first answer")
        assert tab.of("chat")[-1]["content"] == "First answer."
        assert first.requests[-1]["model"] == "fake-model"
        # Another endpoint, with a key: the running kernel switches at its next request.
        second.reply(text="Second answer.")
        await api(
            "PUT",
            "model",
            {"base_url": second.url, "api_key": second.api_key, "model": "big"},
        )
        await api("POST", f"sessions/{sid}/messages", {"content": "and now?"})
        await until(lambda: len(tab.of("chat")) >= 2, 60, "the second answer")
        assert tab.of("chat")[-1]["content"] == "Second answer."
        assert second.requests[-1]["model"] == "big"
        assert second.headers[-1]["Authorization"] == f"Bearer {second.api_key}"
        assert dict(think.services.chats.kernels) == kernels, "a kernel was restarted"
        # The chat kernel served the chat session only: no stray session of its own.
        _, listed = await api("GET", "sessions")
        assert [(x["id"], x["kind"]) for x in listed["sessions"]] == [(sid, "chat")]
    finally:
        first.stop()
        second.stop()


async def test_the_routes_need_auth_and_the_think_permission(
    jp_serverapp, http_server_client, jp_base_url, api, no_model_env
):
    from tornado.httpclient import HTTPClientError

    await api("GET", "model")  # the store is ready
    for method, path, body in (
        ("GET", "model", None),
        ("PUT", "model", '{"base_url": "http://h/v1", "model": "m"}'),
        ("DELETE", "model", None),
        ("POST", "model/test", '{"base_url": "http://h/v1"}'),
    ):
        for headers in ({}, {"Authorization": "token wrong"}):
            try:
                resp = await http_server_client.fetch(
                    f"{jp_base_url}api/think/{path}",
                    method=method,
                    body=body,
                    headers=headers,
                    raise_error=False,
                    allow_nonstandard_methods=True,
                )
                code = resp.code
            except HTTPClientError as e:
                code = e.code
            assert code == 403, (method, path, headers, code)

    class DenyThink(type(jp_serverapp.authorizer)):  # type: ignore[misc]
        def is_authorized(self, handler, user, action, resource):
            return resource != "think"

    original = jp_serverapp.web_app.settings["authorizer"]
    jp_serverapp.web_app.settings["authorizer"] = DenyThink(parent=jp_serverapp)
    try:
        for method, path in (("GET", "model"), ("POST", "model/test")):
            code, _ = await api(
                method, path, {"base_url": "http://h/v1"} if method == "POST" else None
            )
            assert code == 403, (method, path)
    finally:
        jp_serverapp.web_app.settings["authorizer"] = original
    _, ep = await api("GET", "model")
    assert ep["configured"] is False  # nothing was saved by the refused requests


async def test_a_refused_key_reads_as_a_sidebar_fix_also_after_reload(
    api, ws, no_model_env, keyed_model
):
    await api(
        "PUT", "model", {"base_url": keyed_model.url, "api_key": "sk-bad-key", "model": "fake-a"}
    )
    _, s = await api("POST", "sessions", {"title": "bad key"})
    tab = await ws(s["id"])
    await api("POST", f"sessions/{s['id']}/messages", {"content": "hi"})
    await until(lambda: tab.of("task_failed"), 60, "the failed run")
    err = tab.of("error")[0]
    assert err["code"] == "auth" and "Set up a model" in err["message"]
    # What a reload shows (the history) says the same: no kernel restart, no env variable.
    _, page = await api("GET", f"sessions/{s['id']}/messages")
    failed = [m for m in page["messages"] if m["status"] == "error"]
    assert {m["role"] for m in failed} == {"assistant", "system"}, failed
    for m in failed:
        text = m.get("error") or m["content"]
        assert "Set up a model" in text and "restart the kernel" not in text, m
        assert "OPENAI_API_KEY" not in text, m


async def test_the_test_request_follows_no_redirect(api, no_model_env, keyed_model):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(307)
            self.send_header("Location", f"{keyed_model.url}/models")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        _, r = await api("POST", "model/test", {"base_url": url, "api_key": keyed_model.api_key})
        assert r["ok"] is False and "307" in r["error"], r
        assert keyed_model.headers == [], "the redirect was followed"
    finally:
        server.shutdown()
