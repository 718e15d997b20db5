"""web_search / news_search: request and response shapes, providers, cache, the network guard."""

from __future__ import annotations

import pytest

from think_kernel.web import WebConfig, WebServices
from think_kernel.web.config import BRAVE_URL
from think_kernel.web.search import (
    NOT_CONFIGURED,
    Found,
    SearchError,
    SearchResult,
    brave_request,
    format_results,
    parse_brave,
    parse_searxng,
    searxng_request,
)

from .conftest import BRAVE_KEY, Tools, web_config
from .servers import Server, searxng_routes

# -- pure ---------------------------------------------------------------------------------------


def test_brave_request_and_parsing() -> None:
    assert brave_request("web", "q", 50, "week") == (
        "/web/search",
        {"q": "q", "count": 20, "freshness": "pw"},
    )
    assert brave_request("news", "q", 50, None) == ("/news/search", {"q": "q", "count": 50})
    assert brave_request("web", "q", 3, "2026-01-01to2026-02-01")[1]["freshness"] == (
        "2026-01-01to2026-02-01"
    )
    with pytest.raises(SearchError, match="freshness"):
        brave_request("web", "q", 3, "fortnight")
    data = {"web": {"results": [
        {"title": "A <strong>b</strong>", "url": "https://a.example/", "description": "x &amp; y",
         "age": "2 days ago"},
        {"title": "no url"},
        "garbage",
    ]}}  # fmt: skip
    assert parse_brave("web", data) == [
        SearchResult("A b", "https://a.example/", "x & y", "2 days ago")
    ]
    news = {"results": [{"title": "N", "url": "https://n.example/", "page_age": "2026-11-01"}]}
    assert parse_brave("news", news)[0].age == "2026-11-01"
    assert parse_brave("web", {}) == []
    with pytest.raises(SearchError):
        parse_brave("web", ["not", "an", "object"])


def test_searxng_request_and_parsing() -> None:
    path, params = searxng_request("news", "q", "day")
    assert path == "/search" and params == {
        "q": "q", "format": "json", "categories": "news", "time_range": "day"
    }  # fmt: skip
    with pytest.raises(SearchError, match="range"):
        searxng_request("web", "q", "2026-01-01to2026-02-01")
    data = {"results": [{"title": f"t{i}", "url": f"https://x/{i}", "content": "<b>c</b>"}
                        for i in range(9)]}  # fmt: skip
    found = parse_searxng(data, 3)
    assert [r.url for r in found] == ["https://x/0", "https://x/1", "https://x/2"]
    assert found[0].snippet == "c"


def test_format_results() -> None:
    found = Found([SearchResult("T", "https://t/", "snip", "1 day ago")], "Brave")
    text = format_results("web", "query", found)
    assert text.splitlines() == [
        'Web results for "query" (Brave, 1 results)',
        "1. T",
        "   https://t/",
        "   snip",
        "   age: 1 day ago",
    ]
    assert format_results("news", "q", Found([], "SearXNG")).endswith("No results.")


def test_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BRAVE_API_KEY", "THINK_BRAVE_URL", "THINK_SEARXNG_URL", "THINK_BROWSER_ALLOW",
                 "THINK_CHROMIUM", "THINK_BROWSER_CDP"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    cfg = WebConfig()
    assert (cfg.brave_api_key, cfg.brave_url, cfg.searxng_url, cfg.allow) == ("", BRAVE_URL, "", [])
    monkeypatch.setenv("BRAVE_API_KEY", "k")
    monkeypatch.setenv("THINK_BRAVE_URL", "http://brave.test/v1")
    monkeypatch.setenv("THINK_SEARXNG_URL", "http://searx.test")
    monkeypatch.setenv("THINK_BROWSER_ALLOW", "intranet, 10.0.0.0/8 ,localhost:8000")
    monkeypatch.setenv("THINK_CHROMIUM", "/opt/chrome/chrome")
    cfg = WebConfig()
    assert cfg.brave_api_key == "k" and cfg.brave_url == "http://brave.test/v1"
    assert cfg.searxng_url == "http://searx.test" and cfg.chromium == "/opt/chrome/chrome"
    assert cfg.allow == ["intranet", "10.0.0.0/8", "localhost:8000"]
    for trait in cfg.traits(config=True).values():
        assert "Default" in trait.help, trait.name


# -- through the tools --------------------------------------------------------------------------


@pytest.fixture
async def services(site: Server, brave: Server):
    made: list[WebServices] = []

    def make(**kw) -> Tools:
        web = WebServices(web_config(site, brave, **kw))
        made.append(web)
        return Tools(web, None)

    yield make
    for web in made:
        await web.aclose()


async def test_search_then_cache_hit(services, brave: Server) -> None:
    call = services()
    before = len(brave.hits)
    out = await call("web_search", query="jupyter agents", count=2, freshness="week")
    assert out.ok, out.text
    assert "1. Result 1 for jupyter agents\n   https://example.org/1" in out.text
    assert "Snippet 1 about jupyter agents & more" in out.text and "age: 1 days ago" in out.text
    assert out.summary == "web_search: 2 results from Brave"
    req = brave.hits[-1]
    assert req.path == "/res/v1/web/search" and req.headers["x-subscription-token"] == BRAVE_KEY
    assert req.query == {"q": "jupyter agents", "count": "2", "freshness": "pw"}
    again = await call("web_search", query="jupyter agents", count=2, freshness="week")
    assert again.ok and "(cached result from" in again.text and "(cache hit)" in again.summary
    assert len(brave.hits) == before + 1  # the hit never left the kernel
    news = await call("news_search", query="jupyter", freshness="day")
    assert news.ok and "News about jupyter" in news.text and "age: 3 hours ago" in news.text
    assert brave.hits[-1].path == "/res/v1/news/search"


async def test_not_configured_says_what_to_set(services) -> None:
    call = services(brave_api_key="", searxng_url="")
    for tool in ("web_search", "news_search"):
        out = await call(tool, query="x")
        assert not out.ok and out.text == f"Error: {NOT_CONFIGURED}"
    rows = dict(call.web.status_rows())
    assert "not configured" in rows["web search"] and "BRAVE_API_KEY" in rows["web search"]


async def test_bad_key_falls_back_to_searxng(services, site: Server, brave: Server) -> None:
    searx = Server(searxng_routes())
    try:
        call = services(
            brave_api_key="wrong",
            searxng_url=searx.origin,
            allow=[brave.authority, searx.authority],
        )
        out = await call("web_search", query="pandas", count=2)
        assert out.ok and "SearX 1: pandas" in out.text and "SearX 3" not in out.text
        assert "Brave answered HTTP 401 (check BRAVE_API_KEY)" in out.text
        assert searx.hits[-1].query["format"] == "json"
        only_brave = services(brave_api_key="wrong")
        out = await only_brave("web_search", query="pandas")
        assert not out.ok and "check BRAVE_API_KEY" in out.text
        searx_only = services(brave_api_key="", searxng_url=searx.origin, allow=[searx.authority])
        out = await searx_only("news_search", query="x", freshness="month")
        assert out.ok and searx.hits[-1].query["time_range"] == "month"
        assert searx.hits[-1].query["categories"] == "news"
    finally:
        searx.stop()


async def test_search_endpoint_on_this_machine_needs_an_allow_entry(
    services, brave: Server
) -> None:
    before = len(brave.hits)
    call = services(allow=[])
    out = await call("web_search", query="x")
    assert not out.ok and "Blocked by the network guard" in out.text
    assert f"127.0.0.1:{brave.port}" in out.text and "loopback" in out.text
    assert len(brave.hits) == before


async def test_a_redirect_from_the_search_endpoint_is_checked(
    services, recorder: Server, site: Server
) -> None:
    bounce = Server({"*": lambda req: (302, {"Location": recorder.origin + "/steal"}, b"")})
    to_site = Server({"*": lambda req: (302, {"Location": site.origin + "/steal"}, b"")})
    try:
        # SearXNG's redirects are followed, through the guard
        call = services(brave_api_key="", searxng_url=bounce.origin, allow=[bounce.authority])
        out = await call("web_search", query="x")
        assert not out.ok and "Blocked by the network guard" in out.text
        assert bounce.hits and recorder.hits == []
        # Brave's are not followed at all: the key header would go along
        hits = len(site.hits)
        brave = services(brave_url=to_site.origin, allow=[to_site.authority, site.authority])
        out = await brave("web_search", query="x")
        assert not out.ok and "redirect" in out.text and len(site.hits) == hits
    finally:
        bounce.stop()
        to_site.stop()


async def test_a_bad_allow_entry_is_an_error_not_a_crash(services) -> None:
    call = services(allow=["localhost:notaport"])
    out = await call("web_search", query="x")
    assert not out.ok and "THINK_BROWSER_ALLOW" in out.text and "notaport" in out.text
    rows = dict(call.web.status_rows())
    assert "invalid" in rows["browser may also reach"]
