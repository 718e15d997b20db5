"""What the web tools share in one kernel: policy, egress proxy, HTTP client, cache, browser.

    web = WebServices(WebConfig(), vision=ModelVision(resolve))
    ToolServices(web=web)             # the runtime does this; tools find it there
    ...
    await web.aclose()                # kernel shutdown: browser, driver, proxy, client

Nothing starts until a tool needs it: the proxy on the first search or page, the browser on
the first page. A malformed ``THINK_BROWSER_ALLOW`` does not stop the kernel; the web tools
refuse to run and say which entry is wrong.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .browser import BrowserManager
from .cache import ResultCache
from .config import WebConfig
from .egress import Egress, PolicySource
from .netpolicy import AllowEntry, parse_allow
from .search import NOT_CONFIGURED, Searcher, providers_from
from .vision import VisionAsker

if TYPE_CHECKING:
    import httpx

    from .proxy import EgressProxy


class WebSetupError(Exception):
    """The web tools cannot run with this configuration; the message says what to fix."""


class WebServices:
    """One per kernel (the runtime's ``services.web``)."""

    def __init__(
        self,
        config: WebConfig | None = None,
        *,
        vision: VisionAsker | None = None,
        egress: Egress | None = None,
    ) -> None:
        self.config = config or WebConfig()
        cfg = self.config
        self.vision = vision
        self.allow_error = ""
        allow: list[AllowEntry] = []
        try:
            allow = parse_allow(cfg.allow)
        except ValueError as e:
            self.allow_error = f"THINK_BROWSER_ALLOW (c.WebConfig.allow) is invalid: {e}"
        self.allow = allow
        self.egress = egress or Egress(PolicySource(allow), connect_timeout=cfg.search_timeout)
        self.proxy: EgressProxy | None = None  # built on first use (h11 loads with it)
        self.searcher = Searcher(providers_from(cfg.brave_api_key, cfg.brave_url, cfg.searxng_url))
        self.cache = ResultCache(cfg.cache_size, cfg.cache_ttl)
        self.browser = BrowserManager(cfg, self.proxy_url)
        self._client: httpx.AsyncClient | None = None
        self._lock = asyncio.Lock()

    def check(self) -> None:
        """Raise WebSetupError when the configuration is broken."""
        if self.allow_error:
            raise WebSetupError(self.allow_error)

    async def proxy_url(self) -> str:
        """The egress proxy's URL, starting it on first use."""
        self.check()
        async with self._lock:
            if self.proxy is None:
                from .proxy import EgressProxy

                mb = 1_000_000
                self.proxy = EgressProxy(
                    self.egress,
                    max_response_bytes=self.config.max_response_mb * mb,
                    max_tunnel_bytes=self.config.max_response_mb * mb * 10,
                )
            return await self.proxy.start()

    async def http(self) -> httpx.AsyncClient:
        """An HTTP client whose every request (and redirect) goes through the egress proxy."""
        if self._client is None:
            import httpx  # here: an import that a first %%think need not pay

            url = await self.proxy_url()
            self._client = httpx.AsyncClient(
                proxy=url,
                trust_env=False,  # HTTP(S)_PROXY must not route around the checks
                timeout=self.config.search_timeout,
                follow_redirects=True,
                max_redirects=5,
                headers={"User-Agent": "think-jupyter (web search tool)"},
            )
        return self._client

    def status_rows(self) -> list[tuple[str, str]]:
        """Lines for ``%think_status``: search provider, browser, network allowlist."""
        names = [p.name for p in self.searcher.providers]
        if names:
            search = " then ".join(names)
            if self.config.searxng_url:
                search += f" (SearXNG at {self.config.searxng_url})"
        else:
            search = f"**not configured**: {NOT_CONFIGURED}"
        allow = ", ".join(str(a) for a in self.allow) or "none (public addresses only)"
        if self.allow_error:
            allow = f"**{self.allow_error}**"
        cache = "off"
        if self.cache.enabled:
            cache = (
                f"{len(self.cache)}/{self.config.cache_size} entries, "
                f"{self.config.cache_ttl:g} s TTL"
            )
        return [
            ("web search", search),
            ("browser", self.browser.describe()),
            ("browser may also reach", allow),
            ("web cache", cache),
        ]

    async def aclose(self) -> None:
        """Close the browser, the HTTP client and the proxy."""
        await self.browser.aclose()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self.proxy is not None:
            await self.proxy.aclose()

    def blocked_note(self, mark: int) -> str:
        """A sentence listing connections refused since ``mark`` ("" if none)."""
        seen: list[str] = []
        for b in self.egress.blocked_since(mark):
            line = f"{b.host}:{b.port} ({b.reason})"
            if line not in seen:
                seen.append(line)
        if not seen:
            return ""
        shown = "; ".join(seen[:5]) + (f"; and {len(seen) - 5} more" if len(seen) > 5 else "")
        return (
            f"Blocked by the network guard: {shown}. The browser and search tools may not "
            "reach this machine or its network (THINK_BROWSER_ALLOW lists exceptions)."
        )
