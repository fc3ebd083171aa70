"""Web pages of this app."""

from __future__ import annotations

from django.urls import path  # noqa: F401

urlpatterns: list = []
