"""Who a request is: login limits (django-axes counts failed logins on every path that checks a password —
the login page, the admin's, the API token endpoint — and a locked-out username and address are refused
for a cool-off), and the API's token authentication."""

from __future__ import annotations

import functools
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.contrib.auth import backends as auth_backends
from django.contrib.auth import get_user_model
from django.db import connection
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication as drf_authentication
from rest_framework.exceptions import AuthenticationFailed


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


class ModelBackend(auth_backends.ModelBackend):
    """Django's ModelBackend (passwords, permissions), whose `get_user` (the logged-in user of a session, on
    every request of a browser) reads the user by one prepared statement on PostgreSQL, as the token's
    user is read: the same user, or None for an unknown or inactive one."""

    def get_user(self, user_id: Any) -> Any:
        if connection.vendor != "postgresql":
            return super().get_user(user_id)
        from judgements.prepared import one_row

        model, fields, select = _user_select()
        pk = model._meta.pk
        row = one_row(f"{select} WHERE u.{pk.column} = %(id)s", {"id": pk.to_python(user_id)}, sized=False)
        if row is None:
            return None
        user = model.from_db(connection.alias, fields, row)
        return user if self.user_can_authenticate(user) else None


class TokenAuthentication(drf_authentication.TokenAuthentication):
    """The API's token rule (`Authorization: Token <key>`: the active user of that key, else 401), as
    DRF's class states it; on PostgreSQL the token's user is read by one prepared statement (the ORM took
    longer to build its query than PostgreSQL to run it, on every API request). The same answers: the
    user, or AuthenticationFailed with DRF's messages."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if connection.vendor != "postgresql":
            return super().authenticate_credentials(key)
        from rest_framework.authtoken.models import Token

        from judgements.prepared import one_row

        model, fields, select = _user_select()
        tokens = Token._meta.db_table
        sql = f"{select} JOIN {tokens} t ON t.user_id = u.{model._meta.pk.column} WHERE t.key = %(key)s"
        row = one_row(sql, {"key": key}, sized=False)
        if row is None:
            raise AuthenticationFailed(_("Invalid token."))
        user = model.from_db(connection.alias, fields, row)
        if not user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        return user, None


@functools.cache
def _user_select() -> tuple[Any, list[str], str]:
    """The user model, its field names and `SELECT <its columns> FROM <its table> u`."""
    model = get_user_model()
    columns = model._meta.concrete_fields
    select = f"SELECT {', '.join(f'u.{column.column}' for column in columns)} FROM {model._meta.db_table} u"
    return model, [column.attname for column in columns], select
