"""The result cache (pure): TTL, LRU bound, hits, invalidation."""

from __future__ import annotations

from think_kernel.web.cache import ResultCache, key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_hit_then_expiry() -> None:
    clock = Clock()
    cache = ResultCache(max_entries=10, ttl=60, clock=clock)
    k = key("search", "web", "q", 10, None)
    assert cache.get(k) is None
    cache.put(k, "value")
    clock.now += 59
    hit = cache.get(k)
    assert hit is not None and hit.value == "value" and hit.age == 59
    clock.now += 1
    assert cache.get(k) is None and len(cache) == 0
    assert (cache.hits, cache.misses) == (1, 2)


def test_least_recently_used_goes_first() -> None:
    cache = ResultCache(max_entries=2, ttl=60, clock=Clock())
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("c", 3)
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("c") is not None
    assert len(cache) == 2


def test_keys_ignore_dict_order_and_prefix_drop() -> None:
    assert key("page", "s1", {"a": 1, "b": 2}) == key("page", "s1", {"b": 2, "a": 1})
    cache = ResultCache(ttl=60, clock=Clock())
    cache.put(key("page", "s1", "text", "http://a/"), 1)
    cache.put(key("page", "s1", "scrape", "http://a/", {}), 2)
    cache.put(key("page", "s2", "text", "http://a/"), 3)
    assert cache.drop(key("page", "s1")[:-1] + ",") == 2
    assert cache.get(key("page", "s2", "text", "http://a/")) is not None


def test_off_when_configured_off() -> None:
    for cache in (ResultCache(ttl=0), ResultCache(max_entries=0)):
        cache.put("a", 1)
        assert cache.get("a") is None and not cache.enabled
