"""The web tools the model sees: search, browse, screenshot, interact, scrape.

Plain async functions (STYLE 6). They find the kernel's :class:`WebServices` in
``ctx.services.web``; everything they do goes through its egress proxy, so no page, redirect
or search endpoint can make them reach this machine or its network unless allowlisted. The
one internal exception is the session's own live apps (``ownapps.py``): their address
(``/api/think/sessions/{id}/apps/{name}/``, ``app://{name}/``) opens them, answered from their
sockets by the kernel, never through the Jupyter server.
Results are cached per session (search results per kernel); a hit says so in the text the
model reads and in the action-log summary (``(cache hit)``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ..tools.base import ToolContext, ToolError, ToolFunc, ToolOutput
from ..tools.summarize import clip
from .browser import BrowserUnavailable, Tab
from .cache import key
from .ownapps import AppRoutes, NotOwnApp, app_page_url
from .page import (
    Action,
    PageError,
    PageText,
    act,
    capture,
    check_url,
    format_page,
    read,
    scrape,
    settle,
)
from .search import NOT_CONFIGURED, Kind, SearchError, format_results
from .services import WebServices, WebSetupError
from .vision import Image

T = TypeVar("T")
INTERACT_TEXT_CHARS = 6000


def _web(ctx: ToolContext) -> WebServices:
    web = ctx.services.web
    if web is None:
        raise ToolError("the web tools are not set up in this session", "WEB_UNAVAILABLE")
    try:
        web.check()
    except WebSetupError as e:
        raise ToolError(str(e), "WEB_MISCONFIGURED") from None
    return web


def _socket_of(ctx: ToolContext) -> Callable[[str], str | None]:
    """The socket of a running app of the calling session, by name."""
    apps = ctx.services.apps

    def socket_of(name: str) -> str | None:
        app = apps.get(ctx.session_id, name) if apps is not None else None
        return app.path if app is not None and app.alive else None

    return socket_of


def _target(ctx: ToolContext, url: str) -> tuple[str, bool]:
    """(the URL the browser opens, whether it is one of the session's own apps); ToolError
    for an address that is neither an http(s) URL nor a running app of this session."""
    try:
        own = app_page_url(url, ctx.session_id, _socket_of(ctx))
        return (own, True) if own is not None else (check_url(url), False)
    except (NotOwnApp, PageError) as e:
        raise ToolError(str(e), "URL_NOT_ALLOWED") from None


def _page_prefix(session_id: str) -> str:
    return key("page", session_id)[:-1] + ","


# -- search ------------------------------------------------------------------------------------


async def _search(
    ctx: ToolContext, kind: Kind, query: str, count: int, freshness: str | None
) -> ToolOutput:
    web = _web(ctx)
    if not web.searcher.configured:
        raise ToolError(NOT_CONFIGURED, "NOT_CONFIGURED")
    k = key("search", kind, query.strip(), count, freshness)
    hit = web.cache.get(k)
    if hit is not None:
        found = hit.value
        text = format_results(kind, query, found) + f"\n(cached result from {hit.age:.0f} s ago)"
        summary = f"{kind}_search: {len(found.results)} results from {found.provider} (cache hit)"
        return ToolOutput(text=text, summary=summary)
    mark = web.egress.blocked_count
    try:
        found = await web.searcher.search(await web.http(), kind, query, count, freshness)
    except SearchError as e:
        note = web.blocked_note(mark)
        raise ToolError(f"{e} {note}".strip(), "SEARCH_FAILED") from None
    web.cache.put(k, found)
    summary = f"{kind}_search: {len(found.results)} results from {found.provider}"
    return ToolOutput(text=format_results(kind, query, found), summary=summary)


async def web_search(
    ctx: ToolContext, query: str, count: int = 10, freshness: str | None = None
) -> ToolOutput:
    """Search the web: title, URL, snippet and age of the top results (Brave or SearXNG).

    Args:
        query: what to search for
        count: how many results, 1 to 20
        freshness: only results from the last day, week, month or year (or YYYY-MM-DDtoYYYY-MM-DD)
    """
    return await _search(ctx, "web", query, count, freshness)


async def news_search(
    ctx: ToolContext, query: str, count: int = 10, freshness: str | None = None
) -> ToolOutput:
    """Search news articles: title, URL, snippet and age of the top results.

    Args:
        query: what to search for
        count: how many results, 1 to 50
        freshness: only articles from the last day, week, month or year
    """
    return await _search(ctx, "news", query, count, freshness)


# -- the browser -------------------------------------------------------------------------------


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    # "Page.goto: net::ERR_..." -> "net::ERR_..." (the API name means nothing to the model)
    return re.sub(r"^[A-Za-z]+\.[A-Za-z_]+: ", "", line)


async def _in_tab(ctx: ToolContext, web: WebServices, fn: Callable[[Tab], Awaitable[T]]) -> T:
    """Run ``fn`` on the session's tab; browser and page failures become ToolErrors."""
    from playwright.async_api import Error as PlaywrightError

    mark = web.egress.blocked_count
    try:
        async with web.browser.use(ctx.session_id) as tab:
            await _route_own_apps(ctx, web, tab)
            return await fn(tab)
    except BrowserUnavailable as e:
        raise ToolError(str(e), "BROWSER_UNAVAILABLE") from None
    except WebSetupError as e:
        raise ToolError(str(e), "WEB_MISCONFIGURED") from None
    except PageError as e:
        raise ToolError(str(e), "PAGE_ERROR") from None
    except PlaywrightError as e:
        msg = _first_line(e)
        if "Download is starting" in msg:
            msg = "the URL starts a download, and downloads are off"
        note = web.blocked_note(mark)
        raise ToolError(f"{msg} {note}".strip(), "PAGE_ERROR") from None


async def _route_own_apps(ctx: ToolContext, web: WebServices, tab: Tab) -> None:
    """Once the session has an app, its tab answers the app's address (before any page of
    it loads: until then a request to it meets the egress guard, which refuses it)."""
    apps = ctx.services.apps
    if tab.routed or apps is None or not apps.alive(ctx.session_id):
        return
    routes = AppRoutes(ctx.session_id, _socket_of(ctx), web.egress.note_refusal,
                       max_bytes=web.config.max_response_mb * 1_000_000,
                       timeout=web.config.navigation_timeout)  # fmt: skip
    await routes.install(tab.context)
    tab.routed = True


async def _goto(tab: Tab, web: WebServices, session_id: str, url: str) -> int | None:
    """Load ``url``; ToolError if the guard refused the page itself (a redirect included)."""
    web.browser.pending.pop(session_id, None)
    mark = web.egress.blocked_count
    response = await tab.page.goto(url, wait_until="load")
    status = response.status if response is not None else None
    if status == 403:
        landed = urlsplit(tab.page.url)
        for b in web.egress.blocked_since(mark):
            if b.host in (landed.hostname, urlsplit(url).hostname):
                raise ToolError(web.blocked_note(mark), "URL_BLOCKED")
    await settle(tab.page, tab.watch, 1500)
    return status


async def _current(tab: Tab, web: WebServices, session_id: str, url: str | None) -> None:
    """Open ``url``, or the page a cache hit stood in for; PageError if no page is open."""
    if url:
        await _goto(tab, web, session_id, url)
        return
    pending = web.browser.pending.get(session_id)
    if pending:
        await _goto(tab, web, session_id, pending)
    elif not tab.page.url.startswith(("http://", "https://")):
        raise PageError("no page is open: give a url, or call browse_url first")


def _with_blocked(text: str, web: WebServices, mark: int) -> str:
    note = web.blocked_note(mark)
    return f"{text}\n\n{note}" if note else text


async def browse_url(ctx: ToolContext, url: str) -> ToolOutput:
    """Open a web page in the browser and return its readable text, title and links. Your
    own live app (serve_app) opens at the address serve_app printed,
    /api/think/sessions/ID/apps/NAME/..., or at app://NAME/...; nothing else of this machine.

    Args:
        url: the http(s) URL to open, or your app's address
    """
    web = _web(ctx)
    url, own = _target(ctx, url)
    cfg = web.config
    k = key("page", ctx.session_id, "text", url)
    hit = None if own else web.cache.get(k)  # an app changes as the agent edits it
    if hit is not None:
        web.browser.pending[ctx.session_id] = url
        page_text: PageText = hit.value
        return ToolOutput(
            text=format_page(page_text, cfg.max_text_chars, cached_age=hit.age),
            summary=f"browse: {clip(url, 100)} -> {page_text.status} (cache hit)",
        )
    mark = web.egress.blocked_count

    async def run(tab: Tab) -> PageText:
        status = await _goto(tab, web, ctx.session_id, url)
        result = await read(tab.page, cfg.max_text_chars, cfg.max_page_chars)
        result.status = status
        return result

    result = await _in_tab(ctx, web, run)
    ok = result.status is None or result.status < 400
    if ok and not own:  # an error page is worth loading again next time
        web.cache.put(k, result)
    return ToolOutput(
        text=_with_blocked(format_page(result, cfg.max_text_chars), web, mark),
        summary=f"browse: {clip(url, 100)} -> {result.status}, {result.text_chars} chars",
        ok=ok,
        error="" if ok else f"HTTP {result.status}",
    )


async def _store_png(ctx: ToolContext, png: bytes) -> str:
    # Kept as raw PNG bytes (content-addressed), like image attachments.
    if ctx.store is None:
        return ""
    return await ctx.store.save_blob(png)


async def screenshot(
    ctx: ToolContext,
    url: str | None = None,
    selector: str | None = None,
    text: str | None = None,
    full_page: bool = False,
    question: str | None = None,
) -> ToolOutput:
    """Take a PNG screenshot of the current page (or open url first), the whole page or one
    element; it is shown to the user. Give a question to have the vision model answer it
    about the image. Your own live app opens at /api/think/sessions/ID/apps/NAME/... or
    app://NAME/....

    Args:
        url: open this URL (or your app's address) first (else the page browse_url or
            interact_with_page left open)
        selector: CSS selector of one element to capture
        text: visible text of one element to capture (instead of a selector)
        full_page: capture the whole scrollable page, not just the viewport
        question: what to ask the vision model about the screenshot
    """
    web = _web(ctx)
    cfg = web.config
    mark = web.egress.blocked_count
    if url:
        url = _target(ctx, url)[0]

    async def run(tab: Tab) -> tuple[Any, str, str]:
        await _current(tab, web, ctx.session_id, url)
        shot = await capture(tab.page, selector, text, full_page, cfg.max_screenshot_height)
        return shot, tab.page.url, await tab.page.title()

    shot, page_url, title = await _in_tab(ctx, web, run)
    blob, thumb = await asyncio.gather(_store_png(ctx, shot.png), _store_png(ctx, shot.thumbnail))
    what = f"element {selector or repr(text)}" if (selector or text) else "page"
    lines = [
        f"Screenshot of the {what} at {page_url} ({title or 'untitled'}): "
        f"{shot.width}x{shot.height} PNG, {len(shot.png) // 1024} KB, shown to the user."
    ]
    if blob:
        lines.append(f"Stored as blob {blob} (thumbnail {thumb}).")
    answered = False
    if question:
        if web.vision is None:
            lines.append("No vision model is available to answer the question.")
        else:
            try:
                answer = await web.vision.ask(
                    question,
                    [Image("image/png", shot.png)],
                    session_id=ctx.session_id,
                    message_id=ctx.message_id,
                )
            except Exception as e:  # the screenshot stands; the model learns the ask failed
                lines.append(f"The vision model could not answer: {type(e).__name__}: {e}")
            else:
                answered = True
                lines.append(f"Vision model ({web.vision.model_name}) on {question!r}:\n{answer}")
    if not question:
        lines.append("To know what it shows, call screenshot again with a question.")
    b64 = base64.b64encode(shot.png).decode("ascii")
    display = {
        "image/png": b64,
        "text/plain": f"<screenshot of {page_url}>",
        # Not a MIME type, so the kernel leaves it out of the cell; the chat and a loop that
        # routes images to the vision role read it (see think_kernel/web/vision.py).
        "think": {
            "kind": "screenshot",
            "url": page_url,
            "blob": blob,
            "thumbnail": thumb,
            "width": shot.width,
            "height": shot.height,
        },
    }
    summary = f"screenshot: {clip(page_url, 90)} thumbnail={thumb or 'none'}"
    if question:
        summary = f"screenshot: {clip(page_url, 70)} asked vision, thumbnail={thumb or 'none'}"
    return ToolOutput(
        text=_with_blocked("\n".join(lines), web, mark),
        summary=summary,
        display=[display],
        ok=answered or not question or web.vision is None,
    )


async def interact_with_page(
    ctx: ToolContext,
    action: Action,
    selector: str | None = None,
    text: str | None = None,
    value: str | None = None,
) -> ToolOutput:
    """Act on the open page (click, type, select, scroll, press, hover, wait, navigate),
    finding the element by CSS selector or by its visible text; returns the page afterwards.

    Args:
        action: click, type (fill a field), select, scroll, press (a key), hover, wait, navigate
        selector: CSS selector of the element
        text: the element's visible text, label, placeholder or button name (or a selector)
        value: text to type, option, key (Enter), scroll (up/down/top/bottom/pixels) or URL
            (your own app's address too)
    """
    web = _web(ctx)
    if action == "navigate":
        value = _target(ctx, value or "")[0]
    cfg = web.config
    mark = web.egress.blocked_count
    # The page may change what a cached read of it said (a form posted, a cookie set).
    web.cache.drop(_page_prefix(ctx.session_id))

    async def run(tab: Tab) -> tuple[str, PageText]:
        if action == "navigate":
            done = f"navigated to {value}"
            await _goto(tab, web, ctx.session_id, value or "")
        else:
            await _current(tab, web, ctx.session_id, None)
            before = tab.page
            done = await act(
                tab.page, tab.watch, action, selector, text, value, cfg.action_timeout * 1000
            )
            await settle(tab.page, tab.watch, 3000)
            if tab.page is not before:  # the action opened a window: read that one, loaded
                await settle(tab.page, tab.watch, 3000)
        return done, await read(tab.page, INTERACT_TEXT_CHARS, cfg.max_page_chars)

    done, after = await _in_tab(ctx, web, run)
    body = format_page(after, INTERACT_TEXT_CHARS)
    return ToolOutput(
        text=_with_blocked(f"Done: {done}.\n\n{body}", web, mark),
        summary=f"interact: {clip(done, 80)} -> {clip(after.url, 90)}",
    )


async def scrape_page(
    ctx: ToolContext,
    selectors: dict[str, str],
    url: str | None = None,
    item: str | None = None,
) -> ToolOutput:
    """Extract structured data (JSON) from the open page (or open url first) with CSS
    selectors: each field gets the text of every match, a <table> gives its rows as objects,
    'css@attr' gives an attribute; with item, one record per matching element.

    Args:
        selectors: field -> CSS selector, e.g. {"prices": "table#prices", "link": "a.more@href"}
        url: open this URL (or your own app's address) first (else the page already open)
        item: CSS selector of repeated elements (e.g. ".product"); selectors are relative to it
    """
    web = _web(ctx)
    own = False
    if url:
        url, own = _target(ctx, url)
    k = key("page", ctx.session_id, "scrape", url, selectors, item) if url else ""
    hit = web.cache.get(k) if url and not own else None
    if hit is not None:
        assert url is not None
        web.browser.pending[ctx.session_id] = url
        data, page_url = hit.value
        text = json.dumps(data, indent=1, ensure_ascii=False)
        return ToolOutput(
            text=f"Data from {page_url} (cached result from {hit.age:.0f} s ago):\n{text}",
            summary=f"scrape: {clip(page_url, 100)}: {_count(data)} (cache hit)",
        )
    mark = web.egress.blocked_count

    async def run(tab: Tab) -> tuple[Any, str]:
        await _current(tab, web, ctx.session_id, url)
        return await scrape(tab.page, selectors, item), tab.page.url

    data, page_url = await _in_tab(ctx, web, run)
    if url and not own:
        web.cache.put(k, (data, page_url))
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return ToolOutput(
        text=_with_blocked(f"Data from {page_url}:\n{text}", web, mark),
        summary=f"scrape: {clip(page_url, 100)}: {_count(data)}",
    )


def _count(data: Any) -> str:
    if isinstance(data, list):
        return f"{len(data)} records"
    if isinstance(data, dict):
        return ", ".join(f"{k}={len(v) if isinstance(v, list) else 1}" for k, v in data.items())
    return "1 value"


WEB_TOOLS: list[ToolFunc] = [
    web_search,
    news_search,
    browse_url,
    screenshot,
    interact_with_page,
    scrape_page,
]
