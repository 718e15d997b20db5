"""``GET /api/think/search?q=&limit=``: full-text search over every session of the workspace.

The server's store is its workspace's (one file per root folder), so a search sees only this
workspace's sessions, and only a person jupyter_server authenticates and authorises on
``think`` may search. A query that is not valid search syntax is searched as words and the
answer says so (``notice``); one with no word at all is a 400 that says why.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.store.search import MAX_LIMIT, SearchQueryError

from .base import ThinkHandler


class SearchHandler(ThinkHandler):
    """``GET ?q=&limit=``: messages of every session that match, best first."""

    @authorized
    async def get(self) -> None:
        """The hits (session, date, snippet with match spans, link) of a query."""
        query = self.get_query_argument("q", "").strip()
        if not query:
            raise web.HTTPError(400, "q is required: the words to search for")
        limit = self.int_arg("limit", 10, 1, MAX_LIMIT)
        assert limit is not None
        try:
            found = await self.svc.store.search_messages(query, limit)
        except SearchQueryError as e:
            raise web.HTTPError(400, str(e)) from None
        self.send(
            {"query": query, "notice": found.notice, "hits": [h.as_json() for h in found.hits]}
        )


def search_routes(base: str = "/api/think") -> list[tuple[str, type[ThinkHandler]]]:
    """URL patterns of the search handler."""
    return [(f"{base}/search", SearchHandler)]
