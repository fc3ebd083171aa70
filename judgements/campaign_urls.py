"""The manager's judging set-up page of a pool (rubric, judgements per item, raters); the rubrics' own
pages are `rubric_urls`."""

from __future__ import annotations

from django.urls import path

from judgements import campaign_views as views

app_name = "judging-setup"
urlpatterns = [
    path("pools/<slug:name>/judging/", views.judging_setup, name="judging"),
]
