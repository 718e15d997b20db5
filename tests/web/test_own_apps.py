"""The agent's browser opens its own session's live apps, and nothing else internal: a real
sandbox serves the app, the real Chromium loads it through the session's app routes (its
page, its WebSocket), screenshots it; another session's app, the server's other paths, this
machine's listeners, and an app page's redirect or loads to them stay refused, request by
request."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.apps.app_source import apps_in
from think_kernel.apps import Apps
from think_kernel.sandbox import Sandbox, SandboxConfig
from think_kernel.store import Store
from think_kernel.tools.base import ToolContext, ToolOutput, ToolRegistry
from think_kernel.tools.services import ToolServices
from think_kernel.web import WEB_TOOLS, WebServices
from think_kernel.web.egress import Egress, PolicySource
from think_kernel.web.ownapps import APP_HOST, SANDBOX

from ..layers import starts_processes
from .conftest import web_config
from .own_app import own_app
from .servers import Server

pytestmark = [pytest.mark.timeout(180), pytest.mark.asyncio(loop_scope="module")]
MARKER = "own-app-marker-5821"


@pytest.fixture(scope="module")
def listener() -> Iterator[Server]:
    """A service of this machine on 127.0.0.1, which no page may reach."""
    s = Server({"*": lambda req: (200, {"Content-Type": "text/plain"}, b"HOST SECRET")})
    yield s
    s.stop()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
@starts_processes
async def apps() -> AsyncIterator[Apps]:
    """A sandbox serving the app ``web`` for session ``s_mine`` and one for ``s_other``."""
    ws = Path(tempfile.mkdtemp(prefix="think-own-apps-"))
    (ws / "own_app.py").write_text(own_app(MARKER))
    (ws / "other_app.py").write_text(own_app("other-session-secret"))
    sb = await Sandbox.create(ws, f"test-own-{uuid.uuid4().hex[:6]}", SandboxConfig())
    registry = apps_in(sb)
    try:
        for sid, source in (("s_mine", "own_app.py"), ("s_other", "other_app.py")):
            app = await registry.start(sid, f"python {source}", "web")
            assert app.state == "running", app.log_tail()
        yield registry
    finally:
        await registry.close()
        await sb.close()
        shutil.rmtree(ws, ignore_errors=True)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
@starts_processes
async def web(site: Server, brave: Server, listener: Server) -> AsyncIterator[WebServices]:
    """The web tools with no allowlist at all; the listener's port counts as a Jupyter
    server's (as a running server's runtime file makes it)."""
    policy = PolicySource([], ports=lambda: {listener.port})
    services = WebServices(web_config(site, brave, allow=[]), egress=Egress(policy))
    yield services
    await services.aclose()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def store() -> AsyncIterator[Store]:
    """Where screenshots go."""
    d = Path(tempfile.mkdtemp(prefix="think-own-apps-store-"))
    s = await Store.open(d / "think.db")
    yield s
    await s.close()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def call(web: WebServices, apps: Apps, store: Store):
    """``await call(tool, session_id="s_mine", **args)`` as the agent loop calls it."""
    registry = ToolRegistry(WEB_TOOLS)

    async def run(name: str, session_id: str = "s_mine", **args: object) -> ToolOutput:
        services = ToolServices(web=web, apps=apps)
        ctx = ToolContext(session_id=session_id, workspace=None, store=store,  # type: ignore[arg-type]
                          services=services)  # fmt: skip
        return (await registry.call(name, args, ctx)).output

    return run


def mine(path: str = "") -> str:
    """The address serve_app prints for the session's app, plus ``path``."""
    return f"/api/think/sessions/s_mine/apps/web/{path}"


async def test_the_agent_reads_its_own_app_and_its_websocket(call) -> None:
    out = await call("browse_url", url=mine())
    assert out.ok, out.text
    assert MARKER in out.text and "Own app" in out.text, out.text
    # The page's script reached the app's WebSocket through the same routes.
    if "echo: ping" not in out.text:
        out = await call("interact_with_page", action="wait", text="echo: ping")
    assert "echo: ping" in out.text, out.text
    # A redirect inside the app is followed (its own /x is below its prefix).
    out = await call("browse_url", url=mine("redirect?to=/"))
    assert out.ok and MARKER in out.text, out.text
    # app://NAME/ is the same app; its headers show no credential of any kind.
    out = await call("browse_url", url="app://web/headers")
    seen = json.loads(out.text.split("\n\n", 1)[1].split("\n\n")[0])
    assert seen["X-Forwarded-Prefix"] == "/api/think/sessions/s_mine/apps/web", seen
    assert seen["Host"] == APP_HOST
    assert not {"Authorization", "Cookie", "X-XSRFToken"} & set(seen), seen


async def test_the_other_page_tools_take_its_address(call) -> None:
    out = await call("interact_with_page", action="navigate", value="app://web/")
    assert out.ok and MARKER in out.text, out.text
    out = await call("scrape_page", url=mine(), selectors={"marker": "#marker"})
    assert out.ok and json.loads(out.text.split("\n", 1)[1]) == {"marker": [MARKER]}, out.text
    out = await call("interact_with_page", action="navigate", value=mine("x").replace(
        "s_mine", "s_other"))  # fmt: skip
    assert not out.ok and "another session" in out.text, out.text


async def test_a_screenshot_of_the_own_app(call) -> None:
    out = await call("screenshot", url="app://web/")
    assert out.ok, out.text
    (bundle,) = out.display
    assert bundle["image/png"] and bundle["think"]["kind"] == "screenshot"
    assert bundle["think"]["url"] == f"http://{APP_HOST}/api/think/sessions/s_mine/apps/web/"


async def test_the_page_is_sandboxed_as_a_person_sees_it(call, web: WebServices) -> None:
    await call("browse_url", url=mine())
    async with web.browser.use("s_mine") as tab:
        response = await tab.page.goto(f"http://{APP_HOST}{mine('headers')}")
        assert SANDBOX in response.headers["content-security-policy"]
        assert await tab.page.evaluate("origin") == "null"  # an opaque origin


@pytest.mark.parametrize(
    "url",
    [
        "/api/think/sessions/s_other/apps/web/",  # another session's app
        f"http://{APP_HOST}/api/think/sessions/s_other/apps/web/",
        "/api/think/sessions",  # the server's own API
        "/api/contents",
        "app://nothere/",  # no such app of this session
    ],
)
async def test_no_other_app_nor_server_path(call, url: str) -> None:
    out = await call("browse_url", url=url)
    assert not out.ok, out.text
    assert any(why in out.text for why in ("another session", "not a live app", "no app")), out.text
    assert "other-session-secret" not in out.text


async def test_this_machine_stays_refused(call, listener: Server) -> None:
    before = len(listener.hits)
    for url in (f"http://127.0.0.1:{listener.port}/", f"http://localhost:{listener.port}/x"):
        out = await call("browse_url", url=url)
        assert not out.ok and "Blocked by the network guard" in out.text, out.text
        assert "loopback" in out.text and "HOST SECRET" not in out.text
    # The apps' own name reaches no socket but through the session's routes.
    assert len(listener.hits) == before


async def test_a_page_of_the_app_cannot_lead_the_browser_home(call, listener: Server) -> None:
    before = len(listener.hits)
    home = f"http://127.0.0.1:{listener.port}/secret"
    out = await call("browse_url", url=mine(f"redirect?to={home}"))
    assert not out.ok and "loopback" in out.text, out.text
    # A redirect to another session's app is refused where it is followed.
    other = f"http://{APP_HOST}/api/think/sessions/s_other/apps/web/"
    out = await call("browse_url", url=mine(f"redirect?to={other}"))
    assert "other-session-secret" not in out.text
    assert not out.ok and "another session" in out.text, out.text
    out = await call("browse_url", url=mine(f"leak?src={home}"))
    assert "leak page" in out.text
    assert "Blocked by the network guard" in out.text and "loopback" in out.text, out.text
    out = await call("browse_url", url=mine(f"leak?src={other}"))
    assert "Blocked by the network guard" in out.text and "another session" in out.text
    assert len(listener.hits) == before


async def test_a_page_cannot_open_another_sessions_app_websocket(call, web: WebServices) -> None:
    await call("browse_url", url=mine())
    mark = web.egress.blocked_count
    other = f"ws://{APP_HOST}/api/think/sessions/s_other/apps/web/ws"
    async with web.browser.use("s_mine") as tab:
        got = await tab.page.evaluate(
            """(url) => new Promise((done) => {
                const ws = new WebSocket(url);
                ws.onopen = () => ws.send('ping');
                ws.onmessage = (e) => done('message: ' + e.data);
                ws.onclose = (e) => done('closed ' + e.code);
            })""",
            other,
        )
    assert got.startswith("closed"), got
    (refused,) = web.egress.blocked_since(mark)
    assert refused.what == f"WebSocket {other}" and "another session" in refused.reason


async def test_another_sessions_browser_does_not_open_this_app(call) -> None:
    out = await call("browse_url", session_id="s_other", url=mine())
    assert not out.ok and "another session" in out.text and MARKER not in out.text


async def test_a_session_without_apps_keeps_its_browser_unrouted(
    call, web: WebServices, listener: Server
) -> None:
    out = await call("browse_url", session_id="s_none", url=f"http://127.0.0.1:{listener.port}/")
    assert not out.ok and "loopback" in out.text
    assert web.browser.tabs["s_none"].routed is False  # its HTTP cache stays on
    assert web.browser.tabs["s_mine"].routed is True
    out = await call("browse_url", session_id="s_none", url="app://web/")
    assert not out.ok and "no app 'web' runs in this session" in out.text, out.text
    # A page that names the apps' address anyway meets the egress guard, which refuses it.
    async with web.browser.use("s_none") as tab:
        response = await tab.page.goto(f"http://{APP_HOST}{mine()}")
        assert response.status == 403 and MARKER not in await tab.page.content()
    assert "served to a session's browser by the kernel only" in web.egress.blocked[-1].reason
