"""Manager pages of the judging app: rater statistics, gold items, the adjudication queue, agreement."""

from __future__ import annotations

from django.urls import path  # noqa: F401

app_name = "judging-manage"
urlpatterns: list = []
