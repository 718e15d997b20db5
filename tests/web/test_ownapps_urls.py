"""Which addresses name the session's own live apps (pure: no browser, no sandbox), and the
egress guard's refusal of the apps' own name whatever it is allowed or resolves to."""

from __future__ import annotations

import ipaddress

import pytest

from jupyter_ext.appproxy import SANDBOX as SERVER_SANDBOX
from think_kernel.web.egress import Blocked, Egress, PolicySource
from think_kernel.web.netpolicy import parse_allow
from think_kernel.web.ownapps import (
    APP_ORIGIN,
    SANDBOX,
    NotOwnApp,
    app_location,
    app_page_url,
)

RUNNING = {"web": "/tmp/think-app-x/app.sock"}


def resolve(url: str, session: str = "s_1") -> str | None:
    """The browser URL for ``url`` in session ``s_1``, whose app ``web`` runs."""
    return app_page_url(url, session, RUNNING.get)


@pytest.mark.parametrize(
    ("url", "page"),
    [
        ("/api/think/sessions/s_1/apps/web/", "/api/think/sessions/s_1/apps/web/"),
        ("/api/think/sessions/s_1/apps/web", "/api/think/sessions/s_1/apps/web/"),
        ("/api/think/sessions/s_1/apps/web/a/b?x=1", "/api/think/sessions/s_1/apps/web/a/b?x=1"),
        ("app://web/", "/api/think/sessions/s_1/apps/web/"),
        ("app://web", "/api/think/sessions/s_1/apps/web/"),
        ("app://web/static/app.js?v=2", "/api/think/sessions/s_1/apps/web/static/app.js?v=2"),
        (f"{APP_ORIGIN}/api/think/sessions/s_1/apps/web/x", "/api/think/sessions/s_1/apps/web/x"),
    ],
)
def test_the_forms_of_an_own_app(url: str, page: str) -> None:
    assert resolve(url) == APP_ORIGIN + page


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("/api/think/sessions/s_2/apps/web/", "another session"),
        (f"{APP_ORIGIN}/api/think/sessions/s_2/apps/web/", "another session"),
        ("/api/think/sessions", "not a live app"),
        ("/api/contents", "not a live app"),
        ("/api/think/sessions/s_1/apps/web/../../../../contents", "not a live app"),
        ("/api/think/sessions/s_1/apps/web/%2E%2e/%2e%2E/../s_2/apps/web/", "another session"),
        ("/", "not a live app"),
        ("app://other/", "no app 'other'"),
        ("app://../", "not a live app"),
        (f"{APP_ORIGIN}/", "not a live app"),
        ("https://THINK-APP.localhost./api/think/sessions/s_2/apps/web/", "another session"),
    ],
)
def test_what_is_not_an_own_app_is_refused(url: str, why: str) -> None:
    with pytest.raises(NotOwnApp, match=why):
        resolve(url)


@pytest.mark.parametrize(
    "url", ["https://example.org/", "http://127.0.0.1:8888/api/think/sessions", "//evil/x"]
)
def test_other_urls_are_left_to_the_egress_policy(url: str) -> None:
    assert resolve(url) is None


def test_an_apps_own_redirect_stays_below_its_prefix() -> None:
    prefix = "/api/think/sessions/s_1/apps/web"
    assert app_location("/login", prefix) == prefix + "/login"
    assert app_location("next", prefix) == "next"
    assert app_location("http://127.0.0.1:8888/", prefix) == "http://127.0.0.1:8888/"
    assert app_location("//evil/x", prefix) == "//evil/x"  # elsewhere: checked when followed


async def test_the_egress_never_connects_to_the_apps_name() -> None:
    async def loopback(host: str, port: int) -> list[ipaddress.IPv4Address]:
        return [ipaddress.IPv4Address("127.0.0.1")]

    allow_all = PolicySource(parse_allow("think-app.localhost, 127.0.0.0/8"), ports=set)
    egress = Egress(allow_all, resolver=loopback)
    assert await egress.allowed_addresses("localhost", 80)  # the allowlist is in force
    with pytest.raises(Blocked, match="served to a session's browser by the kernel only"):
        await egress.allowed_addresses("Think-App.localhost.", 80)
    assert egress.blocked[-1].host == "Think-App.localhost."


def test_the_agent_sees_the_sandbox_a_person_sees() -> None:
    assert SANDBOX == SERVER_SANDBOX
