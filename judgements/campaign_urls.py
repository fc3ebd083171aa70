"""The manager's judging set-up pages: a pool's judging (rubric, judgements per item, raters), and the
rubrics (every rubric, one rubric, a new rubric or the next version of one)."""

from __future__ import annotations

from django.urls import path

from judgements import campaign_views as views
from judgements import rubric_views

app_name = "judging-setup"
urlpatterns = [
    path("pools/<slug:name>/judging/", views.judging_setup, name="judging"),
    path("rubrics/", rubric_views.rubric_list, name="rubrics"),
    path("rubrics/new/", rubric_views.rubric_create, name="rubric-create"),
    path("rubrics/<int:pk>/", rubric_views.rubric_detail, name="rubric"),
]
