"""One Chromium per kernel, driven by Playwright: started lazily, a page per session, closed idle.

    browser = BrowserManager(config, proxy_url=services.proxy_url)
    async with browser.use(session_id) as tab:      # serialised per session
        await tab.page.goto("https://example.org")
    await browser.aclose()                           # kernel shutdown

Playwright drives the system Chromium (``executable_path``; nothing is downloaded) or, when
``cdp_url`` is set, a running one. Every request of every page goes through the egress proxy
(``--proxy-server`` with ``<-loopback>``, so loopback is proxied too, WebRTC without non-proxied
UDP, QUIC off); contexts refuse downloads; ``launch`` gives a fresh temporary profile that
Playwright deletes on close. A session's page (and its cookies) lives between calls until it
has been idle ``idle_timeout`` seconds; the browser closes when no page is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .config import WebConfig
from .page import NetworkWatch

log = logging.getLogger(__name__)

# Chromium switches: headless on a server, no background traffic of its own (on a closed
# network each refused connection would otherwise be retried in a storm), nothing that could
# leave the proxy (QUIC is UDP; WebRTC may use UDP unless told not to).
SWITCHES = [
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-domain-reliability",
    "--dns-prefetch-disable",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
]


class BrowserUnavailable(Exception):
    """No browser can be started (none installed, or it failed); the message says what to do."""


@dataclass
class Tab:
    """A session's browser context and page."""

    context: Any
    page: Any
    watch: NetworkWatch
    last_used: float
    #: Whether the session's own app routes are installed (``ownapps.py``); only once it has
    #: an app, since Playwright's routing turns the context's HTTP cache off.
    routed: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class BrowserManager:
    """Owns the Playwright driver, the browser and one :class:`Tab` per session."""

    def __init__(
        self,
        config: WebConfig,
        proxy_url: Callable[[], Awaitable[str]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._proxy_url = proxy_url
        self.clock = clock
        self._pw: Any = None
        self.browser: Any = None
        self.tabs: dict[str, Tab] = {}
        # A cached result stood in for a page load: that URL is loaded before the session's
        # next page action (kept outside the tab: a cache hit must not start a browser).
        self.pending: dict[str, str] = {}
        self._start_lock = asyncio.Lock()
        self._tab_lock = asyncio.Lock()
        self._reaper: asyncio.Task[None] | None = None
        self._idle_since = clock()
        self.launch_ms: float | None = None
        self.launches = 0

    # -- state --------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while a browser is connected."""
        return self.browser is not None

    def describe(self) -> str:
        """One line for ``%think_status``."""
        cfg = self.config
        where = f"CDP endpoint {cfg.cdp_url}" if cfg.cdp_url else (cfg.chromium or "")
        if not where:
            return (
                "**unavailable**: no Chromium found; install it (e.g. `apt install chromium`) "
                "or set THINK_CHROMIUM"
            )
        if self.running:
            return f"{where}: running, {len(self.tabs)} page(s)"
        return f"{where} (starts on first use)"

    # -- lifecycle ----------------------------------------------------------------------------

    async def _ensure_browser(self) -> Any:
        async with self._start_lock:
            if self.browser is not None and self.browser.is_connected():
                return self.browser
            await self._stop_browser()
            t0 = time.perf_counter()
            self.browser = await self._launch()
            self._idle_since = self.clock()
            self.launch_ms = (time.perf_counter() - t0) * 1000
            self.launches += 1
            if self._reaper is None or self._reaper.done():
                self._reaper = asyncio.ensure_future(self._reap())
            return self.browser

    async def _launch(self) -> Any:
        cfg = self.config
        if not cfg.cdp_url and not cfg.chromium:
            raise BrowserUnavailable(
                "no Chromium found: install it (e.g. `apt install chromium`) or set "
                "THINK_CHROMIUM to a Chromium or Chrome executable, then restart the kernel"
            )
        proxy = await self._proxy_url()
        from playwright.async_api import async_playwright

        pw = await async_playwright().start()
        try:
            if cfg.cdp_url:
                browser = await pw.chromium.connect_over_cdp(cfg.cdp_url)
            else:
                args = [*SWITCHES, *cfg.chromium_args]
                if hasattr(os, "geteuid") and os.geteuid() == 0:
                    args.append("--no-sandbox")  # Chromium refuses to start as root otherwise
                browser = await pw.chromium.launch(
                    executable_path=cfg.chromium,
                    headless=True,
                    args=args,
                    # Playwright adds --proxy-bypass-list=<-loopback>: loopback is proxied too.
                    proxy={"server": proxy},
                    # The kernel's interrupt (SIGINT to its process group) stops a run, not
                    # the browser.
                    handle_sigint=False,
                    handle_sigterm=False,
                    handle_sighup=False,
                    timeout=cfg.navigation_timeout * 1000,
                )
        except Exception as e:
            with contextlib.suppress(Exception):
                await pw.stop()
            where = cfg.cdp_url or cfg.chromium
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise BrowserUnavailable(f"the browser ({where}) did not start: {first}") from None
        self._pw = pw
        browser.on("disconnected", lambda _b: self._forget(browser))
        return browser

    def _forget(self, browser: Any) -> None:
        if self.browser is browser:  # crashed or closed: the next call starts a new one
            self.browser = None
            self.tabs.clear()

    async def _new_tab(self) -> Tab:
        browser = await self._ensure_browser()
        cfg = self.config
        options: dict[str, Any] = {
            "viewport": {"width": cfg.viewport_width, "height": cfg.viewport_height},
            "accept_downloads": False,
        }
        if cfg.cdp_url:
            # A browser we did not start has no proxy of ours: give each context one.
            options["proxy"] = {"server": await self._proxy_url()}
        context = await browser.new_context(**options)
        context.set_default_timeout(cfg.action_timeout * 1000)
        context.set_default_navigation_timeout(cfg.navigation_timeout * 1000)
        page = await context.new_page()
        tab = Tab(context, page, NetworkWatch(context), self.clock())

        def follow(popup: Any) -> None:
            # A link or script opened a new window: the next action sees what the user would.
            tab.page = popup

        context.on("page", follow)
        return tab

    @contextlib.asynccontextmanager
    async def use(self, session_id: str) -> AsyncIterator[Tab]:
        """The session's tab, started if needed; calls on one session run one at a time."""
        async with self._tab_lock:  # two first calls of a session must not open two pages
            tab = self.tabs.get(session_id)
            if tab is None or tab.page.is_closed():
                tab = await self._new_tab()
                self.tabs[session_id] = tab
        async with tab.lock:
            tab.last_used = self.clock()
            try:
                yield tab
            finally:
                tab.last_used = self.clock()

    async def close_tab(self, session_id: str, remember: bool = False) -> None:
        """Close a session's context (its cookies and storage go with it); ``remember`` keeps
        its URL so the session's next page action reopens it."""
        tab = self.tabs.pop(session_id, None)
        if tab is not None:
            url = tab.page.url
            if remember and url.startswith(("http://", "https://")):
                self.pending.setdefault(session_id, url)
            with contextlib.suppress(Exception):
                await tab.context.close()
            if not self.tabs:
                self._idle_since = self.clock()

    async def reap_idle(self) -> None:
        """Close tabs idle past ``idle_timeout``, then the browser if it has none left."""
        now = self.clock()
        limit = self.config.idle_timeout
        for sid, tab in list(self.tabs.items()):
            if not tab.lock.locked() and now - tab.last_used >= limit:
                await self.close_tab(sid, remember=True)
        if self.browser is not None and not self.tabs and now - self._idle_since >= limit:
            async with self._tab_lock:  # not while a first page is being opened
                if not self.tabs and self.clock() - self._idle_since >= limit:
                    async with self._start_lock:
                        await self._stop_browser()

    async def _reap(self) -> None:
        while self.browser is not None:
            await asyncio.sleep(max(0.2, min(30.0, self.config.idle_timeout / 4)))
            try:
                await self.reap_idle()
            except Exception:  # one failed close must not stop later ones
                log.exception("closing idle browser pages failed")

    async def _stop_browser(self) -> None:
        browser, pw = self.browser, self._pw
        self.browser, self._pw = None, None
        self.tabs.clear()
        if browser is not None:
            with contextlib.suppress(Exception):
                await browser.close()
        if pw is not None:
            with contextlib.suppress(Exception):
                await pw.stop()

    async def aclose(self) -> None:
        """Close every page, the browser and the driver (kernel shutdown)."""
        reaper, self._reaper = self._reaper, None
        if reaper is not None and reaper is not asyncio.current_task():
            reaper.cancel()
            await asyncio.gather(reaper, return_exceptions=True)
        async with self._start_lock:
            await self._stop_browser()
