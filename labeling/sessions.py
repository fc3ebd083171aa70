"""The session engine (SESSION_ENGINE): Django's database sessions, whose row a logged-in request (every key
press of the judging page) reads by one prepared statement on PostgreSQL: the ORM took longer to build the
query than PostgreSQL to run it. The same rows and answers (an expired or unknown key is no session);
writes stay Django's."""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends import db
from django.db import connection
from django.utils import timezone

#: What a session logged in before `labeling.auth.ModelBackend` took the place of Django's names as its
#: backend: the same backend (the same users, passwords and rules), so the change logs nobody out.
RENAMED_BACKENDS = {"django.contrib.auth.backends.ModelBackend": "labeling.auth.ModelBackend"}


class SessionStore(db.SessionStore):
    def load(self) -> dict[str, Any]:
        data: dict[str, Any] = super().load()
        backend = data.get(BACKEND_SESSION_KEY)
        if backend in RENAMED_BACKENDS:
            data[BACKEND_SESSION_KEY] = RENAMED_BACKENDS[backend]
        return data

    def _get_session_from_db(self) -> Any:
        if connection.vendor != "postgresql":
            return super()._get_session_from_db()  # type: ignore[misc]  # (not in django-stubs)
        from judgements.prepared import one_row

        key = self.session_key
        row = None
        if key is not None:
            row = one_row(_session_sql(), {"key": key, "now": timezone.now()}, sized=False)
        if key is None or row is None:
            self._session_key = None  # as Django's: an unknown key is not kept (the next save makes one)
            return None
        return self.model(session_key=key, session_data=row[0], expire_date=row[1])


@functools.cache
def _session_sql() -> str:
    table = db.SessionStore.get_model_class()._meta.db_table
    where = "session_key = %(key)s AND expire_date > %(now)s"
    return f"SELECT session_data, expire_date FROM {table} WHERE {where}"
