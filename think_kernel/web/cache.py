"""A TTL + LRU cache for search and page results (pure: the clock is passed in).

    cache = ResultCache(max_entries=256, ttl=600.0)
    hit = cache.get(key)              # None, or Hit(value, age_seconds)
    cache.put(key, value)

One cache per kernel, held by :class:`~think_kernel.web.services.WebServices`, so a session's
subagents (which call the parent's tools) share it. Keys are tuples built by :func:`key`.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Hit:
    """A cached value and how old it is, in seconds."""

    value: Any
    age: float


def key(*parts: Any) -> str:
    """A stable cache key from JSON-able parts (dict order does not matter)."""
    return json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))


class ResultCache:
    """Entries expire ``ttl`` seconds after they were stored; the least recently used go first."""

    def __init__(
        self,
        max_entries: int = 256,
        ttl: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.ttl = ttl
        self.clock = clock
        self._data: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    @property
    def enabled(self) -> bool:
        """False when configured off (ttl or size 0)."""
        return self.ttl > 0 and self.max_entries > 0

    def get(self, k: str) -> Hit | None:
        """The live entry for ``k`` (now most recently used), or None."""
        if not self.enabled:
            return None
        found = self._data.get(k)
        if found is None:
            self.misses += 1
            return None
        stored, value = found
        age = self.clock() - stored
        if age >= self.ttl:
            del self._data[k]
            self.misses += 1
            return None
        self._data.move_to_end(k)
        self.hits += 1
        return Hit(value, age)

    def put(self, k: str, value: Any) -> None:
        """Store ``value``; drop expired entries, then the least recently used past the bound."""
        if not self.enabled:
            return
        now = self.clock()
        self._data[k] = (now, value)
        self._data.move_to_end(k)
        while self._data:
            oldest_key, (stored, _) = next(iter(self._data.items()))
            if len(self._data) > self.max_entries or now - stored >= self.ttl:
                del self._data[oldest_key]
            else:
                break

    def drop(self, prefix: str) -> int:
        """Remove every entry whose key starts with ``prefix``; return how many."""
        gone = [k for k in self._data if k.startswith(prefix)]
        for k in gone:
            del self._data[k]
        return len(gone)

    def clear(self) -> None:
        """Forget everything."""
        self._data.clear()
