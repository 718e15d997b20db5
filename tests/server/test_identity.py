"""A browser is the same person when its server comes back on another port; another browser,
or a request without the token, is not (real server with the extension, real identity
provider). The login cookie's name carries the port of the request's ``Host``, so a request
for another port with the same cookies is what a browser sends to a server restarted there."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jupyter_server.auth.identity import IdentityProvider, PasswordIdentityProvider
from jupyter_server.serverapp import ServerApp
from traitlets.config import Config

from jupyter_ext.identity import COOKIE_PREFIX, ThinkIdentityProvider, install

from .conftest import TOKEN

pytestmark = pytest.mark.timeout(60)


async def _me(
    jp_fetch: Any, port: int, cookies: dict[str, str], token: str | None = TOKEN
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """``GET /api/me`` as a browser on ``127.0.0.1:port`` with these cookies: the status, the
    identity, and the cookies it holds afterwards."""
    headers = {
        "Host": f"127.0.0.1:{port}",
        "Authorization": f"token {token}" if token else "",
        "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
    }
    r = await jp_fetch("api", "me", headers=headers, raise_error=False)
    held = dict(cookies)
    for line in r.headers.get_list("Set-Cookie"):
        name, _, value = line.split(";")[0].partition("=")
        held[name] = value
    body = json.loads(r.body) if r.code == 200 else {}
    return r.code, body.get("identity", {}), held


def _person(identity: dict[str, Any]) -> tuple[str, str, str]:
    return identity["username"], identity["display_name"], identity["initials"]


async def test_the_same_browser_is_the_same_person_on_another_port(
    jp_fetch, jp_serverapp, jp_http_port
):
    assert isinstance(jp_serverapp.identity_provider, ThinkIdentityProvider)
    code, first, cookies = await _me(jp_fetch, jp_http_port, {})
    assert code == 200 and first["display_name"].startswith("Anonymous ")
    assert any(name.startswith(COOKIE_PREFIX) for name in cookies), cookies
    # The server came back on another port: its login cookie has another name.
    code, again, _ = await _me(jp_fetch, jp_http_port + 1, cookies)
    assert code == 200
    assert _person(again) == _person(first)


async def test_another_browser_is_another_person(jp_fetch, jp_http_port):
    _, first, _ = await _me(jp_fetch, jp_http_port, {})
    _, other, _ = await _me(jp_fetch, jp_http_port + 1, {})
    assert other["username"] != first["username"]


async def test_the_person_cookie_grants_no_access(jp_fetch, jp_http_port):
    _, first, cookies = await _me(jp_fetch, jp_http_port, {})
    person = {k: v for k, v in cookies.items() if k.startswith(COOKIE_PREFIX)}
    assert person
    # Without the token (or a login cookie of this server), the person cookie is nothing.
    code, _, _ = await _me(jp_fetch, jp_http_port + 1, person, token=None)
    assert code == 403
    code, _, _ = await _me(jp_fetch, jp_http_port + 1, person, token="not-the-token")
    assert code == 403
    # With the token, the same browser is the same person.
    code, again, _ = await _me(jp_fetch, jp_http_port + 1, person)
    assert code == 200 and _person(again) == _person(first)


async def test_a_changed_colour_is_kept_for_the_next_restart(jp_fetch, jp_http_port):
    _, _, cookies = await _me(jp_fetch, jp_http_port, {})
    headers = {
        "Host": f"127.0.0.1:{jp_http_port}",
        "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
    }
    body = json.dumps({"color": "#123456"})
    r = await jp_fetch("api", "me", method="PATCH", body=body, headers=headers)
    for line in r.headers.get_list("Set-Cookie"):
        name, _, value = line.split(";")[0].partition("=")
        cookies[name] = value
    _, again, _ = await _me(jp_fetch, jp_http_port + 1, cookies)
    assert again["color"] == "#123456"


def _server(**config: Any) -> ServerApp:
    return ServerApp(config=Config({"ServerApp": config}))


def test_installed_by_default():
    app = _server()
    assert install(app)
    assert app.identity_provider_class is ThinkIdentityProvider


@pytest.mark.parametrize(
    "config",
    [
        {"identity_provider_class": PasswordIdentityProvider},
        {"identity_provider_class": IdentityProvider},
        {"login_handler_class": "jupyter_server.auth.login.LoginFormHandler"},
    ],
    ids=["password-provider", "base-provider", "legacy-login-handler"],
)
def test_a_configured_provider_is_kept(config):
    app = _server(**config)
    before = app.identity_provider_class
    assert not install(app)
    assert app.identity_provider_class is before
