"""Web pages of the pooling app (managers)."""

from __future__ import annotations

from django.urls import path

from pooling import views

app_name = "pooling"
urlpatterns = [
    path("", views.pool_list, name="pool-list"),
    path("<slug:name>/", views.pool_detail, name="pool-detail"),
    path("<slug:name>/build/", views.pool_build, name="pool-build"),
    path("<slug:name>/managers/", views.pool_managers, name="pool-managers"),
]
