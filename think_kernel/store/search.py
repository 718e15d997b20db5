"""Full-text search over every message of the workspace's sessions (SQLite FTS5).

    found = await store.search_messages('parquet OR "feather format"', limit=10)
    for hit in found.hits:
        hit.session_id, hit.title, hit.created_at, hit.snippet, hit.spans
    found.notice    # set when the query was not valid search syntax and was read as words

Hits are ranked by BM25 among the ``RANK_WINDOW`` most recently stored matches: ranking
scores every match, and a word found in nearly every message would cost a score per message
(at 100,000 messages, ten times the time of the whole search otherwise).

The index (migration ``m017_search``) is kept by triggers on ``messages``: every insert, edit
and delete of a message, by any process, changes it in the same transaction; deleting a
session deletes its messages and so its entries. Subagents' messages (their facet) and the
messages a compaction summarised are rows like any other, so they are found too. The store is
one file per workspace, so a search never sees another workspace's sessions.

A query is FTS5 syntax (words, ``"phrases"``, ``OR``, ``NOT``, ``prefix*``). What people
type is often not valid syntax (``c++``, ``don't``, ``hello-world``): such a query is searched
again as plain words, each quoted, and the result says so; a query with no word at all is a
:class:`SearchQueryError` whose message says what was wrong.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from .part import StorePart

#: Hits a search returns at most.
MAX_LIMIT = 50
#: Tokens of context a snippet shows around the matches.
SNIPPET_TOKENS = 16
#: Characters of a query (a longer one is refused: it cannot be what a person meant).
MAX_QUERY_CHARS = 1000
#: Matches ranked at most, the newest: ranking scores every match, and a word found in most
#: messages would cost a score per message; past this many the newest ones are ranked.
RANK_WINDOW = 1000
_OPEN, _CLOSE = "\x02", "\x03"  # match markers inside snippets; never in stored text shown
_WORD = re.compile(r"\w+", re.UNICODE)

_SEARCH = f"""
SELECT f.rid, f.snip, m.id AS message_id, m.session_id, m.seq, m.role, m.name, m.facet,
       m.created_at, m.off_branch, s.title, s.kind, s.path
FROM (SELECT rowid AS rid, rank,
             snippet(search_fts, 0, char(2), char(3), '…', {SNIPPET_TOKENS}) AS snip
      FROM search_fts WHERE search_fts MATCH ?1 AND rowid >= COALESCE(
          (SELECT rowid FROM search_fts WHERE search_fts MATCH ?1
           ORDER BY rowid DESC LIMIT 1 OFFSET {RANK_WINDOW - 1}), 0)
      ORDER BY rank LIMIT ?2) f
JOIN search_map k ON k.rid = f.rid
JOIN messages m ON m.id = k.message_id
LEFT JOIN sessions s ON s.id = m.session_id
ORDER BY f.rank
"""


class SearchQueryError(ValueError):
    """A query that cannot be searched; the message says why, for a person or the model."""


@dataclass(frozen=True)
class Hit:
    """One message that matched: where it is, and a snippet with the matches marked."""

    session_id: str
    title: str
    kind: str
    message_id: str
    seq: int
    role: str
    created_at: float
    snippet: str
    #: ``[start, end)`` character offsets of the matched words in :attr:`snippet`.
    spans: list[tuple[int, int]]
    facet: str | None = None
    tool: str | None = None
    #: The message is on a branch of the conversation left by a rewind or an edit.
    off_branch: bool = False

    @property
    def link(self) -> str:
        """The REST page of the session's history that ends with this message."""
        page = f"/api/think/sessions/{self.session_id}/messages?before={self.seq + 1}&limit=20"
        return page + (f"&facet={self.facet}" if self.facet else "")

    def marked(self, before: str = "**", after: str = "**") -> str:
        """The snippet with each match between ``before`` and ``after``."""
        out, last = [], 0
        for start, end in self.spans:
            out += [self.snippet[last:start], before, self.snippet[start:end], after]
            last = end
        out.append(self.snippet[last:])
        return "".join(out)

    def as_json(self) -> dict[str, Any]:
        """The REST shape of a hit."""
        return {
            "session_id": self.session_id,
            "title": self.title,
            "kind": self.kind,
            "message_id": self.message_id,
            "seq": self.seq,
            "role": self.role,
            "created_at": self.created_at,
            "snippet": self.snippet,
            "spans": [list(s) for s in self.spans],
            "facet": self.facet,
            "tool": self.tool,
            "off_branch": self.off_branch,
            "link": self.link,
        }


@dataclass(frozen=True)
class Found:
    """The hits of a search, best first, and what the query was read as."""

    query: str
    hits: list[Hit] = field(default_factory=list)
    #: Set when the query was not valid FTS5 syntax and was searched as plain words.
    notice: str = ""


def unmark(snip: str) -> tuple[str, list[tuple[int, int]]]:
    """A snippet's text without its match markers, and the spans they marked."""
    text: list[str] = []
    spans: list[tuple[int, int]] = []
    pos, start = 0, -1
    for ch in snip:
        if ch == _OPEN:
            start = pos
        elif ch == _CLOSE:
            if start >= 0:
                spans.append((start, pos))
            start = -1
        else:
            text.append(ch)
            pos += 1
    return "".join(text), spans


def as_words(query: str) -> str:
    """The query as plain words, each a quoted FTS5 phrase ("" when it has none)."""
    return " ".join(f'"{w}"' for w in _WORD.findall(query))


def _is_query_error(e: sqlite3.OperationalError) -> bool:
    msg = str(e)
    return msg.startswith(("fts5:", "no such column", "unterminated string", "unknown special"))


class SearchMixin(StorePart):
    """``search_messages``: full-text search over the workspace's stored messages."""

    async def search_messages(self, query: str, limit: int = 10) -> Found:
        """The messages that match ``query`` (FTS5 syntax, else plain words), best first."""
        query = query.strip()
        if not query:
            raise SearchQueryError("nothing to search for: the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise SearchQueryError(f"the query is over {MAX_QUERY_CHARS} characters")
        limit = max(1, min(int(limit), MAX_LIMIT))
        notice = ""
        try:
            rows = await self._all(_SEARCH, (query, limit))
        except sqlite3.OperationalError as e:
            if not _is_query_error(e):
                raise
            words = as_words(query)
            if not words:
                raise SearchQueryError(
                    f"{query!r} is not a search: it has no words ({e}). Search for words, "
                    '"a phrase", word OR word, or a prefix*'
                ) from None
            notice = f"not valid search syntax ({e}); searched for the words {words}"
            rows = await self._all(_SEARCH, (words, limit))
        return Found(query, [_hit(r) for r in rows], notice)


def _hit(row: dict[str, Any]) -> Hit:
    text, spans = unmark(str(row["snip"] or ""))
    return _one_line(row, text, spans)


def _one_line(row: dict[str, Any], text: str, spans: list[tuple[int, int]]) -> Hit:
    """The hit with its snippet's runs of white space made one space (spans moved along)."""
    out: list[str] = []
    moved: list[int] = []  # new offset of each old offset
    space = False
    for ch in text:
        moved.append(len(out))
        if ch.isspace():
            if not space and out:
                out.append(" ")
            space = True
        else:
            out.append(ch)
            space = False
    moved.append(len(out))
    snippet = "".join(out).rstrip()
    new_spans = [(moved[a], min(moved[b], len(snippet))) for a, b in spans]
    return Hit(
        session_id=row["session_id"],
        title=row["title"] or "",
        kind=row["kind"] or "chat",
        message_id=row["message_id"],
        seq=int(row["seq"]),
        role=row["role"],
        created_at=float(row["created_at"]),
        snippet=snippet,
        spans=[s for s in new_spans if s[0] < s[1]],
        facet=row["facet"],
        tool=row["name"],
        off_branch=bool(row["off_branch"]),
    )
