"""The one cache rule of computed pages: a key from what the page depends on, and a cache that may fail."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.core.cache import caches
from django.test import override_settings

from pooling.page_cache import cache_key, read_through

DOWN = {"default": {"BACKEND": "labeling.cache.RedisCache", "LOCATION": "redis://127.0.0.1:9/0"}}
LOCAL = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "page-cache-test"}
}


def test_it_keys_a_page_by_what_it_depends_on():
    assert cache_key("p", 1, "a") == cache_key("p", 1, "a")
    assert cache_key("p", 1, "a") != cache_key("p", 2, "a")
    assert cache_key("p", 1).startswith("p:")


def test_it_computes_once_then_reads_the_cache():
    calls = []
    with override_settings(CACHES=LOCAL):
        caches["default"].clear()
        for _ in range(3):
            assert read_through("k:1", lambda: calls.append(1) or {"v": 1}) == {"v": 1}
    assert len(calls) == 1


def test_it_serves_the_page_when_the_cache_is_down():
    calls = []
    with override_settings(CACHES=DOWN):
        assert read_through("k:2", lambda: calls.append(1) or {"v": 2}) == {"v": 2}
        assert read_through("k:2", lambda: calls.append(1) or {"v": 2}) == {"v": 2}
    assert len(calls) == 2


@pytest.mark.services
def test_it_clears_only_its_own_keys_in_a_shared_redis_database():
    """Two deployments (or test runs) on one Redis database, each with its key prefix: a clear of one
    empties its keys and leaves the other's."""
    from tests.conftest import require_services

    require_services()
    location = settings.CACHES["default"]["LOCATION"]
    shared = {
        "default": {"BACKEND": "labeling.cache.RedisCache", "LOCATION": location, "KEY_PREFIX": "one*[x]"},
        "other": {"BACKEND": "labeling.cache.RedisCache", "LOCATION": location, "KEY_PREFIX": "two"},
    }
    with override_settings(CACHES=shared):
        one, two = caches["default"], caches["other"]
        one.set_many({"a": 1, "b": 2})
        two.set("a", 3)
        one.clear()
        assert (one.get("a"), one.get("b"), two.get("a")) == (None, None, 3)
        two.clear()
        assert two.get("a") is None


@pytest.mark.services
def test_it_makes_one_redis_client_for_all_its_calls_and_threads():
    """Django's own client made a `redis.Redis` for every call, whose constructor cost about 0.2 ms, twice in
    every API request (the throttle's read and write); one per connection pool serves every call."""
    from tests.conftest import require_services

    require_services()
    location = settings.CACHES["default"]["LOCATION"]
    one = {"default": {"BACKEND": "labeling.cache.RedisCache", "LOCATION": location, "KEY_PREFIX": "clients"}}
    with override_settings(CACHES=one):
        cache = caches["default"]
        cache.set("a", 1)
        client = cache._cache.get_client(write=True)
        assert cache._cache.get_client() is client  # one server: reads go to it too
        seen: list[int] = []

        def use(i: int) -> None:
            cache.set(f"t{i}", i)
            seen.append(cache.get(f"t{i}"))

        threads = [threading.Thread(target=use, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(seen) == list(range(8)) and cache.get("a") == 1
        assert cache._cache.get_client(write=True) is client
        cache.clear()
