"""The managers' rubric pages (`rubric_views`): every rubric, one rubric, a new rubric or the next version
of one."""

from __future__ import annotations

from django.urls import path

from judgements import rubric_views as views

app_name = "rubrics"
urlpatterns = [
    path("", views.rubric_list, name="list"),
    path("new/", views.rubric_create, name="create"),
    path("<int:pk>/", views.rubric_detail, name="detail"),
]
