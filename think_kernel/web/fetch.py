"""The ``fetch`` tool: HTTP requests restricted by a URL-prefix allowlist.

Also served to sandboxed code through the loopback channel (``think.fetch``). The runtime gives
each session a :class:`FetchConfig` and a :class:`FetchLog` (``ctx.services.fetch``); every
request (time, duration, status, bytes) is appended to the log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from traitlets import Float, Int, List, Unicode
from traitlets.config import Configurable

from ..tools.base import ToolContext, ToolError, ToolOutput

if TYPE_CHECKING:  # imported where used: an import that a first %%think need not pay
    import httpx

#: Documentation sites an agent typically needs; extend with FetchConfig.allowed_urls (package
#: indexes are left out on purpose: installing goes through the user, not the agent's fetch).
DEFAULT_ALLOWED_URLS = [
    "https://docs.python.org/",
    "https://raw.githubusercontent.com/",
    "https://github.com/",
    "https://api.github.com/repos/",
    "https://docs.rs/",
    "https://developer.mozilla.org/",
    "https://numpy.org/doc/",
    "https://pandas.pydata.org/docs/",
    "https://matplotlib.org/stable/",
    "https://jupyter.org/",
    "https://jupyterlab.readthedocs.io/",
    "https://en.wikipedia.org/wiki/",
]


class FetchConfig(Configurable):
    """Settings of the fetch tool."""

    allowed_urls = List(
        Unicode(),
        DEFAULT_ALLOWED_URLS,
        config=True,
        help="URL prefixes fetch may request (scheme + host + path prefix, compared after "
        "normalising the URL). Default: common documentation and package sites "
        "(docs.python.org, github.com, numpy.org/doc, ...).",
    )
    allowed_methods = List(
        Unicode(),
        ["GET", "HEAD", "OPTIONS"],
        config=True,
        help="HTTP methods fetch may use. Default: GET, HEAD, OPTIONS.",
    )
    max_bytes = Int(
        1_000_000,
        config=True,
        help="Response bodies longer than this are truncated, in bytes. Default: 1000000.",
    )
    timeout = Float(30.0, config=True, help="Request timeout, in seconds. Default: 30.")
    max_redirects = Int(
        5,
        config=True,
        help="Redirects followed (each target must also be allowed), a count. Default: 5.",
    )


@dataclass
class FetchRecord:
    """One line of the request log."""

    time: float
    method: str
    url: str
    status: int | None
    bytes: int
    duration_ms: float
    error: str = ""


@dataclass
class FetchLog:
    """In-memory request log; the kernel may persist it (records are plain dataclasses)."""

    records: list[FetchRecord] = field(default_factory=list)

    def add(self, rec: FetchRecord) -> None:
        """Append one record."""
        self.records.append(rec)


def _normalise(url: str) -> httpx.URL:
    import httpx

    try:
        u = httpx.URL(url)
    except Exception as e:
        raise ToolError(f"invalid URL {url!r}: {e}", "URL_NOT_ALLOWED") from None
    if u.scheme not in ("http", "https") or not u.host:
        raise ToolError(f"only http(s) URLs are allowed, got {url!r}", "URL_NOT_ALLOWED")
    return u


def is_allowed(url: str, prefixes: list[str]) -> bool:
    """True when ``url`` starts with one of ``prefixes`` (host compared case-insensitively,
    userinfo refused, so ``https://docs.python.org@evil.com/`` does not pass)."""
    import httpx

    u = _normalise(url)
    if u.userinfo:
        return False
    canon = str(u.copy_with(fragment=None))
    for p in prefixes:
        pu = httpx.URL(p)
        pcanon = str(pu)
        if canon.startswith(pcanon) and u.host == pu.host and u.port == pu.port:
            return True
    return False


def _settings(ctx: ToolContext) -> tuple[FetchConfig, FetchLog | None]:
    # The runtime builds them once per session (ctx.services.fetch).
    fetch = ctx.services.fetch
    return (fetch.config, fetch.log) if fetch is not None else (FetchConfig(), None)


async def fetch(
    ctx: ToolContext,
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: str | None = None,
) -> ToolOutput:
    """Fetch a URL (only allowlisted URL prefixes; GET/HEAD/OPTIONS unless configured).

    Args:
        url: the http(s) URL to request
        method: HTTP method
        headers: extra request headers
        body: request body (for methods that allow one)
    """
    import httpx

    cfg, log = _settings(ctx)
    method = method.upper()
    if method not in [m.upper() for m in cfg.allowed_methods]:
        raise ToolError(
            f"method {method} is not allowed (allowed: {', '.join(cfg.allowed_methods)})",
            "METHOD_NOT_ALLOWED",
        )
    if not is_allowed(url, cfg.allowed_urls):
        raise ToolError(f"{url} is not in the fetch allowlist", "URL_NOT_ALLOWED")
    start, t0 = time.time(), time.perf_counter()
    status: int | None = None
    data = b""
    total = 0
    try:
        async with httpx.AsyncClient(timeout=cfg.timeout, follow_redirects=False) as client:
            target = url
            for _ in range(cfg.max_redirects + 1):
                async with client.stream(method, target, headers=headers, content=body) as resp:
                    if resp.is_redirect and "location" in resp.headers:
                        nxt = str(resp.url.join(resp.headers["location"]))
                        if not is_allowed(nxt, cfg.allowed_urls):
                            raise ToolError(
                                f"redirect to {nxt} is not in the fetch allowlist",
                                "URL_NOT_ALLOWED",
                            )
                        target = nxt
                        continue
                    status = resp.status_code
                    chunks: list[bytes] = []
                    async for chunk in resp.aiter_bytes():
                        if total < cfg.max_bytes:
                            chunks.append(chunk)
                        total += len(chunk)  # keep counting: the log reports the real size
                    data = b"".join(chunks)[: cfg.max_bytes]
                    ctype = resp.headers.get("content-type", "")
                    encoding = resp.encoding or "utf-8"
                    break
            else:
                raise ToolError(f"too many redirects from {url}", "FETCH_FAILED")
    except ToolError as e:
        _log(log, start, t0, method, url, status, total, str(e))
        raise
    except httpx.HTTPError as e:
        _log(log, start, t0, method, url, status, total, str(e))
        raise ToolError(f"fetch {url} failed: {type(e).__name__}: {e}", "FETCH_FAILED") from None
    _log(log, start, t0, method, url, status, total, "")
    truncated = total > cfg.max_bytes
    text = data.decode(encoding, errors="replace")
    if truncated:
        text += f"\n[body truncated: {total} bytes, first {cfg.max_bytes} kept]"
    head = f"HTTP {status} {ctype}".strip()
    return ToolOutput(
        text=f"{head}\n\n{text}",
        summary=f"{method} {url} -> {status}, {total} bytes"
        + (" (truncated)" if truncated else ""),
        ok=status is not None and status < 400,
        error="" if status is not None and status < 400 else f"HTTP {status}",
    )


def _log(log: FetchLog | None, start: float, t0: float, method: str, url: str,
         status: int | None, size: int, error: str) -> None:  # fmt: skip
    if log is not None:
        ms = (time.perf_counter() - t0) * 1000
        log.add(FetchRecord(start, method, url, status, size, ms, error))


FETCH_TOOLS = [fetch]
