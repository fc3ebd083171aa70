"""Rater pages: the rater's pools, the judging page."""

from __future__ import annotations

from django.urls import path

from judgements import views

app_name = "judgements"
urlpatterns = [
    path("", views.home, name="home"),
]
