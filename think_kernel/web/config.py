"""Settings of the web tools (``c.WebConfig.*``), and the environment names that set them.

| environment | trait | meaning |
|---|---|---|
| ``BRAVE_API_KEY`` | ``brave_api_key`` | Brave Search API key (web and news search) |
| ``THINK_BRAVE_URL`` | ``brave_url`` | Brave API base URL (tests point it at a local fake) |
| ``THINK_SEARXNG_URL`` | ``searxng_url`` | a SearXNG instance, for people without a key |
| ``THINK_BROWSER_ALLOW`` | ``allow`` | comma-separated ``host``, ``host:port`` or CIDR entries |
| ``THINK_CHROMIUM`` | ``chromium`` | the browser executable |
| ``THINK_BROWSER_CDP`` | ``cdp_url`` | a running Chromium's CDP endpoint, used instead |
"""

from __future__ import annotations

import os
import shutil

from traitlets import Float, Int, List, Unicode, default
from traitlets.config import Configurable

BRAVE_URL = "https://api.search.brave.com/res/v1"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str:
    """The first of chromium, chromium-browser, google-chrome on PATH ("" if none)."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return ""


class WebConfig(Configurable):
    """Search providers, the browser, the network allowlist, timeouts and the cache."""

    brave_api_key = Unicode(
        config=True,
        help="Brave Search API key for web_search and news_search. Default: $BRAVE_API_KEY. "
        "Never shown to sandboxed code.",
    )
    brave_url = Unicode(
        config=True,
        help="Base URL of the Brave Search API (…/web/search and …/news/search are appended). "
        f"Default: $THINK_BRAVE_URL, else {BRAVE_URL}.",
    )
    searxng_url = Unicode(
        config=True,
        help="Base URL of a SearXNG instance with the JSON format enabled, used when no Brave "
        "key is set (or Brave fails). Default: $THINK_SEARXNG_URL, else none.",
    )
    allow = List(
        Unicode(),
        config=True,
        help="Hosts the browser and search tools may reach although they are on this machine "
        "or a private network: 'host', 'host:port' or CIDR entries. Default: "
        "$THINK_BROWSER_ALLOW (comma-separated), else none (public addresses only).",
    )
    chromium = Unicode(
        config=True,
        help="Chromium (or Chrome) executable the browser tools drive; nothing is downloaded. "
        "Default: $THINK_CHROMIUM, else the first of chromium, chromium-browser, google-chrome "
        "on PATH.",
    )
    cdp_url = Unicode(
        config=True,
        help="CDP endpoint of an already running Chromium (e.g. http://127.0.0.1:9222) to use "
        "instead of starting one; its pages still go through the egress proxy, which it must "
        "be able to reach. Default: $THINK_BROWSER_CDP, else none.",
    )
    chromium_args = List(
        Unicode(),
        config=True,
        help="Extra command-line switches for Chromium. Default: none.",
    )
    search_timeout = Float(
        15.0, config=True, help="Timeout of one search request, in seconds. Default: 15."
    )
    navigation_timeout = Float(
        30.0, config=True, help="Timeout of one page load, in seconds. Default: 30."
    )
    action_timeout = Float(
        10.0,
        config=True,
        help="Timeout of one page action (click, type, find an element), in seconds. Default: 10.",
    )
    idle_timeout = Float(
        300.0,
        config=True,
        help="A session's page is closed after this many seconds unused, and the browser once "
        "no page is left, in seconds. Default: 300.",
    )
    viewport_width = Int(1280, config=True, help="Page width, in CSS pixels. Default: 1280.")
    viewport_height = Int(800, config=True, help="Page height, in CSS pixels. Default: 800.")
    max_page_chars = Int(
        2_000_000,
        config=True,
        help="Pages whose HTML is longer than this are read only up to it, in characters. "
        "Default: 2000000.",
    )
    max_text_chars = Int(
        40_000,
        config=True,
        help="Readable text kept from a page, in characters. Default: 40000.",
    )
    max_response_mb = Int(
        50,
        config=True,
        help="Largest single HTTP response or tunnel-full of data the browser may download "
        "through the egress proxy, in MB (tunnels get 10 times this). Default: 50.",
    )
    max_screenshot_height = Int(
        6000,
        config=True,
        help="Full-page screenshots are cut at this height, in CSS pixels. Default: 6000.",
    )
    cache_ttl = Float(
        600.0,
        config=True,
        help="How long a search or page result is reused, in seconds; 0 turns the cache off. "
        "Default: 600.",
    )
    cache_size = Int(
        256,
        config=True,
        help="Search and page results kept (least recently used dropped first), a count. "
        "Default: 256.",
    )

    @default("brave_api_key")
    def _brave_key_default(self) -> str:
        return os.environ.get("BRAVE_API_KEY", "")

    @default("brave_url")
    def _brave_url_default(self) -> str:
        return os.environ.get("THINK_BRAVE_URL") or BRAVE_URL

    @default("searxng_url")
    def _searxng_default(self) -> str:
        return os.environ.get("THINK_SEARXNG_URL", "")

    @default("allow")
    def _allow_default(self) -> list[str]:
        raw = os.environ.get("THINK_BROWSER_ALLOW", "")
        return [x.strip() for x in raw.split(",") if x.strip()]

    @default("chromium")
    def _chromium_default(self) -> str:
        return os.environ.get("THINK_CHROMIUM") or find_chromium()

    @default("cdp_url")
    def _cdp_default(self) -> str:
        return os.environ.get("THINK_BROWSER_CDP", "")
