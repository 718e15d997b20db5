"""What the browser tools do to a page: load, read, act, scrape, capture.

Small async functions over a Playwright ``Page`` plus the scripts they run in it; the result
shapes (:class:`PageText`) and their formatting for the model are plain data and functions.
"""

from __future__ import annotations

import asyncio
import base64
import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from ..waits import wait_for

Action = Literal["click", "type", "select", "scroll", "navigate", "press", "hover", "wait"]
MAX_LINKS = 40
MAX_ITEMS = 500
_ATTR = re.compile(r"^(.*[^\s])\s*@([A-Za-z_:][-A-Za-z0-9_:.]*)$")


class PageError(Exception):
    """A page action that failed in a way the model can fix (bad selector, no such element)."""


def check_url(url: str) -> str:
    """The URL if it is http(s) with a host; PageError (the model's mistake) otherwise."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PageError(f"only http(s) URLs can be opened, not {url!r}")
    return url


_READ_JS = """
(args) => {
  const doc = document.documentElement;
  const htmlChars = doc ? doc.outerHTML.length : 0;
  const body = document.body;
  let root = body || doc;
  if (body) {
    const whole = (body.innerText || '').length;
    let best = 0;
    for (const c of document.querySelectorAll('main, article, [role="main"]')) {
      const n = (c.innerText || '').length;
      if (n > 0 && n >= whole * 0.3 && n > best) { root = c; best = n; }
    }
  }
  let text = (root && (root.innerText || root.textContent)) || '';
  text = text.replace(/[ \\t]+\\n/g, '\\n').replace(/\\n{3,}/g, '\\n\\n').trim();
  const links = [];
  const seen = new Set();
  for (const a of document.querySelectorAll('a[href]')) {
    const href = a.href;
    if (!/^https?:/.test(href) || seen.has(href)) continue;
    const label = (a.innerText || a.getAttribute('aria-label') || '').replace(/\\s+/g, ' ').trim();
    if (!label) continue;
    seen.add(href);
    links.push([label.slice(0, 80), href]);
    if (links.length >= args.maxLinks) break;
  }
  return {url: location.href, title: document.title || '', text: text.slice(0, args.maxText),
          textChars: text.length, htmlChars, links};
}
"""

_SCRAPE_JS = """
(args) => {
  const value = (el, attr) => {
    if (attr) {
      if ((attr === 'href' || attr === 'src') && el[attr]) return String(el[attr]);
      const v = el.getAttribute(attr);
      return v === null ? null : v;
    }
    if (el.tagName === 'TABLE') return table(el);
    if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT') {
      return el.value;
    }
    return (el.innerText || el.textContent || '').replace(/\\s+/g, ' ').trim();
  };
  const cells = tr => [...tr.children].filter(c => c.tagName === 'TD' || c.tagName === 'TH')
    .map(c => (c.innerText || c.textContent || '').replace(/\\s+/g, ' ').trim());
  const table = t => {
    const rows = [...t.querySelectorAll('tr')].filter(r => r.closest('table') === t);
    let header = null;
    const head = t.querySelector('thead tr');
    if (head && head.closest('table') === t) header = cells(head);
    else if (rows.length && [...rows[0].children].every(c => c.tagName === 'TH')) {
      header = cells(rows[0]);
    }
    const body = rows.filter(r => !(r.parentElement && r.parentElement.tagName === 'THEAD'))
      .filter((r, i) => !(header && i === 0 && !head));
    const out = body.slice(0, args.limit).map(cells).filter(r => r.length);
    if (!header) return out;
    const named = r =>
      Object.fromEntries(header.map((h, i) => [h || `column ${i + 1}`, r[i] ?? '']));
    return out.map(named);
  };
  const all = (root, css) => {
    try { return [...root.querySelectorAll(css)]; }
    catch (e) { throw new Error(`invalid CSS selector ${JSON.stringify(css)}`); }
  };
  if (args.item) {
    return all(document, args.item).slice(0, args.limit).map(it => {
      const rec = {};
      for (const [name, css, attr] of args.fields) {
        const el = css ? all(it, css)[0] : it;
        rec[name] = el ? value(el, attr) : null;
      }
      return rec;
    });
  }
  const out = {};
  for (const [name, css, attr] of args.fields) {
    out[name] = all(document, css).slice(0, args.limit).map(el => value(el, attr));
  }
  return out;
}
"""


@dataclass
class PageText:
    """The readable content of a page."""

    url: str
    title: str
    text: str
    text_chars: int
    html_chars: int
    links: list[tuple[str, str]] = field(default_factory=list)
    status: int | None = None


def format_page(p: PageText, max_text: int, cached_age: float | None = None) -> str:
    """The text the model reads for a page: title, URL, status, text, links."""
    head = [f"# {p.title or '(untitled)'}", f"URL: {p.url}"]
    if p.status is not None:
        head.append(f"HTTP status: {p.status}")
    if cached_age is not None:
        head.append(f"(cached result from {cached_age:.0f} s ago)")
    body = p.text
    notes = []
    if p.text_chars > max_text:
        notes.append(f"[text cut: {p.text_chars} characters, first {max_text} kept]")
    parts = ["\n".join(head), body or "(no readable text)", *notes]
    if p.links:
        links = "\n".join(f"[{i}] {label} -> {href}" for i, (label, href) in enumerate(p.links, 1))
        parts.append(f"Links:\n{links}")
    return "\n\n".join(parts)


def split_field(spec: str) -> tuple[str, str | None]:
    """``"a.more@href"`` -> ("a.more", "href"); no ``@attr`` suffix -> (css, None)."""
    m = _ATTR.match(spec.strip())
    if m and "[" not in m.group(2):
        return m.group(1), m.group(2)
    return spec.strip(), None


async def read(page: Any, max_text: int, max_html: int) -> PageText:
    """Read title, URL, readable text (of main/article when there is one) and the links."""
    data = await page.evaluate(_READ_JS, {"maxText": max_text, "maxLinks": MAX_LINKS})
    text = str(data.get("text") or "")
    html_chars = int(data.get("htmlChars") or 0)
    if html_chars > max_html:
        # A huge page: keep a proportional share of the text, and say so.
        text = text[: max(1000, int(len(text) * max_html / html_chars))]
        text += f"\n[page cut: its HTML is {html_chars} characters, over the {max_html} cap]"
    return PageText(
        url=str(data.get("url") or page.url),
        title=str(data.get("title") or ""),
        text=text,
        text_chars=int(data.get("textChars") or 0),
        html_chars=html_chars,
        links=[(str(a), str(b)) for a, b in data.get("links") or []],
    )


class NetworkWatch:
    """Counts the requests in flight of a browser context (every page of it, popups too), so
    "settled" needs no fixed idle window.

    Playwright's ``networkidle`` waits for 500 ms without traffic, on every page; here a page
    whose requests are done is settled after a short quiet spell, and one still fetching (a
    script rendering its content) is waited for, up to a bound.
    """

    def __init__(self, context: Any) -> None:
        self.inflight = 0
        self._changed = asyncio.Event()
        context.on("request", self._started)
        context.on("requestfinished", self._ended)
        context.on("requestfailed", self._ended)

    def _started(self, _request: Any) -> None:
        self.inflight += 1
        self._changed.set()

    def _ended(self, _request: Any) -> None:
        self.inflight = max(0, self.inflight - 1)
        self._changed.set()

    async def quiet(self, timeout_ms: float, window_ms: float = 50) -> bool:
        """Wait until no request was in flight for ``window_ms``; False at the timeout."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout_ms / 1000
        while True:
            left = end - loop.time()
            if left <= 0:
                return False
            self._changed.clear()
            if self.inflight == 0:
                try:
                    await wait_for(self._changed.wait(), min(left, window_ms / 1000))
                except TimeoutError:
                    return True  # a quiet window passed
                continue
            try:
                await wait_for(self._changed.wait(), left)
            except TimeoutError:
                return False


async def settle(page: Any, watch: NetworkWatch | None, timeout_ms: float = 3000) -> None:
    """Wait (briefly) for the page to load and its requests to finish; a busy page is read
    as it is when the time is up."""
    try:
        await page.wait_for_load_state("load", timeout=timeout_ms)
    except Exception as e:
        if type(e).__name__ != "TimeoutError":
            raise
        return
    if watch is not None:
        await watch.quiet(timeout_ms)


def locate(page: Any, selector: str | None, text: str | None) -> Any:
    """A locator by CSS selector, else by visible text, label, placeholder or button name."""
    if selector:
        return page.locator(selector).first
    if text:
        by_text = (
            page.get_by_label(text)
            .or_(page.get_by_placeholder(text))
            .or_(page.get_by_role("button", name=text))
            .or_(page.get_by_role("link", name=text))
            .or_(page.get_by_text(text))
        )
        return by_text.first
    raise PageError("give a CSS selector or the element's text")


async def act(
    page: Any,
    watch: NetworkWatch | None,
    action: Action,
    selector: str | None,
    text: str | None,
    value: str | None,
    timeout_ms: float,
) -> str:
    """Do one action; return what was done, e.g. ``clicked button#go``."""
    what = selector or (f"text {text!r}" if text else "the page")
    if action == "navigate":
        url = check_url(value or "")
        await page.goto(url)
        return f"navigated to {url}"
    if action == "scroll":
        if selector or text:
            await locate(page, selector, text).scroll_into_view_if_needed()
            return f"scrolled to {what}"
        amount = {"up": -1.0, "down": 1.0, "top": -1e6, "bottom": 1e6}.get(
            (value or "down").strip().lower()
        )
        if amount is None:
            try:
                pixels = float(value or 0)
            except ValueError:
                raise PageError("scroll value is up, down, top, bottom or pixels") from None
        else:
            pixels = amount * (800 if abs(amount) == 1.0 else 1)
        await page.mouse.wheel(0, pixels)
        return f"scrolled {value or 'down'}"
    if action == "press":
        key = value or "Enter"
        if selector or text:
            await locate(page, selector, text).press(key)
        else:
            await page.keyboard.press(key)
        return f"pressed {key}"
    if action == "wait":
        if selector or text:
            await locate(page, selector, text).wait_for(timeout=timeout_ms)
            return f"{what} appeared"
        await settle(page, watch, timeout_ms)
        return "waited for the page to settle"
    target = locate(page, selector, text)
    if action == "click":
        await target.click()
        return f"clicked {what}"
    if action == "hover":
        await target.hover()
        return f"hovered {what}"
    if action == "type":
        if value is None:
            raise PageError("type needs a value (the text to enter)")
        await target.fill(value)
        return f"typed {len(value)} characters into {what}"
    if action == "select":
        if value is None:
            raise PageError("select needs a value (the option's value or label)")
        try:
            await target.select_option(value, timeout=timeout_ms)
        except Exception as e:
            if type(e).__name__ != "TimeoutError":
                raise
            await target.select_option(label=value)
        return f"selected {value!r} in {what}"
    raise PageError(f"unknown action {action!r}")


async def scrape(
    page: Any, selectors: dict[str, str], item: str | None, limit: int = MAX_ITEMS
) -> Any:
    """Structured data: each field's values (tables as rows), or one record per ``item``."""
    if not selectors and not item:
        raise PageError("give selectors: {field: css}, e.g. {'rows': 'table#prices'}")
    fields = [[name, *split_field(css)] for name, css in selectors.items()]
    if item and not fields:
        fields = [["text", "", None]]
    try:
        return await page.evaluate(_SCRAPE_JS, {"fields": fields, "item": item, "limit": limit})
    except Exception as e:
        msg = str(e)
        if "invalid CSS selector" in msg:
            found = re.search(r"invalid CSS selector (\".*?\")", msg)
            raise PageError(f"invalid CSS selector {found.group(1) if found else ''}") from None
        raise


@dataclass
class Capture:
    """A screenshot and its thumbnail."""

    png: bytes
    thumbnail: bytes
    width: int
    height: int


async def capture(
    page: Any, selector: str | None, text: str | None, full_page: bool, max_height: int
) -> Capture:
    """PNG of the viewport, the whole page (cut at ``max_height``) or one element."""
    clip: dict[str, float] | None = None
    if selector or text:
        target = locate(page, selector, text)
        await target.scroll_into_view_if_needed()
        box = await target.bounding_box()
        if box is None:
            raise PageError("the element is not visible, so it cannot be captured")
        png = await target.screenshot(type="png")
        scroll = await page.evaluate("[window.scrollX, window.scrollY]")
        clip = {"x": box["x"] + scroll[0], "y": box["y"] + scroll[1]}
        clip.update(width=box["width"], height=box["height"])
    elif full_page:
        size = await page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        vp = page.viewport_size or {"width": 1280, "height": 800}
        clip = {"x": 0, "y": 0, "width": vp["width"], "height": min(size[1], max_height)}
        png = await page.screenshot(type="png", clip=clip, full_page=True)
    else:
        png = await page.screenshot(type="png")
    width, height = png_size(png)
    thumb = await thumbnail(page, clip, png)
    return Capture(png, thumb, width, height)


async def thumbnail(
    page: Any, clip: dict[str, float] | None, png: bytes, width: int = 320
) -> bytes:
    """A small PNG of the same area, scaled by Chromium itself (no image library needed)."""
    try:
        cdp = await page.context.new_cdp_session(page)
    except Exception:  # not Chromium: the full image stands in
        return png
    try:
        if clip is None:
            vp = await page.evaluate(
                "[window.scrollX, window.scrollY, window.innerWidth, window.innerHeight]"
            )
            clip = {"x": vp[0], "y": vp[1], "width": vp[2], "height": vp[3]}
        scale = min(1.0, width / max(1.0, clip["width"]))
        shot = await cdp.send(
            "Page.captureScreenshot",
            {"format": "png", "clip": {**clip, "scale": scale}, "captureBeyondViewport": True},
        )
        return base64.b64decode(shot["data"])
    finally:
        await cdp.detach()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        return 0, 0
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
