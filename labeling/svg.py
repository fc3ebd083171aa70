"""Marking the plots' SVG safe for templates, in one place."""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe


def trusted_svg(markup: str) -> SafeString:
    """SVG from `labeling.plots`, whose every label and title is escaped there, is safe to embed."""
    return mark_safe(markup)  # noqa: S308 - labeling.plots escapes all text it draws


def cache_key(prefix: str, *parts: object) -> str:
    """A short cache key for a computed page: the prefix and a hash of what it depends on."""
    import hashlib

    return f"{prefix}:{hashlib.sha256(repr(parts).encode()).hexdigest()[:32]}"
