"""Evaluation pages (managers)."""

from __future__ import annotations

from django.urls import path

from evaluation import judge_views, views

app_name = "evaluation"
urlpatterns = [
    path("<slug:name>/", views.report, name="report"),
    path("<slug:name>/pool-bias/", views.pool_bias, name="pool-bias"),
    path("<slug:name>/two-stage/", views.two_stage, name="two-stage"),
    path("<slug:name>/noise-floor/", views.noise_floor, name="noise-floor"),
    path("<slug:name>/judges/", judge_views.judges, name="judges"),
    path("<slug:name>/judges/<slug:judge>/", judge_views.judge, name="judge"),
    path("<slug:name>/judges/<slug:judge>/run/", judge_views.judge_run, name="judge-run"),
]
