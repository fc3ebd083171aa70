"""The Redis cache backend of the settings, degrading when Redis is unreachable.

The cache only ever holds what can be rebuilt: live progress of a job running inside a transaction (the
job row has the last committed value), and reports and agreement summaries (recomputed on a miss). So when
Redis is down a read is a miss and a write is dropped, with a warning in the log: an import whose progress
cannot be published still finishes, and `/api/jobs/`, agreement and evaluation pages still answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)

T = TypeVar("T")


def _degrade(operation: str, call: Callable[[], T], fallback: T) -> T:
    try:
        return call()
    except UNREACHABLE as exc:
        logger.warning("cache unreachable, %s skipped: %s", operation, exc)
        return fallback


class _OneClientPerPool(RedisCacheClient):
    """Django's client of Redis, keeping one `redis.Redis` per connection pool. Django's makes a new one for
    every cache call, and redis-py's constructor fills in its table of response callbacks each time: about
    0.2 ms, twice in every API request (its throttle reads and writes the caller's history), where the call
    to Redis itself takes a tenth of that. A `redis.Redis` is safe to share between threads (each command
    takes a connection from the pool) and after a fork (the pool starts afresh in a new process)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        django: Any = self  # Django's RedisCacheClient, whose private helpers django-stubs does not declare
        index = django._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = django._client(connection_pool=django._get_connection_pool(write))
        return client


class RedisCache(DjangoRedisCache):
    """Django's Redis cache; a connection failure is a miss (reads) or a no-op (writes), never an error.

    `incr`/`decr` still raise: a counter that silently stays at zero would be a wrong answer, not a miss.
    """

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _OneClientPerPool

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> bool:
        return _degrade("add", lambda: super(RedisCache, self).add(key, value, timeout, version), False)

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        return _degrade("get", lambda: super(RedisCache, self).get(key, default, version), default)

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> None:
        _degrade("set", lambda: super(RedisCache, self).set(key, value, timeout, version), None)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> bool:
        return _degrade("touch", lambda: super(RedisCache, self).touch(key, timeout, version), False)

    def delete(self, key: Any, version: Any = None) -> bool:
        return _degrade("delete", lambda: super(RedisCache, self).delete(key, version), False)

    def get_many(self, keys: Any, version: Any = None) -> dict[Any, Any]:
        return _degrade("get_many", lambda: super(RedisCache, self).get_many(keys, version), {})

    def has_key(self, key: Any, version: Any = None) -> bool:
        return _degrade("has_key", lambda: super(RedisCache, self).has_key(key, version), False)

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> list[Any]:
        return _degrade(
            "set_many", lambda: super(RedisCache, self).set_many(data, timeout, version), list(data)
        )

    def delete_many(self, keys: Any, version: Any = None) -> None:
        _degrade("delete_many", lambda: super(RedisCache, self).delete_many(keys, version), None)

    def clear(self) -> None:
        """Empty this cache: with a key prefix (CACHE_KEY_PREFIX), only the keys under it, so that a
        Redis database shared with other deployments or test runs keeps theirs; without one, the whole
        database (Django's own clear)."""
        _degrade("clear", self._clear, None)

    def _clear(self) -> None:
        if not self.key_prefix:
            super().clear()
            return
        client = self._cache.get_client(write=True)
        batch: list[Any] = []
        for key in client.scan_iter(match=f"{_glob_escape(self.key_prefix)}:*", count=1000):
            batch.append(key)
            if len(batch) == 1000:
                client.delete(*batch)
                batch.clear()
        if batch:
            client.delete(*batch)


def _glob_escape(text: str) -> str:
    """`text` matched literally in a Redis MATCH pattern."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
