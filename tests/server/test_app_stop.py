"""The chat's Stop ends the apps its run started, and the apps' controls leave the apps' own
paths alone, on a real server, chat kernel and sandbox, the model scripted: a run that
serves an app and then waits on the model is cancelled (the app ends: listed stopped, its
socket gone, no process left; an app of an earlier, finished turn runs on); a Stop while
serve_app waits for its app's first answer leaves no process; an app's own ``POST /stop`` and
``/restart`` reach it through the proxy; ``POST .../apps`` stops one app, all of them, or
restarts one."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPResponse

from tests.apps.app_source import app_source
from tests.procs import marked_loop, processes_with
from tests.waiting import until
from think_kernel.apps.registry import STOPPED_WITH_RUN

from .conftest import TOKEN, WSClient

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(params=[1, 2], ids=["own-kernel", "hosted"])
def think_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A chat's own kernel, and a kernel that hosts several chats (each its own runtime)."""
    return {"heartbeat_interval": 0.2, "stale_timeout": 3.0, "retry_delays": [0.2, 0.4],
            "kernel_pool_size": 0, "sessions_per_kernel": request.param}  # fmt: skip


def said(tab: WSClient, text: str) -> bool:
    """Whether the tab saw the assistant say ``text``."""
    return any(f.get("type") == "chat" and text in json.dumps(f) for f in tab.frames)


@pytest.fixture
def raw(jp_http_port: int, jp_base_url: str):
    """``await raw(path, method=..., body=...)``: a request with the token, as it is sent."""
    client = AsyncHTTPClient(force_instance=True)

    async def fetch(path: str, **kw: Any) -> HTTPResponse:
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}{path.lstrip('/')}"
        return await client.fetch(url, headers={"Authorization": f"token {TOKEN}"},
                                  raise_error=False, follow_redirects=False, **kw)  # fmt: skip

    yield fetch
    client.close()


async def test_stop_ends_the_apps_of_the_stopped_run_and_only_those(
    model_env, api, ws, think, raw
) -> None:
    app_py = f"cat > app.py <<'PYEOF'\n{app_source('hi')}\nPYEOF"
    model_env.reply(tool_calls=[("bash", {"command": app_py})])
    model_env.reply(tool_calls=[("serve_app", {"command": "python app.py", "name": "earlier"})])
    model_env.reply(text="Served.")
    _, s = await api("POST", "sessions", {"title": "stop apps"})
    sid = s["id"]
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "serve it"})
    await until(lambda: said(tab, "Served."), 90, "the first turn's end")

    async def rows() -> dict[str, dict[str, Any]]:
        _, body = await api("GET", f"sessions/{sid}/apps")
        return {r["name"]: r for r in body["apps"]}

    async def state(name: str) -> str:
        return (await rows()).get(name, {}).get("state", "")

    # The next turn serves an app, then the model stalls: the person presses Stop.
    marker = f"now-{uuid.uuid4().hex[:8]}"
    model_env.reply(tool_calls=[("serve_app", {"command": f"python app.py {marker}",
                                               "name": "now"})])  # fmt: skip
    model_env.reply(hang=True)
    asked = len(model_env.requests)
    await api("POST", f"sessions/{sid}/messages", {"content": "another one"})
    await until(lambda: len(model_env.requests) >= asked + 2, 60, "the stalled step")

    async def running_now() -> bool:  # the kernel's record and the model's request race
        return await state("now") == "running"

    await until(running_now, 30, "the app listed running", every=0.05)
    socket = think.services.apps.row(sid, "now")["socket"]
    assert processes_with(marker)
    code, body = await api("POST", f"sessions/{sid}/cancel")
    assert code == 200 and body["cancelled"] is True, body

    async def stopped_now() -> bool:
        return await state("now") == "stopped"

    await until(stopped_now, 30, "the stopped run's app stopped", every=0.05)
    listed = await rows()
    assert listed["now"]["error"] == STOPPED_WITH_RUN, listed["now"]
    assert listed["earlier"]["state"] == "running", listed["earlier"]  # its turn had ended
    # The tabs were told why (the sidebar's list and the serve_app card show it).
    last = [f for f in tab.of("apps") if any(a["name"] == "now" for a in f["apps"])][-1]
    assert {a["name"]: a["error"] for a in last["apps"]}["now"] == STOPPED_WITH_RUN
    # Its socket answers nothing, the proxy no longer reaches it, no process is left.
    with pytest.raises(OSError):
        await asyncio.open_unix_connection(socket)
    assert (await raw(f"api/think/sessions/{sid}/apps/now/")).code == 404
    await until(lambda: not processes_with(marker), 10, "no process of the app", every=0.02)
    r = await raw(f"api/think/sessions/{sid}/apps/earlier/")
    assert r.code == 200 and json.loads(r.body)["message"] == "hi"

    # A Stop while serve_app waits for its app's first answer: that app ends too.
    silent = f"silent-{uuid.uuid4().hex[:8]}"
    model_env.reply(tool_calls=[("serve_app", {"command": marked_loop(silent),
                                               "name": "silent"})])  # fmt: skip
    await api("POST", f"sessions/{sid}/messages", {"content": "a slow one"})
    await until(lambda: processes_with(silent), 60, "the silent app's process", every=0.02)
    # The model's next request is told, once, which of its apps the Stop ended.
    sent = [r for r in model_env.requests if "a slow one" in str(r["messages"])]
    told = str([m for m in sent[0]["messages"] if m["role"] == "user"][-1]["content"])
    assert "Stop of your last request also stopped the live app(s) 'now'" in told, told
    assert "'earlier'" not in told

    async def starting() -> bool:  # its record may reach the server after its process runs
        return await state("silent") == "starting"

    await until(starting, 30, "the silent app listed starting", every=0.05)
    code, body = await api("POST", f"sessions/{sid}/cancel")
    assert code == 200 and body["cancelled"] is True, body
    await until(lambda: not processes_with(silent), 30, "no orphan left", every=0.02)

    async def stopped_silent() -> bool:
        return await state("silent") == "stopped"

    await until(stopped_silent, 30, "the silent app listed stopped", every=0.05)
    assert (await rows())["earlier"]["state"] == "running"

    # The app's own POST /stop and /restart are its own paths: they reach it.
    base = f"api/think/sessions/{sid}/apps/earlier/"
    for own in ("stop", "restart"):
        r = await raw(base + own, method="POST", body=f"the app's own {own}".encode())
        assert r.code == 200 and r.body == f"the app's own {own}".encode(), (own, r.body)
    assert await state("earlier") == "running"

    # The person's controls: on the list's path, with a body.
    for bad, status in (({"action": "explode"}, 400), ({"action": "restart"}, 400),
                        ({"action": "stop", "name": "nope"}, 404),
                        ({"action": "stop", "name": "../x"}, 400)):  # fmt: skip
        code, _ = await api("POST", f"sessions/{sid}/apps", bad)
        assert code == status, (bad, code)
    code, row = await api("POST", f"sessions/{sid}/apps", {"action": "restart", "name": "now"})
    assert code == 200 and row["state"] == "running", row
    code, body = await api("POST", f"sessions/{sid}/apps", {"action": "stop", "name": "now"})
    assert code == 200 and body["stopped"] == ["now"], body
    assert {a["name"]: a["state"] for a in body["apps"]}["now"] == "stopped"

    # Stop all apps: every app that runs.
    model_env.reply(tool_calls=[("serve_app", {"command": "python app.py", "name": "second"})])
    model_env.reply(text="Second served.")
    await api("POST", f"sessions/{sid}/messages", {"content": "a second one"})
    await until(lambda: said(tab, "Second served."), 60, "the second app served")
    assert await state("second") == "running"
    code, body = await api("POST", f"sessions/{sid}/apps", {"action": "stop"})
    assert code == 200 and sorted(body["stopped"]) == ["earlier", "second"], body
    assert {a["state"] for a in body["apps"]} == {"stopped"}, body["apps"]
    for name in ("earlier", "second"):
        assert (await raw(f"api/think/sessions/{sid}/apps/{name}/")).code == 404
    code, body = await api("POST", f"sessions/{sid}/apps", {"action": "stop"})
    assert code == 200 and body["stopped"] == [], body  # none runs: nothing to stop
