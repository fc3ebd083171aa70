"""The API's throttles (rates in REST_FRAMEWORK's DEFAULT_THROTTLE_RATES). A module of its own: DRF imports
the default throttle classes while it defines APIView, so this imports no view."""

from __future__ import annotations

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
