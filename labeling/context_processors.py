"""Template context shared by every page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from pooling.permissions import is_manager


def roles(request: HttpRequest) -> dict[str, Any]:
    return {"is_manager": is_manager(request.user), "password_reset_enabled": settings.PASSWORD_RESET_ENABLED}
