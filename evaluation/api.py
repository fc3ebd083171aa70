"""REST API of this app."""

from __future__ import annotations

from typing import Any


def register(router: Any) -> None:
    """Register this app's viewsets on the project router."""
