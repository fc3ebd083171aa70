"""Evaluation pages (managers)."""

from __future__ import annotations

from django.urls import path

from evaluation import views

app_name = "evaluation"
urlpatterns = [
    path("<slug:name>/", views.report, name="report"),
    path("<slug:name>/pool-bias/", views.pool_bias, name="pool-bias"),
    path("<slug:name>/two-stage/", views.two_stage, name="two-stage"),
    path("<slug:name>/noise-floor/", views.noise_floor, name="noise-floor"),
]
