"""Computed manager pages (reports, agreement) in the shared cache: one key rule and one read-through.

A page's key is its prefix and a hash of what it depends on (a freshness stamp the caller computes from
the database), so a write never has to invalidate anything: the next read simply finds another key.
The cache is an accelerator, never a dependency: when it is down the page is computed and served.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import TypeVar

from django.core.cache import cache

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long a computed page is kept; its key changes with its data, so this only bounds memory.
TTL_SECONDS = 3600


def cache_key(prefix: str, *parts: object) -> str:
    """A short cache key for a computed page: the prefix and a hash of what it depends on."""
    return f"{prefix}:{hashlib.sha256(repr(parts).encode()).hexdigest()[:32]}"


def read_through(key: str, compute: Callable[[], T]) -> T:
    """The cached value under `key`, computed and stored when absent; computed alone if the cache fails."""
    try:
        value = cache.get(key)
    except Exception:  # noqa: BLE001 - any cache backend error: the page is still served
        log.warning("cache unavailable; computing %s", key.split(":", 1)[0], exc_info=True)
        return compute()
    if value is None:
        value = compute()
        try:
            cache.set(key, value, TTL_SECONDS)
        except Exception:  # noqa: BLE001
            log.warning("cache unavailable; %s not stored", key.split(":", 1)[0], exc_info=True)
    return value
