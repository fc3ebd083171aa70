"""Rater pages: the rater's pools, the judging page and its keyboard endpoints."""

from __future__ import annotations

from django.urls import path

from judgements import views

app_name = "judgements"
urlpatterns = [
    path("", views.home, name="home"),
    path("judge/<slug:pool>/", views.judge, name="judge"),
    path("judge/<slug:pool>/submit/", views.submit, name="submit"),
    path("judge/<slug:pool>/skip/", views.skip, name="skip"),
    path("judge/<slug:pool>/progress/", views.progress_part, name="progress"),
    path("judge/<slug:pool>/revise/", views.revise, name="revise"),
]
