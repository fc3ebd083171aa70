"""Login limits: django-axes counts failed logins on every path that checks a password (the login page,
the admin's, the API token endpoint), and a locked-out username and address are refused for a cool-off."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


class LoginLimitBackend(AxesStandaloneBackend):
    """django-axes' check, first in AUTHENTICATION_BACKENDS: refuses a locked-out login (raising the
    PermissionDenied that stops `authenticate`) and otherwise leaves the password to ModelBackend.

    Every login the app offers passes the request. A call without one (Django's test client `login()`, a
    script) has no address to count and is not checked, where axes' own backend would raise a ValueError.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
