"""The browser tools on the real system Chromium, against the local test site.

search -> browse -> screenshot -> interact (fill a form, read the result) -> scrape a table,
plus the cache, sessions, limits, lifecycle (lazy start, idle close, fresh profile) and errors.
One browser serves the module (``web``); tests that need their own lifecycle start their own.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import pytest

from think_kernel.web import WebServices
from think_kernel.web.config import find_chromium
from think_kernel.web.page import png_size
from think_kernel.web.vision import Image

from .conftest import Tools, web_config
from .servers import Server

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]


async def until(cond, timeout: float = 20.0, what: str = "") -> None:
    """Wait for a condition, polling (no fixed sleeps)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await asyncio.sleep(0.05)


def _browsers() -> list[psutil.Process]:
    """Chromium browser processes (not their helpers) started by anyone."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        name = os.path.basename(cmd[0]) if cmd else ""
        if "chrom" in name and "crashpad" not in name and "--type=" not in " ".join(cmd):
            out.append(p)
    return out


def _is_dir(path: str) -> bool:
    return os.path.isdir(path)


def _profile_of(proc: psutil.Process) -> str:
    for a in proc.cmdline():
        if a.startswith("--user-data-dir="):
            return a.split("=", 1)[1]
    return ""


async def test_search_browse_screenshot_interact_scrape(tools: Tools, site: Server) -> None:
    found = await tools("web_search", query="test site", count=3)
    assert found.ok and "1. Result 1 for test site" in found.text

    page = await tools("browse_url", url=site.origin + "/")
    assert page.ok, page.text
    assert page.text.startswith(f"# Think test site\nURL: {site.origin}/\nHTTP status: 200")
    assert "The magic word is xylophone." in page.text
    assert f"[1] Form -> {site.origin}/form" in page.text
    assert "Form Prices" not in page.text  # <main> was read, not the navigation
    assert page.summary.startswith(f"browse: {site.origin}/ -> 200")

    shot = await tools("screenshot")
    assert shot.ok, shot.text
    bundle = shot.display[0]
    png = base64.b64decode(bundle["image/png"])
    assert png_size(png) == (1280, 800)
    meta = bundle["think"]
    assert meta["kind"] == "screenshot" and meta["url"] == site.origin + "/"
    assert tools.store is not None
    assert tools.store.get_blob_bytes(meta["blob"]) == png
    thumb = tools.store.get_blob_bytes(meta["thumbnail"])
    assert png_size(thumb) == (320, 200) and len(thumb) < len(png)
    assert f"Stored as blob {meta['blob']}" in shot.text
    assert shot.summary == f"screenshot: {site.origin}/ thumbnail={meta['thumbnail']}"

    element = await tools("screenshot", selector="#banner")
    assert element.ok and "element #banner" in element.text
    w, h = png_size(base64.b64decode(element.display[0]["image/png"]))
    assert 1200 < w <= 1280 and 40 < h < 80  # the banner, not the page

    form = await tools("browse_url", url=site.origin + "/form")
    assert form.ok and "Send order" in form.text
    typed = await tools("interact_with_page", action="type", text="Your name", value="Ada")
    assert typed.ok and "typed 3 characters" in typed.text
    picked = await tools("interact_with_page", action="select", selector="#fruit", value="Cherry")
    assert picked.ok, picked.text
    sent = await tools("interact_with_page", action="click", text="Send order")
    assert sent.ok, sent.text
    assert "Thanks Ada, one cherry is on its way" in sent.text
    assert f"URL: {site.origin}/result?name=Ada&fruit=cherry" in sent.text

    table = await tools(
        "scrape_page", url=site.origin + "/table", selectors={"prices": "table#prices", "h": "h1"}
    )
    assert table.ok, table.text
    data = _json_after_colon(table.text)
    assert data["prices"] == [
        [
            {"Item": "Apples", "Price": "1.20", "Unit": "kg"},
            {"Item": "Pears", "Price": "2.50", "Unit": "kg"},
            {"Item": "Cherries", "Price": "7.00", "Unit": "box"},
        ]
    ]
    assert data["h"] == ["Prices"]
    items = await tools(
        "scrape_page", selectors={"name": ".name", "link": "a.more@href"}, item=".product"
    )
    assert _json_after_colon(items.text) == [
        {"name": n, "link": f"{site.origin}/item/{n.lower()}"}
        for n in ("Apples", "Pears", "Cherries")
    ]


def _json_after_colon(text: str):
    import json

    return json.loads(text.split(":\n", 1)[1])


async def test_page_cache_hit_is_marked_and_the_page_follows(tools: Tools, site: Server) -> None:
    sid = "s_cache"
    first = await tools("browse_url", session_id=sid, url=site.origin + "/table")
    assert first.ok and "(cache hit)" not in first.summary
    await tools("browse_url", session_id=sid, url=site.origin + "/form")
    hits_before = len(site.hits)
    again = await tools("browse_url", session_id=sid, url=site.origin + "/table")
    assert again.ok and "(cache hit)" in again.summary and "(cached result from" in again.text
    assert len(site.hits) == hits_before  # nothing was loaded
    # The cached read stood in for a page load: the next page action happens on that page.
    shot = await tools("screenshot", session_id=sid)
    assert shot.ok and shot.display[0]["think"]["url"] == site.origin + "/table"
    # An interaction may change what a page says: cached reads of the session are dropped.
    await tools("interact_with_page", session_id=sid, action="scroll", value="down")
    fresh = await tools("browse_url", session_id=sid, url=site.origin + "/table")
    assert "(cache hit)" not in fresh.summary
    # another session shares no page results
    other = await tools("browse_url", session_id="s_cache_other", url=site.origin + "/table")
    assert "(cache hit)" not in other.summary


async def test_sessions_have_their_own_pages_and_cookies(tools: Tools, site: Server) -> None:
    a = await tools("browse_url", session_id="s_a", url=site.origin + "/cookie?set=alice")
    assert a.ok
    a2 = await tools("browse_url", session_id="s_a", url=site.origin + "/cookie")
    assert "cookie: who=alice" in a2.text
    b = await tools("browse_url", session_id="s_b", url=site.origin + "/cookie")
    assert b.text.endswith("\n\ncookie:") and "alice" not in b.text
    nothing = await tools("screenshot", session_id="s_never_browsed")
    assert not nothing.ok and "no page is open" in nothing.text


async def test_a_new_window_becomes_the_page(tools: Tools, site: Server) -> None:
    await tools("browse_url", session_id="s_popup", url=site.origin + "/")
    out = await tools("interact_with_page", session_id="s_popup", action="click", selector="#popup")
    assert out.ok and f"URL: {site.origin}/table" in out.text and "Cherries" in out.text
    shot = await tools("screenshot", session_id="s_popup")
    assert shot.display[0]["think"]["url"] == site.origin + "/table"


async def test_errors_are_short_and_actionable(tools: Tools, site: Server) -> None:
    await tools("browse_url", session_id="s_err", url=site.origin + "/form")
    bad_css = await tools("scrape_page", session_id="s_err", selectors={"x": "div[[["})
    assert not bad_css.ok and "invalid CSS selector" in bad_css.text
    missing = await tools(
        "interact_with_page", session_id="s_err", action="click", selector="#nope"
    )
    assert not missing.ok and "Timeout" in missing.text and "\n" not in missing.text.strip()
    no_value = await tools(
        "interact_with_page", session_id="s_err", action="type", selector="#name"
    )
    assert not no_value.ok and "needs a value" in no_value.text
    for url in ("file:///etc/passwd", "javascript:alert(1)", "chrome://version", "ftp://x/"):
        out = await tools("browse_url", session_id="s_err", url=url)
        assert not out.ok and "only http(s) URLs" in out.text
        nav = await tools("interact_with_page", session_id="s_err", action="navigate", value=url)
        assert not nav.ok and "only http(s) URLs" in nav.text
    bad_action = await tools("interact_with_page", session_id="s_err", action="explode")
    assert not bad_action.ok and "invalid arguments" in bad_action.text


async def test_downloads_are_off_and_big_pages_are_cut(tools: Tools, site: Server) -> None:
    dl = await tools("browse_url", session_id="s_dl", url=site.origin + "/download")
    assert not dl.ok and "downloads are off" in dl.text
    big = await tools("browse_url", session_id="s_dl", url=site.origin + "/big")
    assert big.ok and "[text cut:" in big.text and "first 40000 kept" in big.text
    assert "word19999" not in big.text


class FakeVision:
    """Records what it was asked (the model-backed one is tested through the kernel)."""

    model_name = "fake-vision"

    def __init__(self) -> None:
        self.asked: list[tuple[str, Sequence[Image]]] = []

    async def ask(
        self, question: str, images: Sequence[Image], *, session_id: str = "", message_id: str = ""
    ) -> str:
        self.asked.append((question, images))
        return "The banner is red."


async def test_a_question_goes_to_the_vision_role_with_the_image(
    tools: Tools, web: WebServices, site: Server
) -> None:
    vision = FakeVision()
    web.vision = vision
    try:
        out = await tools("screenshot", session_id="s_v", url=site.origin + "/", question="Colour?")
    finally:
        web.vision = None
    assert out.ok and "Vision model (fake-vision) on 'Colour?':\nThe banner is red." in out.text
    ((question, images),) = vision.asked
    assert question == "Colour?" and images[0].mime == "image/png"
    assert images[0].data == base64.b64decode(out.display[0]["image/png"])
    assert "asked vision" in out.summary


async def test_status_lines(web: WebServices, tools: Tools, site: Server) -> None:
    await tools("browse_url", session_id="s_status", url=site.origin + "/")
    rows = dict(web.status_rows())
    assert "running" in rows["browser"] and "page(s)" in rows["browser"]
    assert rows["web search"].startswith("Brave")
    assert site.authority in rows["browser may also reach"]


async def test_lazy_start_fresh_profile_idle_close_and_timeouts(
    site: Server, brave: Server
) -> None:
    web = WebServices(web_config(site, brave, idle_timeout=1.0, navigation_timeout=1.5))
    call = Tools(web, None, session_id="s_life")
    before = {p.pid for p in _browsers()}
    try:
        assert not web.browser.running and web.proxy is None  # nothing starts by itself
        out = await call("browse_url", url=site.origin + "/")
        assert out.ok
        mine = [p for p in _browsers() if p.pid not in before]
        assert len(mine) == 1
        cmd = mine[0].cmdline()
        profile = _profile_of(mine[0])
        assert profile.startswith(tempfile.gettempdir()) and _is_dir(profile)
        assert web.proxy is not None and f"--proxy-server={web.proxy.url}" in cmd
        assert "--proxy-bypass-list=<-loopback>" in cmd  # loopback goes through the proxy too
        assert "--disable-quic" in cmd
        assert "--force-webrtc-ip-handling-policy=disable_non_proxied_udp" in cmd
        if os.geteuid() == 0:
            assert "--no-sandbox" in cmd
        # idle: the page closes, then the browser; its temporary profile is deleted
        await until(lambda: not web.browser.running, 20, "the idle browser to close")
        await until(lambda: not os.path.exists(profile), 10, "the profile to be removed")
        assert web.browser.pending["s_life"] == site.origin + "/"
        # the next call starts a new browser with a new profile, on the page it had
        shot = await call("screenshot")
        assert shot.ok and shot.display[0]["think"]["url"] == site.origin + "/"
        assert web.browser.launches == 2
        new = [p for p in _browsers() if p.pid not in before]
        assert len(new) == 1 and _profile_of(new[0]) != profile
        slow = await call("browse_url", url=site.origin + "/slow?s=4")
        assert not slow.ok and "Timeout 1500ms exceeded" in slow.text
    finally:
        await web.aclose()
    await until(lambda: not [p for p in _browsers() if p.pid not in before], 10, "no browser")


async def test_no_browser_is_a_clear_error(site: Server, brave: Server, tmp_path: Path) -> None:
    for chromium, expect in (("", "THINK_CHROMIUM"), (str(tmp_path / "nochrome"), "did not start")):
        web = WebServices(web_config(site, brave, chromium=chromium))
        try:
            out = await Tools(web, None)("browse_url", url=site.origin + "/")
            assert not out.ok and expect in out.text
            if not chromium:
                assert "unavailable" in dict(web.status_rows())["browser"]
        finally:
            await web.aclose()


@pytest.fixture
def cdp_endpoint(tmp_path: Path) -> Iterator[str]:
    """A Chromium started by someone else, reachable over CDP."""
    proc = subprocess.Popen(
        [find_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
         "--remote-debugging-port=0", f"--user-data-dir={tmp_path / 'profile'}", "--no-first-run",
         "about:blank"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        endpoint = ""
        for line in proc.stderr:
            if "DevTools listening on" in line:
                endpoint = line.split(" on ", 1)[1].strip()
                break
        assert endpoint.startswith("ws://")
        yield endpoint
    finally:
        proc.kill()
        proc.wait(10)


async def test_a_browser_over_cdp_goes_through_the_proxy_too(
    site: Server, brave: Server, recorder: Server, cdp_endpoint: str
) -> None:
    web = WebServices(web_config(site, brave, cdp_url=cdp_endpoint))
    try:
        call = Tools(web, None)
        ok = await call("browse_url", url=site.origin + "/")
        assert ok.ok and "xylophone" in ok.text
        bad = await call("browse_url", url=recorder.origin + "/api/contents")
        assert not bad.ok and "Blocked by the network guard" in bad.text
        assert recorder.hits == []
    finally:
        await web.aclose()
