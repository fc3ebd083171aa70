"""The API's throttles (rates in REST_FRAMEWORK's DEFAULT_THROTTLE_RATES). A module of its own: DRF imports
the default throttle classes while it defines APIView, so this imports no view."""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING

from rest_framework.throttling import (
    AnonRateThrottle,
    ScopedRateThrottle,
    SimpleRateThrottle,
    UserRateThrottle,
)

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView

logger = logging.getLogger(__name__)


class _CacheSafe(SimpleRateThrottle):
    """A throttle that lets the request through when the cache (Redis in production) cannot be reached:
    the limit is a guard against abuse, and an outage of the cache must not turn every API request into
    a 500. Logins keep django-axes' lock, which lives in the database."""

    def allow_request(self, request: Request, view: APIView) -> bool:
        try:
            return super().allow_request(request, view)
        except Exception:  # the cache's connection errors (redis' own exception classes, OSError)
            logger.warning("API throttle skipped: the cache cannot be reached", exc_info=True)
            return True


class AnonThrottle(_CacheSafe, AnonRateThrottle):
    """`anon` rate, per client address, for requests without valid credentials."""


class UserThrottle(_CacheSafe, UserRateThrottle):
    """`user` rate, per account (per address for anonymous requests)."""


class LoginThrottle(_CacheSafe, ScopedRateThrottle):
    """The rate of the view's `throttle_scope` (`login` for the token endpoint), per address."""


class PasswordResetThrottle(_CacheSafe):
    """PASSWORD_RESET_RATE requests per address (`"address"`) or per email address (any other key, e.g.
    `"email:<address>"`, hashed into the cache key); used by the reset page, a Django view, with the same
    counting as the API's throttles."""

    scope = "password_reset"

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__()

    def get_rate(self) -> str | None:
        from django.conf import settings

        return settings.PASSWORD_RESET_RATE or None

    def get_cache_key(self, request: Request, view: APIView) -> str:
        if self.key == "address":
            subject = self.get_ident(request)
        else:
            subject = hashlib.sha256(self.key.encode()).hexdigest()
        return self.cache_format % {"scope": self.scope, "ident": subject}
