"""Fixtures for the web tools: local servers, and the tools wired as the runtime wires them.

The browser is the real system Chromium through Playwright; one browser serves a whole test
module (``web`` is module-scoped, on a module-scoped event loop) to keep the suite fast.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from think_kernel.store import Store
from think_kernel.tools.base import ToolContext, ToolOutput, ToolRegistry
from think_kernel.tools.services import ToolServices
from think_kernel.web import WEB_TOOLS, WebConfig, WebServices
from think_kernel.web.config import find_chromium

from ..layers import starts_processes
from .servers import Server, brave_routes, searxng_routes, site_routes

BRAVE_KEY = "test-brave-key"


def _recorder_route(req: Any) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "text/plain", "Access-Control-Allow-Origin": "*"}, b"SECRET"


@pytest.fixture(scope="module")
def site() -> Iterator[Server]:
    """The small test site (allowlisted explicitly by the tests that use it)."""
    s = Server(site_routes())
    yield s
    s.stop()


@pytest.fixture(scope="module")
def brave() -> Iterator[Server]:
    """A fake Brave Search API."""
    s = Server(brave_routes())
    yield s
    s.stop()


@pytest.fixture(scope="module")
def searxng() -> Iterator[Server]:
    """A fake SearXNG instance."""
    s = Server(searxng_routes())
    yield s
    s.stop()


@pytest.fixture(scope="module")
def recorder() -> Iterator[Server]:
    """Stands in for the user's own services: answers everything, records every hit."""
    s = Server({"*": _recorder_route})
    yield s
    s.stop()


def web_config(site: Server, brave: Server, **kw: Any) -> WebConfig:
    """Config that allowlists exactly the site and the fake Brave server."""
    kw.setdefault("allow", [site.authority, brave.authority])
    kw.setdefault("brave_api_key", BRAVE_KEY)
    kw.setdefault("brave_url", brave.origin + "/res/v1")
    kw.setdefault("searxng_url", "")
    kw.setdefault("chromium", find_chromium())
    kw.setdefault("cdp_url", "")
    kw.setdefault("action_timeout", 3.0)  # a missing element fails in 3 s, not 10
    return WebConfig(**kw)


class Tools:
    """Calls web tools the way the agent loop does (registry, context, services)."""

    def __init__(self, web: WebServices, store: Store | None, session_id: str = "s_web") -> None:
        self.web = web
        self.store = store
        self.session_id = session_id
        self.registry = ToolRegistry(WEB_TOOLS)

    def ctx(self, session_id: str | None = None) -> ToolContext:
        """A context for one call."""
        return ToolContext(
            session_id=session_id or self.session_id,
            workspace=None,  # type: ignore[arg-type]  (web tools touch no files)
            store=self.store,
            services=ToolServices(web=self.web),
        )

    async def __call__(self, name: str, session_id: str | None = None, **args: Any) -> ToolOutput:
        outcome = await self.registry.call(name, args, self.ctx(session_id))
        return outcome.output


@pytest.fixture(scope="module")
def store_dir() -> Iterator[Path]:
    """A folder for a module's store (outside any workspace)."""
    d = Path(tempfile.mkdtemp(prefix="think-web-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def web_store(store_dir: Path) -> AsyncIterator[Store]:
    """The store the screenshots go to."""
    store = await Store.open(store_dir / "think.db")
    yield store
    await store.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
@starts_processes
async def web(site: Server, brave: Server) -> AsyncIterator[WebServices]:
    """One WebServices (one browser) for the module."""
    services = WebServices(web_config(site, brave))
    yield services
    await services.aclose()


@pytest.fixture
def tools(web: WebServices, web_store: Store) -> Tools:
    """The web tools bound to the module's services and store."""
    return Tools(web, web_store)
