"""Computed manager pages (reports, agreement) in the shared cache: one key rule and one read-through.

A page's key is its prefix and a hash of what it depends on (a freshness stamp the caller computes from
the database), so a write never has to invalidate anything: the next read simply finds another key.
The cache is an accelerator, never a dependency: the settings' backend (`labeling.cache.RedisCache`)
turns an unreachable Redis into a miss, so the page is computed and served.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

from django.core.cache import cache

T = TypeVar("T")

#: How long a computed page is kept; its key changes with its data, so this only bounds memory.
TTL_SECONDS = 3600


def cache_key(prefix: str, *parts: object) -> str:
    """A short cache key for a computed page: the prefix and a hash of what it depends on."""
    return f"{prefix}:{hashlib.sha256(repr(parts).encode()).hexdigest()[:32]}"


def read_through(key: str, compute: Callable[[], T]) -> T:
    """The cached value under `key`, computed and stored when absent."""
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, TTL_SECONDS)
    return value
