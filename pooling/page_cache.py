"""Cache keys of computed manager pages (reports, agreement), shared by the apps that cache them."""

from __future__ import annotations

import hashlib


def cache_key(prefix: str, *parts: object) -> str:
    """A short cache key for a computed page: the prefix and a hash of what it depends on."""
    return f"{prefix}:{hashlib.sha256(repr(parts).encode()).hexdigest()[:32]}"
