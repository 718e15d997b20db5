"""Attack class: a person's app controls (``POST /api/think/sessions/{id}/apps``) driven by
a stranger, a cross-site form riding the login cookie, and hostile bodies, on a real
server: each is refused with a 4xx (never a 500) and the server keeps answering; and the
chat's Stop in one chat of a shared host kernel, which must end that chat's run's apps only
(another chat's run, on the same kernel, serves an app of the same name meanwhile)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPResponse

from tests.apps.app_source import app_source
from tests.server.conftest import *  # noqa: F403  (a real server: jp_*, think, api)
from tests.server.conftest import TOKEN
from tests.waiting import until
from think_kernel.apps.registry import STOPPED_WITH_RUN

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def think_config() -> dict[str, Any]:
    """A small body limit (the oversized body stays small); two chats per host kernel."""
    return {"heartbeat_interval": 0.2, "stale_timeout": 3.0, "retry_delays": [0.2, 0.4],
            "kernel_pool_size": 0, "max_body_size": 100_000,
            "sessions_per_kernel": 2}  # fmt: skip


async def test_the_app_controls_refuse_strangers_forged_forms_and_bad_bodies(
    api, jp_http_port: int, jp_base_url: str
) -> None:
    _, s = await api("POST", "sessions", {"title": "controls"})
    path = f"api/think/sessions/{s['id']}/apps"
    client = AsyncHTTPClient(force_instance=True)

    async def post(body: str | bytes, headers: dict[str, str], where: str = path) -> HTTPResponse:
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}{where}"
        return await client.fetch(url, method="POST", body=body, headers=headers,
                                  raise_error=False, follow_redirects=False)  # fmt: skip

    token = {"Authorization": f"token {TOKEN}"}
    stop = json.dumps({"action": "stop"})
    try:
        # No credential, a wrong token: 403, never a login redirect.
        for headers in ({}, {"Authorization": "token wrong"}):
            r = await post(stop, headers)
            assert r.code == 403, (headers, r.code)

        # The login cookie alone (a cross-site form carries it) is refused without the XSRF
        # token; with it (the Lab's own request), the same Stop all is answered.
        got = await client.fetch(f"http://127.0.0.1:{jp_http_port}{jp_base_url}{path}",
                                 headers=token)  # fmt: skip
        login = [c.split(";")[0] for c in got.headers.get_list("Set-Cookie")
                 if c.startswith("username-")]  # fmt: skip
        assert login, got.headers.get_list("Set-Cookie")
        jar = f"{login[0]}; _xsrf=q0123456789"  # tornado's double submit: header must match
        xsrf = "q0123456789"
        r = await post(stop, {"Cookie": jar, "Origin": "https://evil.example"})
        assert r.code == 404, r.code  # jupyter_server's answer to a cross-origin API call
        r = await post(stop, {"Cookie": jar})
        assert r.code == 403, r.code
        r = await post(stop, {"Cookie": jar, "X-XSRFToken": "forged"})
        assert r.code == 403, r.code
        r = await post(stop, {"Cookie": jar, "X-XSRFToken": xsrf})
        assert r.code == 200 and json.loads(r.body)["stopped"] == [], r.body

        # Hostile bodies: a clear 4xx each.
        bad: list[tuple[str | bytes, int]] = [
            (b"not json", 400),
            (b"[1]", 400),
            (b"\xff\xfe", 400),
            (b"[" * 20_000 + b"]" * 20_000, 400),
            (b"x" * 200_000, 413),
            (json.dumps({"action": 5}), 400),
            (json.dumps({"action": "delete"}), 400),
            (json.dumps({"action": ["stop"]}), 400),
            (json.dumps({"action": "stop", "name": 7}), 400),
            (json.dumps({"action": "stop", "name": "../../kernels"}), 400),
            (json.dumps({"action": "stop", "name": "web/x"}), 400),
            (json.dumps({"action": "stop", "name": "web%2f..%2fx"}), 400),
            (json.dumps({"action": "stop", "name": "x" * 5000}), 400),
            (json.dumps({"action": "stop", "name": "nothere"}), 404),
            (json.dumps({"action": "restart"}), 400),
            (json.dumps({"action": "restart", "name": "nothere"}), 404),
        ]
        for body, code in bad:
            r = await post(body, token)
            assert r.code == code, (body[:40], r.code, r.body[:200])
        # Another session's path, an unknown one: 404.
        for where in ("api/think/sessions/s_nothere/apps", "api/think/sessions/..%2f/apps"):
            r = await post(stop, token, where)
            assert r.code == 404, (where, r.code)
        status, listed = await api("GET", f"sessions/{s['id']}/apps")
        assert status == 200 and listed == {"apps": []}
    finally:
        client.close()


async def test_a_stop_in_one_chat_leaves_another_chats_apps_on_the_same_host(
    model_env, api, think, jp_http_port: int, jp_base_url: str
) -> None:
    sids: dict[str, str] = {}
    for who in ("alpha", "beta"):
        app_py = f"cat > app.py <<'PYEOF'\n{app_source(who)}\nPYEOF"
        model_env.reply_for(who, tool_calls=[("bash", {"command": app_py})])
        model_env.reply_for(who, tool_calls=[("serve_app", {"command": "python app.py",
                                                            "name": "web"})])  # fmt: skip
        model_env.reply_for(who, hang=True)  # both runs still going when alpha's Stop comes
        _, s = await api("POST", "sessions", {"title": who})
        sids[who] = s["id"]
    for who, sid in sids.items():
        await api("POST", f"sessions/{sid}/messages", {"content": f"{who}: go"})

    async def state(who: str) -> dict[str, Any]:
        _, body = await api("GET", f"sessions/{sids[who]}/apps")
        return {r["name"]: r for r in body["apps"]}.get("web", {})

    async def both_running() -> bool:
        return all([(await state(w)).get("state") == "running" for w in sids])

    try:
        await until(both_running, 120, "both chats' apps running", every=0.05)
        pool = think.services.chats.pool
        assert pool.kernels[sids["alpha"]] == pool.kernels[sids["beta"]]  # one host kernel

        code, body = await api("POST", f"sessions/{sids['alpha']}/cancel")
        assert code == 200 and body["cancelled"] is True, body

        async def alpha_stopped() -> bool:
            return (await state("alpha")).get("state") == "stopped"

        await until(alpha_stopped, 30, "alpha's app stopped", every=0.05)
        assert (await state("alpha"))["error"] == STOPPED_WITH_RUN
        beta = await state("beta")
        assert beta["state"] == "running" and not beta.get("error"), beta
        # beta's run goes on, and its app still answers through the server.
        assert think.services.chats.busy(sids["beta"])
        client = AsyncHTTPClient(force_instance=True)
        url = (f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/think/sessions/"
               f"{sids['beta']}/apps/web/")  # fmt: skip
        r = await client.fetch(url, headers={"Authorization": f"token {TOKEN}"})
        client.close()
        assert json.loads(r.body)["message"] == "beta", r.body
    finally:
        model_env.release.set()
        await api("POST", f"sessions/{sids['beta']}/cancel")
