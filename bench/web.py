"""Web tools speed: browser start, page load -> text, screenshot, search.

    python bench/web.py [-n 20] [--starts 5]

Each figure of ours is printed next to a baseline measured in the same run: plain Playwright
on the same Chromium with no egress proxy and no extraction (for the browser and the page
figures), or a direct HTTP GET (for search). Pages are served locally, so the figures are our
overhead, not the network's. Targets: browser start (Playwright driver + Chromium + our proxy)
<= baseline + 300 ms; page load -> readable text <= baseline + 75 ms (proxy hop, extraction,
waiting for the page's requests); screenshot with thumbnail and blob <= baseline + 100 ms;
search through the proxy <= 2x a direct request + 5 ms; a cache hit <= 1 ms. jupyter-ai has no
browser or search tools, so there is no peer figure.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

from tests.web.conftest import Tools, web_config  # noqa: E402
from tests.web.servers import Server, brave_routes, site_routes  # noqa: E402
from think_kernel.store import Store  # noqa: E402
from think_kernel.web import WebServices  # noqa: E402
from think_kernel.web.browser import SWITCHES  # noqa: E402
from think_kernel.web.config import find_chromium  # noqa: E402


async def timed(n: int, fn: Callable[[], Awaitable[Any]]) -> list[float]:
    """Wall times of ``n`` calls, in ms."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def line(name: str, ours: list[float], base: list[float] | None, target: str, ok: bool) -> None:
    """One result line: our median and p90, the baseline's median and the ratio."""
    p50 = statistics.median(ours)
    p90 = sorted(ours)[int(len(ours) * 0.9)] if len(ours) > 1 else p50
    mark = "ok  " if ok else "MISS"
    extra = ""
    if base:
        b = statistics.median(base)
        extra = f"  baseline {b:8.1f} ms  ({p50 / b:4.2f}x)"
    print(f"{mark} {name:30s} p50 {p50:8.1f} ms  p90 {p90:8.1f} ms{extra}  [{target}]")


async def baseline_browser(chromium: str, starts: int, n: int, url: str) -> dict[str, list[float]]:
    """Plain Playwright, no proxy: driver + launch, goto + innerText, screenshot."""
    launches = []
    for _ in range(starts):
        t = time.perf_counter()
        pw = await async_playwright().start()
        b = await pw.chromium.launch(executable_path=chromium, args=[*SWITCHES, "--no-sandbox"])
        launches.append((time.perf_counter() - t) * 1000)
        await b.close()
        await pw.stop()
    pw = await async_playwright().start()
    b = await pw.chromium.launch(executable_path=chromium, args=[*SWITCHES, "--no-sandbox"])
    page = await b.new_page(viewport={"width": 1280, "height": 800})

    async def load() -> None:
        await page.goto(url, wait_until="load")
        await page.inner_text("body")

    loads = await timed(n, load)
    shots = await timed(n, lambda: page.screenshot(type="png"))
    await b.close()
    await pw.stop()
    return {"start": launches, "load": loads, "shot": shots}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20, help="repetitions per figure")
    ap.add_argument("--starts", type=int, default=5, help="browser starts to time")
    args = ap.parse_args()
    chromium = find_chromium()
    if not chromium:
        sys.exit("no Chromium on PATH (set THINK_CHROMIUM)")
    site, brave = Server(site_routes()), Server(brave_routes())
    tmp = Path(tempfile.mkdtemp(prefix="think-bench-web-"))
    store = await Store.open(tmp / "think.db")
    try:
        url = site.origin + "/"
        print(f"Chromium: {chromium}; local page {url}; n={args.n}, starts={args.starts}")
        base = await baseline_browser(chromium, args.starts, args.n, url)

        starts = []
        for _ in range(args.starts):
            web = WebServices(web_config(site, brave, cache_ttl=0))
            call = Tools(web, store)
            out = await call("browse_url", url=url)
            assert out.ok, out.text
            assert web.browser.launch_ms is not None
            starts.append(web.browser.launch_ms)
            await web.aclose()

        web = WebServices(web_config(site, brave, cache_ttl=0))
        call = Tools(web, store)
        assert (await call("browse_url", url=url)).ok  # warm: browser and page exist

        async def browse() -> None:
            out = await call("browse_url", url=url)
            assert out.ok, out.text

        async def shot() -> None:
            out = await call("screenshot")
            assert out.ok, out.text

        async def search() -> None:
            out = await call("web_search", query="bench", count=3)
            assert out.ok, out.text

        loads = await timed(args.n, browse)
        shots = await timed(args.n, shot)
        searches = await timed(args.n, search)
        await web.aclose()

        cached = WebServices(web_config(site, brave))
        ccall = Tools(cached, store)
        await ccall("browse_url", url=url)
        hits = await timed(args.n, lambda: ccall("browse_url", url=url))
        await cached.aclose()

        async with httpx.AsyncClient(trust_env=False) as client:
            direct = await timed(
                args.n,
                lambda: client.get(
                    brave.origin + "/res/v1/web/search",
                    params={"q": "bench", "count": 3},
                    headers={"X-Subscription-Token": "test-brave-key"},
                ),
            )

        m = statistics.median
        b = {k: m(v) for k, v in base.items()}
        line(
            "browser start (cold)",
            starts,
            base["start"],
            "<= baseline + 300 ms",
            m(starts) <= b["start"] + 300,
        )
        line(
            "page load -> text",
            loads,
            base["load"],
            "<= baseline + 75 ms",
            m(loads) <= b["load"] + 75,
        )
        line(
            "screenshot (+thumb, blob)",
            shots,
            base["shot"],
            "<= baseline + 100 ms",
            m(shots) <= b["shot"] + 100,
        )
        line(
            "web_search via proxy",
            searches,
            direct,
            "<= 2x direct + 5 ms",
            m(searches) <= 2 * m(direct) + 5,
        )
        line("browse_url cache hit", hits, None, "<= 1 ms", m(hits) <= 1)
    finally:
        await store.close()
        site.stop()
        brave.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
