"""Web and news search: Brave Search API, or SearXNG's JSON API for people without a key.

    searcher = Searcher(providers_from(config), client)
    found = await searcher.search("web", "jupyter collaboration", count=5, freshness="week")
    found.results[0].title, found.provider

Request building and response parsing are pure functions (tested without a network); the
HTTP client is passed in (the web services give one that goes through the egress proxy).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # imported where used: an import that a first %%think need not pay
    import httpx

Kind = Literal["web", "news"]

NOT_CONFIGURED = (
    "Web search is not configured: set BRAVE_API_KEY (a Brave Search API key) or "
    "THINK_SEARXNG_URL (the URL of a SearXNG instance with its JSON format enabled), "
    "then restart the kernel."
)
# Brave's codes, and the words people (and models) use for them.
_FRESHNESS = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}
_BRAVE_CODES = set(_FRESHNESS.values())
_RANGE = re.compile(r"^\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2}$")
_TAG = re.compile(r"<[^>]+>")
MAX_COUNT = {"web": 20, "news": 50}


class SearchError(Exception):
    """A search that failed; the message is for the model (and the user)."""


@dataclass(frozen=True)
class SearchResult:
    """One hit: what the model needs to pick a page."""

    title: str
    url: str
    snippet: str = ""
    age: str = ""


@dataclass(frozen=True)
class Found:
    """The results of one search and the provider that gave them."""

    results: list[SearchResult]
    provider: str
    note: str = ""


def clean(text: Any) -> str:
    """Plain text from a snippet with HTML tags and entities (Brave marks matches <strong>)."""
    return " ".join(html.unescape(_TAG.sub("", str(text or ""))).split())


def brave_freshness(freshness: str | None) -> str | None:
    """``day|week|month|year``, Brave's ``pd|pw|pm|py`` or ``YYYY-MM-DDtoYYYY-MM-DD``."""
    if not freshness:
        return None
    f = freshness.strip().lower()
    if f in _FRESHNESS:
        return _FRESHNESS[f]
    if f in _BRAVE_CODES or _RANGE.match(f):
        return f
    raise SearchError(
        f"freshness {freshness!r} is not one of day, week, month, year "
        "(or a range YYYY-MM-DDtoYYYY-MM-DD)"
    )


def searxng_time_range(freshness: str | None) -> str | None:
    """SearXNG's ``time_range`` for a freshness (ranges are not supported there)."""
    code = brave_freshness(freshness)
    if code is None:
        return None
    for word, c in _FRESHNESS.items():
        if code == c:
            return word
    raise SearchError("SearXNG takes freshness day, week, month or year, not a date range")


def brave_request(kind: Kind, query: str, count: int, freshness: str | None) -> tuple[str, dict]:
    """(path, params) of a Brave Search API request."""
    params: dict[str, Any] = {"q": query, "count": max(1, min(count, MAX_COUNT[kind]))}
    code = brave_freshness(freshness)
    if code:
        params["freshness"] = code
    return f"/{kind}/search", params


def parse_brave(kind: Kind, data: Any) -> list[SearchResult]:
    """Results of a Brave response (``web.results`` for web, ``results`` for news)."""
    if not isinstance(data, dict):
        raise SearchError("Brave answered something that is not a JSON object")
    items = (data.get("web") or {}).get("results") if kind == "web" else data.get("results")
    out = []
    for item in items or []:
        if not isinstance(item, dict) or not item.get("url"):
            continue
        out.append(
            SearchResult(
                title=clean(item.get("title")),
                url=str(item["url"]),
                snippet=clean(item.get("description")),
                age=clean(item.get("age") or item.get("page_age")),
            )
        )
    return out


def searxng_request(kind: Kind, query: str, freshness: str | None) -> tuple[str, dict]:
    """(path, params) of a SearXNG JSON search."""
    params: dict[str, Any] = {
        "q": query,
        "format": "json",
        "categories": "news" if kind == "news" else "general",
    }
    time_range = searxng_time_range(freshness)
    if time_range:
        params["time_range"] = time_range
    return "/search", params


def parse_searxng(data: Any, count: int) -> list[SearchResult]:
    """Results of a SearXNG JSON response, at most ``count``."""
    if not isinstance(data, dict):
        raise SearchError("SearXNG answered something that is not a JSON object")
    out = []
    for item in data.get("results") or []:
        if not isinstance(item, dict) or not item.get("url"):
            continue
        out.append(
            SearchResult(
                title=clean(item.get("title")),
                url=str(item["url"]),
                snippet=clean(item.get("content")),
                age=clean(item.get("publishedDate")),
            )
        )
        if len(out) >= count:
            break
    return out


def format_results(kind: Kind, query: str, found: Found) -> str:
    """The text the model reads: a numbered list of title, URL, snippet and age."""
    label = "News" if kind == "news" else "Web"
    head = f'{label} results for "{query}" ({found.provider}, {len(found.results)} results)'
    if found.note:
        head += f"\n{found.note}"
    if not found.results:
        return head + "\nNo results."
    lines = [head]
    for i, r in enumerate(found.results, 1):
        lines.append(f"{i}. {r.title or '(no title)'}\n   {r.url}")
        if r.snippet:
            lines.append(f"   {r.snippet}")
        if r.age:
            lines.append(f"   age: {r.age}")
    return "\n".join(lines)


class Provider(Protocol):
    """A search backend: a name and one async ``search``."""

    name: str

    async def search(
        self, client: httpx.AsyncClient, kind: Kind, query: str, count: int, freshness: str | None
    ) -> list[SearchResult]:
        """Return results or raise SearchError / httpx errors."""
        ...


def _status_error(name: str, resp: httpx.Response, fix: str) -> SearchError:
    detail = resp.text.strip().replace("\n", " ")[:200]
    return SearchError(f"{name} answered HTTP {resp.status_code}{fix}: {detail}")


class BraveProvider:
    """The Brave Search API (``X-Subscription-Token``)."""

    name = "Brave"

    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key

    async def search(
        self, client: httpx.AsyncClient, kind: Kind, query: str, count: int, freshness: str | None
    ) -> list[SearchResult]:
        """One Brave request."""
        path, params = brave_request(kind, query, count, freshness)
        headers = {"Accept": "application/json", "X-Subscription-Token": self.api_key}
        # No redirects: the key header would follow them to whatever host they name.
        resp = await client.get(
            self.base_url + path, params=params, headers=headers, follow_redirects=False
        )
        if resp.is_redirect:
            where = resp.headers.get("location", "?")
            raise SearchError(
                f"Brave answered a redirect to {where}; set THINK_BRAVE_URL to the API's own URL"
            )
        if resp.status_code in (401, 403):
            raise _status_error(self.name, resp, " (check BRAVE_API_KEY)")
        if resp.status_code == 429:
            raise _status_error(self.name, resp, " (rate limited: try again in a moment)")
        if resp.status_code != 200:
            raise _status_error(self.name, resp, "")
        try:
            return parse_brave(kind, resp.json())
        except ValueError:
            raise SearchError("Brave answered something that is not JSON") from None


class SearxngProvider:
    """A SearXNG instance's ``/search?format=json``."""

    name = "SearXNG"

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    async def search(
        self, client: httpx.AsyncClient, kind: Kind, query: str, count: int, freshness: str | None
    ) -> list[SearchResult]:
        """One SearXNG request."""
        path, params = searxng_request(kind, query, freshness)
        resp = await client.get(self.base_url + path, params=params)
        if resp.status_code == 403:
            raise _status_error(self.name, resp, " (enable the json format in its settings.yml)")
        if resp.status_code != 200:
            raise _status_error(self.name, resp, "")
        try:
            return parse_searxng(resp.json(), count)
        except ValueError:
            raise SearchError("SearXNG answered something that is not JSON") from None


class Searcher:
    """Tries each configured provider in order; the first that answers wins."""

    def __init__(self, providers: list[Provider]) -> None:
        self.providers = providers

    @property
    def configured(self) -> bool:
        """True when at least one provider is set up."""
        return bool(self.providers)

    async def search(
        self,
        client: httpx.AsyncClient,
        kind: Kind,
        query: str,
        count: int = 10,
        freshness: str | None = None,
    ) -> Found:
        """Search; SearchError (with every provider's failure) if none answered."""
        if not self.providers:
            raise SearchError(NOT_CONFIGURED)
        if not query.strip():
            raise SearchError("the query is empty")
        brave_freshness(freshness)  # a bad value is the caller's mistake, whatever the provider
        import httpx

        failures: list[str] = []
        for provider in self.providers:
            try:
                results = await provider.search(client, kind, query, count, freshness)
            except SearchError as e:
                failures.append(str(e))
                continue
            except httpx.HTTPError as e:
                failures.append(f"{provider.name}: {type(e).__name__}: {e}")
                continue
            note = f"({'; '.join(failures)}; used {provider.name})" if failures else ""
            return Found(results, provider.name, note)
        raise SearchError("search failed: " + "; ".join(failures))


def providers_from(brave_key: str, brave_url: str, searxng_url: str) -> list[Provider]:
    """Brave first when a key is set, then SearXNG when a URL is set."""
    out: list[Provider] = []
    if brave_key:
        out.append(BraveProvider(brave_url, brave_key))
    if searxng_url:
        out.append(SearxngProvider(searxng_url))
    return out
